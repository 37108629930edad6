"""What the benchmarks share: a local site (in a thread or its own process), a config pointing at
it, a sync run in process or as `mirror sync`, peak memory from /proc, and a plain-text table.

Kept in one place so every benchmark measures the same way; each bench script keeps only what
it measures.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from mirror.commands import runs
from mirror.config import Config, make_config
from mirror.progress import Reporter
from mirror.store import open_database
from mirror.sync.runner import ORDER

# Pacing far above what the local site can answer: the site's speed and the client's are measured.
# Benches measure the mirror's own cost: the site's search limit is lifted unless one sets it (cadence.py).
FAST = {"requests_per_second": 1000, "backoff": 0.05, "max_retries": 8, "give_up_after": 12, "timeout": 30,
        "searches_per_10s": 1_000_000}
ALL = ORDER
PAGE = 50


def minimum_requests(images: int) -> int:
    """ceil(n / 50) + 1: the fewest requests that can fetch ``images`` records 50 at a time and
    learn that nothing follows."""
    return math.ceil(images / PAGE) + 1


def mirror_config(url: str, filter_id: int | None, work: Path, *, polite: dict | None = None,
                  resources: Sequence[str] = ("images",), **sections: dict) -> Config:
    """A config that mirrors ``resources`` (whole scopes) of the site at ``url`` into ``work``."""
    values: dict[str, dict[str, Any]] = {
        "site": {"base_url": url, "filter_id": filter_id, "user_agent": "bench"},
        "polite": {**FAST, **(polite or {})},
        "store": {"database": str(work / "mirror.db"), "files": str(work / "files")},
    }
    for name in resources:
        values[name] = {"enabled": True, **({"scope": "all"} if name in ("comments", "galleries") else {})}
    for name, options in sections.items():
        values[name] = {**values.get(name, {}), **options}
    return make_config(values)


def write_toml(config: Config, path: Path) -> Path:
    """``config`` as a TOML file, for `mirror sync` in a subprocess."""
    path.write_text(config.to_toml())
    return path


def sync(config: Config, names: Sequence[str] = ("images",)) -> tuple[list, float, float]:
    """Sync ``names`` in this process: (reports, wall seconds, CPU seconds of this process)."""
    db = open_database(config.database)
    wall, cpu = time.perf_counter(), time.process_time()
    quiet = Reporter(out=io.StringIO(), interactive=False)  # the summary lines would break up the tables
    reports = asyncio.run(runs.sync(config, db, list(names), quiet))
    return reports, time.perf_counter() - wall, time.process_time() - cpu


@dataclass(frozen=True)
class Logged:
    """One request the site saw (its clock is the site process's monotonic clock)."""

    time: float
    path: str
    query: str
    status: int


class SiteProcess:
    """`mirror site` in its own process: its board and its CPU stay out of the measured process.
    The request log is read through the site's `/_control` API."""

    def __init__(self, images: int, seed: int = 1, faults: str = "") -> None:
        self.images, self.seed, self.faults = images, seed, faults
        self.url = ""
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> SiteProcess:
        args = [mirror_executable(), "site", "--images", str(self.images), "--seed", str(self.seed), "--port", "0"]
        if self.faults:
            args += ["--faults", self.faults]
        self._process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        said = []  # "Generating a board ...", then the line with the site's address
        while self._process.stdout and (line := self._process.stdout.readline()):
            said.append(line)
            if " at http://" in line:
                self.url = line.rsplit(" at ", 1)[1].strip()
                return self
        self.__exit__(None, None, None)
        raise RuntimeError(f"`mirror site` did not start: {''.join(said)!r}")

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=30)
            self._process = None

    @property
    def everything_filter_id(self) -> int | None:
        body = httpx.get(f"{self.url}/api/v1/json/filters/system", timeout=600).json()
        return next((f["id"] for f in body["filters"] if f["name"] == "Everything"), None)

    def requests(self) -> list[Logged]:
        body = httpx.get(f"{self.url}/_control/requests", timeout=60).json()
        return [Logged(r["time"], r["path"], r["query"], r["status"]) for r in body["requests"]]

    def clear_requests(self) -> None:
        httpx.post(f"{self.url}/_control/requests/clear", timeout=60)

    def set_faults(self, spec: str) -> None:
        httpx.post(f"{self.url}/_control/faults", json={"spec": spec}, timeout=60)

    def warm(self) -> None:
        """Ask once, so the site publishes its board before anything is timed."""
        httpx.get(f"{self.url}/api/v1/json/search/images", params={"q": "*", "per_page": 1}, timeout=3600)


