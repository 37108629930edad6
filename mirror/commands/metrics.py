"""The last run's figures in Prometheus' text format, for node_exporter's textfile collector.

The file (``report.metrics_file``) is written atomically (prometheus-client's
``write_to_textfile`` writes a temporary file and renames it), so the collector never reads half
of one. Each run series carries its command: a ``verify`` keeps the figures the last ``sync`` and
``download`` wrote (read back from the file) and replaces only its own.

The path is the user's, and may name something else than a file. A FIFO, a device (``/dev/zero``
through a link), a folder or a file far larger than a metrics file ever is (some other file, named
by mistake) is refused unread and left as it is: the run says so in one warning line and goes on.
The config check refuses a path that is not a regular file already (exit 2).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile
from prometheus_client.parser import text_string_to_metric_families

from ..dates import parse_utc
from ..files import NotASmallFile, read_small_file
from .outcome import RunOutcome

RUN_PREFIX = "mirror_run_"

# name: (help, extra labels); every run series is labelled by command as well.
RUN_SERIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "mirror_run_start_timestamp_seconds": ("When the last run of this command started (Unix time).", ()),
    "mirror_run_end_timestamp_seconds": ("When the last run of this command ended (Unix time).", ()),
    "mirror_run_duration_seconds": ("How long the last run of this command took.", ()),
    "mirror_run_exit_code": ("The exit code of the last run of this command (0: done; see docs/use.md).", ()),
    "mirror_run_records_new": ("Records the last run stored for the first time, per resource.", ("resource",)),
    "mirror_run_records_changed": ("Records the last run found changed on the site, per resource.", ("resource",)),
    "mirror_run_requests": ("Requests the last run sent, retries included (API and file host).", ()),
    "mirror_run_retries": (("Requests of the last run that failed in a way that may pass (429, 5xx, timeouts, "
                            "broken connections), each retried unless the run gave up."), ()),
    "mirror_run_rate_limited": ("Of those, the 429 Too Many Requests answers.", ()),
    "mirror_run_downloaded_files": ("Files the last run downloaded.", ()),
    "mirror_run_downloaded_bytes": ("Bytes the last run downloaded.", ()),
    "mirror_run_damaged_files": ("Files the last verify found missing or corrupt.", ()),
    "mirror_run_exported_versions": ("Versions (rows) the last run exported to Delta Lake.", ()),
    "mirror_run_exported_bytes": ("Bytes of data files the last run's export added.", ()),
}
FILES = "mirror_files"
# A metrics file is a few KB: one larger than this is not one, and is neither read nor replaced.
MAX_METRICS_BYTES = 4 * 2**20


def write_metrics(path: str | Path, outcome: RunOutcome) -> None:
    """Write ``outcome``'s figures to ``path``, keeping the other commands' from the file already there.

    OSError when ``path`` cannot be written, or names something other than a metrics file (then
    left as it is)."""
    kept = _kept_samples(_text_of(path), outcome.command)
    registry = CollectorRegistry()
    gauges = {name: Gauge(name, text, ("command", *labels), registry=registry)
              for name, (text, labels) in RUN_SERIES.items()}
    for name, labels, value in kept:
        gauges[name].labels(**labels).set(value)
    for name, labels, value in run_samples(outcome):
        gauges[name].labels(command=outcome.command, **labels).set(value)
    if outcome.files is not None:
        files = Gauge(FILES, "Files by state after the last run: pending (to download), kept, failed.", ("state",),
                      registry=registry)
        for state, count in outcome.files.items():
            files.labels(state=state).set(count)
    if outcome.checks is not None:
        Gauge("mirror_files_never_verified", "Kept files mirror verify has not re-hashed since they were downloaded.",
              registry=registry).set(outcome.checks["never_verified"])
        oldest = parse_utc(outcome.checks["oldest_check"] or "")
        if oldest is not None:
            Gauge("mirror_files_oldest_check_timestamp_seconds",
                  "When the kept file checked longest ago was last checked (re-hashed, or downloaded; Unix time).",
                  registry=registry).set(oldest.timestamp())
    write_to_textfile(str(path), registry)


def run_samples(outcome: RunOutcome) -> list[tuple[str, dict[str, str], float]]:
    """(series, labels besides the command, value) for each figure of ``outcome``."""
    samples: list[tuple[str, dict[str, str], float]] = [
        ("mirror_run_start_timestamp_seconds", {}, outcome.started),
        ("mirror_run_end_timestamp_seconds", {}, outcome.finished or outcome.started),
        ("mirror_run_duration_seconds", {}, outcome.duration or 0.0),
        ("mirror_run_exit_code", {}, outcome.exit_code or 0),
        ("mirror_run_requests", {}, outcome.requests),
        ("mirror_run_retries", {}, outcome.retries),
        ("mirror_run_rate_limited", {}, outcome.rate_limited),
    ]
    for resource, figures in outcome.resources().items():
        samples.append(("mirror_run_records_new", {"resource": resource}, figures["new"]))
        samples.append(("mirror_run_records_changed", {"resource": resource}, figures["updated"]))
    downloads = outcome.downloads()
    if downloads is not None:
        samples.append(("mirror_run_downloaded_files", {}, downloads["downloaded"]))
        samples.append(("mirror_run_downloaded_bytes", {}, downloads["bytes"]))
    exported = outcome.export()
    if exported is not None:
        samples.append(("mirror_run_exported_versions", {}, exported["versions"]))
        samples.append(("mirror_run_exported_bytes", {}, exported["bytes"]))
    verify = outcome.verify()
    if verify is not None:
        samples.append(("mirror_run_damaged_files", {}, len(verify["missing"]) + len(verify["corrupt"])))
    return samples


def _text_of(path: str | Path) -> str | None:
    """The metrics file there now; None if there is none or it cannot be read (it is replaced).
    NotASmallFile if the path names something that is not one (it is left alone)."""
    try:
        return read_small_file(path, MAX_METRICS_BYTES)
    except NotASmallFile:
        raise
    except OSError:
        return None


def _kept_samples(text: str | None, command: str) -> list[tuple[str, dict[str, str], float]]:
    """The other commands' run samples in the metrics file's ``text`` (none if there is none or it
    cannot be parsed)."""
    try:
        families = list(text_string_to_metric_families(text or ""))
    except ValueError:
        return []
    return [(sample.name, sample.labels, sample.value) for family in families for sample in family.samples
            if sample.name in RUN_SERIES and sample.labels.get("command") != command]


# name: help; the follower's own file, beside the runs' (:func:`follow_metrics_path`).
FOLLOW_SERIES: dict[str, str] = {
    "mirror_follow_rejected": "Firehose frames the follower kept aside in rejects since it started.",
    "mirror_follow_connections": "Connections to the firehose the follower made since it started.",
    "mirror_follow_reconnects": "Times the follower had to connect again since it started.",
    "mirror_follow_catch_ups": "Catch-up walks (one a connection) since it started.",
    "mirror_follow_catch_up_requests": "Requests the catch-up walks sent since it started.",
    "mirror_follow_fetched": "Records events named that the mirror lacked, fetched one by one since it started.",
    "mirror_follow_connected": "1 while the follower is connected to the firehose, else 0.",
}


def follow_metrics_path(metrics_file: str | Path) -> Path:
    """Where the follower writes its figures: beside ``report.metrics_file``, ``-follow`` added to
    its name (``mirror.prom`` -> ``mirror-follow.prom``), so the two processes never rewrite one
    file at once; node_exporter's textfile collector reads both."""
    path = Path(metrics_file)
    return path.with_name(f"{path.stem}-follow{path.suffix}")


def write_follow_metrics(path: str | Path, report: dict[str, Any]) -> None:
    """Write a follower's report (``FollowReport.to_json()``) to ``path``, atomically."""
    registry = CollectorRegistry()
    events = Gauge("mirror_follow_events", "Firehose events stored since the follower started, by event.",
                   ("event",), registry=registry)
    for event, count in report["events"].items():
        events.labels(event=event).set(count)
    for name, text in FOLLOW_SERIES.items():
        Gauge(name, text, registry=registry).set(float(report[name.removeprefix("mirror_follow_")]))
    if report["lag_seconds"] is not None:
        Gauge("mirror_follow_lag_seconds", "The last event's arrival less its record's updated_at (the site's clock).",
              registry=registry).set(report["lag_seconds"])
    sure = parse_utc(report["sure_until"] or "")
    if sure is not None:
        Gauge("mirror_follow_sure_until_timestamp_seconds",
              "Every change the site made before this moment is in the mirror (Unix time).",
              registry=registry).set(sure.timestamp())
    Gauge("mirror_follow_written_timestamp_seconds", "When the follower wrote this file (Unix time).",
          registry=registry).set(time.time())
    write_to_textfile(str(path), registry)
