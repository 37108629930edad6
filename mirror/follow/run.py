"""``mirror follow``: the board live from the site's firehose, with nothing missed between connections.

The firehose has no replay: whatever happens while the follower is away is never sent. So the
follower keeps one moment durably, ``sure_until``, in its cursor (``sync_state``, name
``follow``), saved in the transaction of each event it stores: every change the site made before
it is in the mirror. On every connect it joins the channel first, then walks the images that
changed since (``updated_at.gte:`` ``sure_until`` less the overlap) and the ids above the highest
it holds, through the images crawler's keyset query (and the comments and posts created or edited
since, as their crawlers' refreshes walk them), at the configured pace, while the events
that arrive meanwhile are stored as they come. When the walk ends, the join's moment is sure, and
each event then moves ``sure_until`` to its arrival. A frame kept aside (malformed, of an unknown
shape) may have named a change: ``sure_until`` stays where it was until a catch-up walks over it,
which follows at once, the connection kept (at most one a minute: ``repair_every``).

A lost connection (closed, refused for a while, a heartbeat unanswered) is tried again after a
pause that doubles from :attr:`FollowOptions.backoff_min` up to :attr:`~FollowOptions.backoff_max`,
jittered (full jitter: a random part of the pause), and is followed by a catch-up like the first.
Only a refusal at the very first connection stops the follower (:class:`~.phoenix.FirehoseRefused`):
the site does not allow it, and saying so beats retrying for ever.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sqlite_utils import Database

from ..api import ApiError, NotFound, PhilomenaClient
from ..dates import parse_utc, utc_text
from ..store import ImageWriter
from ..store.state import Run, load_cursor, save_cursor, start_run
from ..sync.clock import since
from ..sync.images import STATE_NAME as IMAGES_STATE, walk_query
from ..sync.newest_first import newest_first
from ..sync.paging import PER_PAGE, ProgressGuard, last_search_page
from ..words import counted
from .apply import Applier, FollowScope, not_older, sorted_out
from .phoenix import HEARTBEAT, Channel, ChannelLost, Event, FirehoseRefused, Malformed, open_channel, socket_url

__all__ = ["STATE_NAME", "FollowOptions", "FollowReport", "follow"]

STATE_NAME = "follow"


@dataclass(frozen=True)
class FollowOptions:
    """How to follow: what is stored, the catch-up's query and overlap, heartbeats and back-off."""

    query: str = "*"
    scope: FollowScope = field(default_factory=FollowScope)
    overlap: int = 900  # seconds of updated_at read again by a catch-up: clock skew, indexing delays
    heartbeat: float = HEARTBEAT
    backoff_min: float = 1.0
    backoff_max: float = 300.0
    connect_timeout: float = 30.0
    repair_every: float = 60.0  # the least seconds between catch-ups after frames kept aside
    user_agent: str | None = None


@dataclass
class FollowReport:
    """What one ``mirror follow`` did, for its summary, ``--json`` and the cursor."""

    started_at: str = field(default_factory=utc_text)
    events: Counter = field(default_factory=Counter)  # applied, by event name
    rejected: int = 0
    connections: int = 0
    reconnects: int = 0
    catch_ups: int = 0
    catch_up_requests: int = 0
    catch_up_records: int = 0
    fetched: int = 0  # records an event named that the mirror lacked, asked for one by one
    lag_seconds: float | None = None  # the last event's arrival less the change time its record gives
    sure_until: str | None = None
    connected: bool = False
    catching_up: bool = False
    stopped_because: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"command": "follow", "started_at": self.started_at, "events": dict(sorted(self.events.items())),
                "events_total": sum(self.events.values()), "rejected": self.rejected,
                "connections": self.connections, "reconnects": self.reconnects, "catch_ups": self.catch_ups,
                "catch_up_requests": self.catch_up_requests, "catch_up_records": self.catch_up_records,
                "fetched": self.fetched, "lag_seconds": self.lag_seconds, "sure_until": self.sure_until,
                "connected": self.connected, "catching_up": self.catching_up, "stopped_because": self.stopped_because}

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {name}" for name, n in sorted(self.events.items())) or "no events"
        return (f"follow: {kinds}; {self.rejected} kept aside; {counted(self.reconnects, 'reconnect')}; "
                f"{counted(self.catch_ups, 'catch-up')} ({counted(self.catch_up_requests, 'request')}, "
                f"{counted(self.catch_up_records, 'record')}); sure until {self.sure_until or 'never'}")


