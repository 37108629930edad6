"""The built-in defaults of every config key, with what each one means (as scrapy's default_settings.py).

A key missing from the file takes its value here, and its type too: ``TYPES`` names the type of
the keys whose default is None. ``config.example.toml`` shows the same keys to users, and
``tests/test_docs.py`` keeps the two in step.
"""

from __future__ import annotations

from typing import Any

DEFAULTS: dict[str, dict[str, Any]] = {
    "site": {
        "base_url": "https://derpibooru.org",
        "filter_id": None,
        "user_agent": "",
        "api_key": None,
    },
    "polite": {
        "requests_per_second": 1.0,
        "max_retries": 5,
        "give_up_after": 10,
        "timeout": 30.0,
        # Base of the exponential backoff between retries, in seconds (a Retry-After wins).
        "backoff": 1.0,
        # Requests to the site's search endpoints (/api/v1/json/search*) in any 10 s, besides the
        # overall rate: Derpibooru's own limit there is 20.
        "searches_per_10s": 20.0,
    },
    "store": {
        "database": "data/mirror.db",
        "files": "data/files",
        # For S3-compatible object storage (store.files = "s3://bucket/prefix"); credentials
        # come from the usual AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY environment variables.
        "endpoint_url": None,
        # Seconds a write waits for another program's write transaction on the database.
        "busy_timeout": 30.0,
    },
    "images": {
        "enabled": True,
        "query": "*",
        "include_hidden": True,
        "refresh_overlap": 900,
    },
    "comments": {
        "enabled": False,
        # "mirrored": the comments on the mirrored images; "all": every comment of the site.
        "scope": "mirrored",
        # Seconds of overlap when re-reading comments updated since the last run (clock skew, indexing).
        "refresh_overlap": 900,
        # Batches of 50 mirrored images checked each run for comments hidden or destroyed since
        # (one request a batch when nothing changed; 0 turns the audit off).
        "audit_per_run": 2,
    },
    "posts": {
        "enabled": False,
        # Seconds of overlap when re-reading posts updated since the last run (clock skew, indexing).
        "refresh_overlap": 900,
    },
    "galleries": {
        "enabled": False,
        # "mirrored": the galleries holding mirrored images; "all": every gallery of the site.
        "scope": "mirrored",
        # Seconds of overlap when re-reading galleries updated since the last run.
        "refresh_overlap": 900,
        # Reordering a gallery leaves its updated_at alone, so galleries are also walked again
        # when their last walk is this many days old, at most rewalk_per_run of them per run.
        "rewalk_after_days": 30.0,
        "rewalk_per_run": 10,
    },
    "tags": {
        "enabled": False,
        # "mirrored": the tags the mirrored images name; "all": every tag of the site.
        "scope": "mirrored",
        # Tags re-fetched per run, longest-fetched first, so edits that touch no image arrive too.
        "refresh_per_run": 100,
    },
    "forums": {
        "enabled": False,
        # Short names of the forums to mirror (e.g. ["dis", "art"]); empty means every public forum.
        "forums": [],
        # Old pages of posts read again each run, going round every topic, so posts hidden since
        # they were mirrored (nothing else reports them) are marked. 0 turns this off.
        "audit_pages_per_run": 2,
    },
    "filters": {
        "enabled": False,
        # Filter ids to keep besides the system filters, the key owner's and the one in use.
        "ids": [],
    },
    "profiles": {
        "enabled": False,
        # Days before a profile (or a deleted account's 404) is asked for again.
        "refresh_days": 30.0,
        # At most this many stale profiles are refreshed per run, oldest first, so the profiles
        # fetched on the first night do not all fall due on one later night. New users always come;
        # the users an imported dump names (a name only) share this allowance, newest activity first.
        "refresh_per_run": 200,
    },
    "download": {
        "enabled": False,
        "representations": ["thumb", "full"],
        "concurrency": 4,
        # The file host's own pacing budget, retries included (retry rules come from [polite]).
        "requests_per_second": 4.0,
        "svg_originals": False,
        "gif_videos": False,
        # Where .part files wait when store.files is not a local folder.
        "partial_dir": "data/partial",
        # Seconds one attempt at one file may take, first byte to last; then it is a failed
        # attempt (retried by [polite], resuming its .part), so a trickling host cannot hold a worker.
        "file_deadline": 600.0,
        # `mirror import-dump URL`: an attempt at the dump (some 5 GB, so no overall deadline) is
        # abandoned, kept to resume from and retried, when fewer than dump_min_rate bytes a second
        # came over dump_stall_seconds (0: only when not one byte came in dump_stall_seconds).
        "dump_stall_seconds": 60.0,
        "dump_min_rate": 10000.0,
    },
    "history": {
        # Votes, scores and counts change on every vote: a change of these alone is kept at most
        # once a day per record ("daily"), every time a sync sees one ("all"), or never ("off").
        "counters": "daily",
    },
    "export": {
        # `mirror sync` exports to Delta Lake tables after it syncs (and downloads) when enabled
        # and dest is set: a folder or an s3:// URL (credentials as for store.files). See docs/export.md.
        "enabled": False,
        "dest": None,
        # `mirror export --compact`: hours a replaced data file is kept for the readers still using it.
        "retention_hours": 168.0,
        # Seconds a call to DEST (an S3 request, its retries included) may go unanswered before the
        # export gives up with exit 5; a line is said once it has waited half of it.
        "timeout": 60.0,
    },
    "report": {
        # A file to write the last run's figures to, in Prometheus' text format, for
        # node_exporter's textfile collector (e.g. "/var/lib/node_exporter/textfile/mirror.prom").
        "metrics_file": None,
        # A health-check URL (healthchecks.io style): pinged at URL/start when a sync, download or
        # verify starts, then URL when it ends with 0, or URL/CODE with its exit code.
        "healthcheck_url": None,
        # Seconds one ping may take; a ping that fails only warns, it never fails the run.
        "healthcheck_timeout": 10.0,
    },
}

# The type of each key whose default is None; every other key holds the type of its default.
TYPES: dict[tuple[str, str], type] = {
    ("site", "filter_id"): int,
    ("site", "api_key"): str,
    ("store", "endpoint_url"): str,
    ("export", "dest"): str,
    ("report", "metrics_file"): str,
    ("report", "healthcheck_url"): str,
}
