"""How `mirror import-dump URL` shows a download of some 5 GB (:meth:`mirror.progress.Reporter.transfer`):
a bar in bytes with its rate and time left on a terminal, a dated line a minute under cron."""

from __future__ import annotations

import io
import re

from mirror import progress
from mirror.progress import Reporter


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_bar_of_bytes_with_rate_and_time_left():
    screen = Terminal()
    with Reporter(stream=screen, out=screen) as reporter:
        for done in (100_000, 1_300_000_000, 2_500_000_000):  # resumed at 100 KB: the rate counts from there
            reporter.transfer("board.pgdump", done, 5_100_000_000)
    shown = screen.getvalue()
    assert "board.pgdump" in shown and "2.5/5.1 GB" in shown  # size done of the whole, not 2500000000/5100000000
    assert re.search(r"[0-9.]+ [kMGTP]B/s", shown) and re.search(r"\d:\d\d:\d\d", shown)  # rate, time left


def test_under_cron_a_dated_line_with_size_rate_and_time_left(monkeypatch):
    monkeypatch.setattr(progress, "TRANSFER_LINE_EVERY", 0.0)
    log = io.StringIO()
    reporter = Reporter(interactive=False, out=log)
    with reporter:
        reporter.transfer("board.pgdump", 1_000_000_000, 5_100_000_000)  # resumed there: the rate counts from it
        reporter.transfer("board.pgdump", 2_550_000_000, 5_100_000_000)
    line = log.getvalue().splitlines()[-1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ board\.pgdump: 2\.5 GB of 5\.1 GB \(50%\), "
                        r"[0-9.]+ GB/s, about [0-9.]+ (s|min) left", line), line


def test_under_cron_no_more_than_a_line_a_minute_and_none_when_quiet():
    log = io.StringIO()
    for quiet in (False, True):
        with Reporter(interactive=False, out=log, quiet=quiet) as reporter:
            for done in range(0, 1_000_000, 1000):
                reporter.transfer("board.pgdump", done, 1_000_000)
    assert log.getvalue() == ""