class Follower:
    """One follower of one site into one mirror (:func:`follow` runs it)."""

    def __init__(self, client: PhilomenaClient, db: Database, options: FollowOptions,
                 report: FollowReport, say: Callable[[str], None]) -> None:
        self.client, self.db, self.options, self.report, self.say = client, db, options, report, say
        self.applier = Applier(db, client, options.scope)
        self.cursor = load_cursor(db, STATE_NAME)
        report.sure_until = self.cursor.get("sure_until")
        self.sure = False  # whether events may move sure_until: caught up, and nothing kept aside since
        self._group: asyncio.TaskGroup | None = None  # the connection's tasks, for a repair walk
        self._repair: asyncio.Task | None = None
        self._last_walk = 0.0  # time.monotonic() of the last catch-up's start

    async def run(self) -> None:
        pause = self.options.backoff_min
        while True:
            try:
                async with open_channel(socket_url(self.client.base_url), heartbeat=self.options.heartbeat,
                                        timeout=self.options.connect_timeout,
                                        user_agent=self.options.user_agent) as channel:
                    pause = self.options.backoff_min
                    await self._session(channel, joined=utc_text())
            except FirehoseRefused:
                if self.report.connections == 0:
                    raise
                self.say("the site refused the firehose; trying again later")
            except ChannelLost as e:
                self.say(f"{e}; reconnecting")
            self.report.connected = self.report.catching_up = self.sure = False
            self.report.reconnects += 1
            await asyncio.sleep(random.uniform(0, pause))  # full jitter: followers do not come back in step
            pause = min(pause * 2, self.options.backoff_max)

    async def _session(self, channel: Channel, joined: str) -> None:
        """One connection, recorded as a run: the catch-up walk beside the events. A walk that fails
        (the site down for longer than the retries) ends the connection too: the next walks again."""
        self.report.connections += 1
        # A connection's catch-up comes with it: connected and not catching up means caught up, for
        # the health check's ping and for whoever reads the report, from the first moment.
        self.report.connected = self.report.catching_up = True
        self.say(f"following {socket_url(self.client.base_url)}")
        run = start_run(self.db, STATE_NAME, filter_id=self.client.filter_id)
        status, message = "stopped", "interrupted"
        try:
            async with asyncio.TaskGroup() as self._group:
                self._group.create_task(self._catch_up(joined))
                self._group.create_task(self._events(channel))
        except* (ChannelLost, ApiError) as lost:
            status, message = "ok", str(lost.exceptions[0])
            raise ChannelLost(message) from None
        except* Exception as failed:
            status, message = "failed", str(failed.exceptions[0])
            raise failed.exceptions[0] from None
        finally:
            self._group = self._repair = None
            _finish(self.db, run, status, message, self.report)

    async def _events(self, channel: Channel) -> None:
        async for item in channel:
            await self._take(item)

    async def _take(self, item: Event | Malformed) -> None:
        seen_at = utc_text(datetime.fromtimestamp(item.arrived, timezone.utc))
        if isinstance(item, Malformed):
            self._keep_aside({"frame": item.text}, item.reason, seen_at)
            return
        reason = await self.applier.apply(item.event, item.payload, seen_at,
                                          lambda: self._save(seen_at, applied=item.event))
        self.report.fetched = self.applier.fetched
        if reason is not None:
            self._keep_aside({"event": item.event, "payload": item.payload}, reason, seen_at)
            return
        self.report.lag_seconds = _lag(item, seen_at)

    def _keep_aside(self, frame: Any, reason: str, seen_at: str) -> None:
        self.sure = False  # it may have named a change: a catch-up walks from before it
        self.report.rejected += 1
        self.applier.keep_aside(frame, reason, lambda: self._save(seen_at))
        self.say(f"kept aside: {reason}")
        if self._group is not None and self._repair is None:
            self._repair = self._group.create_task(self._repair_walk())

    async def _repair_walk(self) -> None:
        """A catch-up while still connected, after a frame kept aside: at most one each
        :attr:`FollowOptions.repair_every` seconds, however many frames a hostile stream spoils."""
        await asyncio.sleep(max(0.0, self._last_walk + self.options.repair_every - time.monotonic()))
        while self.report.catching_up:
            await asyncio.sleep(0.1)
        self._repair = None
        await self._catch_up(utc_text())

    def _save(self, seen_at: str | None, applied: str | None = None) -> None:
        """Save the cursor (in the caller's transaction), counting the event ``applied``:
        ``sure_until`` moves only when sure."""
        if applied is not None:
            self.report.events[applied] += 1
        if seen_at is not None and self.sure:
            self.report.sure_until = seen_at
        self.cursor = {**self.cursor, "sure_until": self.report.sure_until,
                       "counts": {"events": sum(self.report.events.values()), "rejected": self.report.rejected,
                                  "reconnects": self.report.reconnects}}
        save_cursor(self.db, STATE_NAME, self.cursor)

    async def _catch_up(self, joined: str) -> None:
        """Walk what changed since the sure moment (and the ids above the highest held); then the
        join's moment is sure. Resumes nothing: a walk cut short starts again from the sure moment."""
        sure_until, high_water = self._starting_point()
        records, requests = self.report.catch_up_records, self.report.catch_up_requests
        self._last_walk = time.monotonic()
        before = self.client.requests_made - self.report.catch_up_requests  # the report counts every walk's
        self.report.catch_ups += 1
        self.applier.paged.clear()  # a late event comes on the connection the walk began on, or never
        self.report.catching_up = True
        since_text = since(sure_until, self.options.overlap)
        await self._walk_messages(since_text, before)
        writer, guard, after = ImageWriter(self.db, self.client.base_url), ProgressGuard("follow catch-up"), -1

        def save(records: list[Any]) -> Any:
            return writer.save_page(self._paged(records))

        while True:
            q = walk_query(self.options.query, after, high_water=high_water, since=since_text)
            asked = utc_text()
            page = await self.client.search_images(q, per_page=PER_PAGE, sf="id", sd="asc")
            finished, before_page = last_search_page(page, PER_PAGE), after
            stored, tied = sorted_out(self.db, "images", page.records, asked)
            with self.db.atomic():
                saved = save(stored)
                walked = [r["id"] for r in page.records if isinstance(r, dict) and type(r.get("id")) is int]
                after = max([after, *walked, *saved.keys])
            await self._ask_again("images", tied, self.client.image, save)
            if finished:
                with self.db.atomic():
                    self._caught_up(joined, after, high_water)
            self.report.catch_up_records += len(page.records)
            self.report.catch_up_requests = self.client.requests_made - before
            guard.check(page, moved=finished or after != before_page)
            if finished:
                break
        self.say(f"caught up: {counted(self.report.catch_up_records - records, 'record')} in "
                 f"{counted(self.report.catch_up_requests - requests, 'request')}")

    async def _walk_messages(self, since_text: str | None, before: int) -> None:
        """The comments and forum posts created or edited since ``since_text``, newest first, as
        their crawlers' refresh walks them (comments: of the images the mirror holds). A mirror
        never synced (no such moment) leaves them to its first sync."""
        scope = self.options.scope
        walks = [("comments", self.client.search_comments, self.client.comment, self.applier.comments)] \
            if scope.comments else []
        walks += [("posts", self.client.search_posts, self.client.post, self.applier.posts)] if scope.forums else []
        for table, search, fetch, writer in walks if since_text else []:
            asked = utc_text()  # before the walk's first page: each page's own request is later
            async for page, _ in newest_first(lambda q, n, search=search: search(q, page=n),
                                              f"updated_at.gte:{since_text}", what=f"the follower's {table} catch-up"):
                records = [r for r in page.records if isinstance(r, dict)]
                if table == "comments":
                    records = [r for r in records if self.applier.holds(r.get("image_id"))]
                stored, tied = sorted_out(self.db, table, records, asked)
                with self.db.atomic():
                    writer.save(stored)
                await self._ask_again(table, tied, fetch, writer.save)
                self.report.catch_up_records += len(records)
                self.report.catch_up_requests = self.client.requests_made - before

    def _paged(self, records: list[Any]) -> list[Any]:
        """``records``, which a catch-up stores, noted with their updated_at (:attr:`Applier.paged`)."""
        self.applier.paged.update((r["id"], r["updated_at"]) for r in records if isinstance(r, dict)
                                  and type(r.get("id")) is int and isinstance(r.get("updated_at"), str))
        return records

    async def _ask_again(self, table: str, tied: list[Any], fetch: Callable[[int], Awaitable[Any]],
                         save: Callable[[list[Any]], Any]) -> None:
        """Store the site's own copy of each record a catch-up's page left out on a tie with the row
        kept (:func:`.apply.sorted_out`), unless the two are the same: asked after that row was
        written, it is the later edit, unless an event stored another meanwhile (then that row
        stays: it may be later still)."""
        for record in tied:
            record_id = record["id"]
            seen = self._raw(table, record_id)
            if seen is None or json.loads(seen) == record:
                continue  # the event stored the very version the page holds: nothing to settle
            try:
                record = await fetch(record_id)
            except NotFound:
                continue  # gone from the site since the page: the nightly sync says so
            with self.db.atomic():
                if self._raw(table, record_id) == seen:
                    save(not_older(self.db, table, [record]))

    def _raw(self, table: str, record_id: int) -> str | None:
        row = self.db.execute(f"SELECT raw FROM {table} WHERE id = ?", [record_id]).fetchone()
        return row[0] if row else None

    def _caught_up(self, joined: str, after: int, high_water: int | None) -> None:
        # Sure of everything before the walk began; events move that on unless a frame was kept
        # aside during the walk (its repair is then pending).
        self.sure, self.report.catching_up = self._repair is None, False
        self.report.sure_until = min(joined, utc_text())
        self.cursor = {**self.cursor, "high_water": max(after, high_water if high_water is not None else -1)}
        self._save(None)

    def _starting_point(self) -> tuple[str | None, int | None]:
        """The sure moment and the highest id held: the follower's own, else the images crawler's
        last complete walk (a mirror synced before it was first followed); (None, None) for none."""
        if self.cursor.get("sure_until"):
            return self.cursor["sure_until"], self.cursor.get("high_water")
        images = load_cursor(self.db, IMAGES_STATE)
        return images.get("last_start"), images.get("high_water")