class ServerProcess:
    """A `mirror` server command (``serve``, ``browse``) in a subprocess on a free loopback port,
    its output drained once it says it listens."""

    def __init__(self, args: Sequence[str], work: Path, *, ready: str, path: str = "") -> None:
        port = free_port()
        self.process = subprocess.Popen([sys.executable, "-m", "mirror.cli", *args, "--port", str(port)], cwd=work,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        while ready not in (line := self.process.stdout.readline()):
            if not line:
                raise SystemExit(f"mirror {' '.join(args)} ended before it listened")
        threading.Thread(target=self.process.stdout.read, daemon=True).start()  # the access log
        self.url = f"http://127.0.0.1:{port}{path}"

    def memory(self) -> dict[str, int]:
        """VmHWM (peak resident), VmRSS, RssAnon and RssFile of the server, in KiB."""
        fields = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                fields[name] = int(value.split()[0])
        return fields

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def serve_process(db: Path, work: Path) -> ServerProcess:
    """``mirror serve --db DB``; its ``url`` is the API's root."""
    return ServerProcess(["serve", "--db", str(db)], work, ready="Serving the mirror", path="/api/v1/json")


def browse_process(config: Path, work: Path) -> ServerProcess:
    """``mirror -c CONFIG browse``; its ``url`` is Datasette's root, without the final slash."""
    return ServerProcess(["-c", str(config), "browse"], work, ready="Browsing the mirror")


# Bump when the generated board changes, so a cached board of an older shape is not reused.
BOARD_VERSION = 2


def board_path(work: Path, images: int, seed: int) -> Path:
    return work / f"board-{images}-seed{seed}-v{BOARD_VERSION}.db"


def cached_board(work: Path, images: int, seed: int) -> tuple[Path, float | None]:
    """A generated board of ``images`` images in ``work``, made once (a million images take some
    25 minutes here): (its database, seconds spent generating it now, or None when it was cached)."""
    from mirror.localsite.board.generate import BoardSizes, generate_board

    path = board_path(work, images, seed)
    if path.exists():
        open_database(path).close()  # brings a cached board up to this version's schema
        return path, None
    work.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    for leftover in work.glob(partial.name + "*"):
        leftover.unlink()

    def progress(report) -> None:  # noqa: ANN001
        done = report.counts["images"]
        if done % 100_000 == 0 or done == images:
            print(f"  generated {done:,} images ({time.perf_counter() - started:.0f} s)", flush=True)

    started = time.perf_counter()
    report = generate_board(partial, images, seed=seed, progress=progress, sizes=BoardSizes(
        images, comments_per_image=0.5, images_per_topic=200, images_per_gallery=100))
    print(f"generation: {report.describe()}")
    partial.rename(path)
    for suffix in ("-wal", "-shm"):
        Path(str(partial) + suffix).unlink(missing_ok=True)
    return path, report.seconds


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def logged(site: Any) -> list[Logged]:
    """The request log of a :class:`SiteServer` (thread) or a :class:`SiteProcess`, one shape."""
    if isinstance(site, SiteProcess):
        return site.requests()
    return [Logged(r.time, r.path, r.query, r.status) for r in site.requests]


def mirror_executable() -> str:
    """The `mirror` command of the running venv (benchmarks depend on nothing outside it)."""
    return str(Path(sys.executable).with_name("mirror"))


# Runs the CLI, then prints on stderr its peak resident memory (kB), its CPU seconds, and the peak of each process it started.
MEASURED_CLI = """
import os, sys, threading, time
from mirror.cli import cli

peaks = {}  # each child process's VmHWM (kB), read every half second while it runs

def hwm(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            return int(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
    except (OSError, StopIteration, ValueError):
        return None

def watch():
    while True:
        try:
            children = open(f"/proc/self/task/{os.getpid()}/children").read().split()
        except OSError:
            children = []
        for pid in children:
            peak = hwm(pid)
            if peak is not None:
                peaks[pid] = max(peaks.get(pid, 0), peak)
        time.sleep(0.5)

threading.Thread(target=watch, daemon=True).start()
try:
    cli(sys.argv[1:], standalone_mode=False)
finally:
    print(f"BENCH {hwm('self')} {time.process_time()} {','.join(map(str, peaks.values())) or '-'}", file=sys.stderr)
"""


@dataclass(frozen=True)
class Measured:
    """A CLI run's exit code, peak resident memory (VmHWM, MB) of its own process and of each
    process it started, CPU seconds (its processes' all, once ended) and wall seconds."""

    returncode: int
    peak_mb: float
    cpu: float
    wall: float
    stderr: str
    stdout: str = ""
    child_peaks_mb: tuple[float, ...] = ()


def run_cli_measured(args: Sequence[str]) -> Measured:
    """`mirror ARGS` in a subprocess, with its VmHWM read from /proc as it exits."""
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-c", MEASURED_CLI, *args], capture_output=True, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    line = next((l for l in reversed(result.stderr.splitlines()) if l.startswith("BENCH ")), "BENCH 0 0 -")
    _, peak, _own_cpu, children = line.split()
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime  # its processes' too
    return Measured(result.returncode, int(peak) / 1024, cpu, wall, result.stderr, result.stdout,
                    tuple(int(kb) / 1024 for kb in children.split(",")) if children != "-" else ())


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
    """A plain-text table: numbers right-aligned, text left-aligned, floats to 3 significant places."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h)) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], (int, float)) for row in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()

    if title:
        print(f"\n{title}")
    print(line([str(h) for h in headers]))
    print(line(["-" * w for w in widths]))
    for row in cells:
        print(line(row))
    sys.stdout.flush()


def _cell(value: Any) -> str:
    if isinstance(value, float):
        if value == 0 or abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def gallery_dl() -> Path | str:
    """The venv's gallery-dl (a test extra; pip-installed into the venv when missing), or why not."""
    executable = Path(sys.executable).with_name("gallery-dl")
    if not executable.exists():
        install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "gallery-dl"], capture_output=True,
                                 text=True)
        if install.returncode != 0 or not executable.exists():
            return f"gallery-dl could not be installed: {install.stderr.strip()[-300:]}"
    return executable


def gallery_dl_config(url: str, filter_id: int | None, target: Path, path: Path, *, sleep: float = 0.0,
                      **philomena: Any) -> Path:
    """A gallery-dl config whose Philomena extractor knows the site at ``url`` as a custom
    instance ("local"), saving under ``target`` and sleeping ``sleep`` s between API requests
    (its default for Philomena is 0.5-1.5 s)."""
    host = url.split("//", 1)[1]
    config = {"extractor": {
        "base-directory": str(target),
        "sleep-request": sleep,
        "philomena": {"local": {"root": url, "pattern": host.replace(".", r"\."), "filter_id": str(filter_id)},
                      **philomena},
    }}
    path.write_text(json.dumps(config))
    return path