def _finish(db: Database, run: Run, status: str, message: str | None, report: FollowReport) -> None:
    with db.atomic():
        run.finish(db, status=status, message=message, requests=report.catch_up_requests + report.fetched,
                   fetched=sum(report.events.values()), new=0, updated=0, hidden=0)


def _lag(item: Event, seen_at: str) -> float | None:
    """Seconds from the change (the record's ``updated_at``, by the site's clock) to its arrival."""
    payload = item.payload if isinstance(item.payload, dict) else {}
    record = next((v for v in payload.values() if isinstance(v, dict) and "updated_at" in v), None)
    changed = parse_utc(record["updated_at"]) if record and isinstance(record["updated_at"], str) else None
    return None if changed is None else round(item.arrived - changed.timestamp(), 3)


async def follow(client: PhilomenaClient, db: Database, options: FollowOptions | None = None, *,
                 report: FollowReport | None = None, say: Callable[[str], None] = lambda line: None) -> FollowReport:
    """Follow the site's firehose into ``db`` until cancelled (SIGTERM, Ctrl-C) or refused at once.

    ``report`` is filled as the follower goes (pass one in to read it while it runs); ``say``
    receives the lines worth a log: connections, catch-ups, events kept aside.
    """
    report = report if report is not None else FollowReport()
    try:
        await Follower(client, db, options or FollowOptions(), report, say).run()
    except asyncio.CancelledError:
        report.stopped_because = "stopped"
        raise
    except FirehoseRefused as e:
        report.stopped_because = str(e)
        raise FirehoseRefused(f"{e}: this site cannot be followed from here; `mirror sync` keeps the mirror "
                              "as before (docs/follow.md)") from None
    finally:
        report.connected = False
    return report
