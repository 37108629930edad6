"""The typed config: one frozen dataclass per section, read as attributes (``config.polite.timeout``).

Each class has exactly the keys of its section in :data:`~mirror.config.defaults.DEFAULTS`, in the
same order (what each key means is written there); lists become tuples, so a config cannot be
changed once checked. The API key is not a key of :class:`SiteSection`: it is held apart, in a
:class:`Secret`, so that printing, logging or writing out a config never shows it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

RESOURCES = ("images", "comments", "posts", "galleries", "tags", "forums", "filters", "profiles")


class Secret:
    """A string that never shows itself in ``repr``, ``str`` or tracebacks."""

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


@dataclass(frozen=True)
class SiteSection:
    """``[site]``: which site, through which filter, and how its admins can reach the user."""

    base_url: str
    filter_id: int | None
    user_agent: str


@dataclass(frozen=True)
class PoliteSection:
    """``[polite]``: the pace of requests to the site and the rules for retrying them."""

    requests_per_second: float
    max_retries: int
    give_up_after: int
    timeout: float
    backoff: float
    searches_per_10s: float


@dataclass(frozen=True)
class StoreSection:
    """``[store]``: where the database and the files are kept."""

    database: str
    files: str
    endpoint_url: str | None
    busy_timeout: float


@dataclass(frozen=True)
class ImagesSection:
    """``[images]``: whether to mirror images, and the options of its crawler (:mod:`mirror.sync.images`)."""

    enabled: bool
    query: str
    include_hidden: bool
    refresh_overlap: int


@dataclass(frozen=True)
class CommentsSection:
    """``[comments]``: whether to mirror comments, and the options of its crawler (:mod:`mirror.sync.comments`)."""

    enabled: bool
    scope: str
    refresh_overlap: int
    audit_per_run: int


@dataclass(frozen=True)
class PostsSection:
    """``[posts]``: whether to mirror posts, and the options of its crawler (:mod:`mirror.sync.posts`)."""

    enabled: bool
    refresh_overlap: int


@dataclass(frozen=True)
class GalleriesSection:
    """``[galleries]``: whether to mirror galleries, and the options of :mod:`mirror.sync.galleries`."""

    enabled: bool
    scope: str
    refresh_overlap: int
    rewalk_after_days: float
    rewalk_per_run: int


@dataclass(frozen=True)
class TagsSection:
    """``[tags]``: whether to mirror tags, and the options of its crawler (:mod:`mirror.sync.tags`)."""

    enabled: bool
    scope: str
    refresh_per_run: int


@dataclass(frozen=True)
class ForumsSection:
    """``[forums]``: whether to mirror forums, and the options of its crawler (:mod:`mirror.sync.forums`)."""

    enabled: bool
    forums: tuple[str, ...]
    audit_pages_per_run: int


@dataclass(frozen=True)
class FiltersSection:
    """``[filters]``: whether to mirror filters, and the options of its crawler (:mod:`mirror.sync.filters`)."""

    enabled: bool
    ids: tuple[int, ...]


@dataclass(frozen=True)
class ProfilesSection:
    """``[profiles]``: whether to mirror profiles, and the options of its crawler (:mod:`mirror.sync.profiles`)."""

    enabled: bool
    refresh_days: float
    refresh_per_run: int


@dataclass(frozen=True)
class DownloadSection:
    """``[download]``: which files to keep, how many at once, and the file host's own pace."""

    enabled: bool
    representations: tuple[str, ...]
    concurrency: int
    requests_per_second: float
    svg_originals: bool
    gif_videos: bool
    partial_dir: str
    file_deadline: float
    dump_stall_seconds: float
    dump_min_rate: float


@dataclass(frozen=True)
class HistorySection:
    """``[history]``: the grain counters are kept at in the history (:mod:`mirror.store.history`)."""

    counters: str


@dataclass(frozen=True)
class ExportSection:
    """``[export]``: the Delta Lake tables `mirror sync` keeps current after it syncs (:mod:`mirror.export`)."""

    enabled: bool
    dest: str | None
    retention_hours: float
    timeout: float


@dataclass(frozen=True)
class ReportSection:
    """``[report]``: how a run tells a monitor how it went (:mod:`mirror.commands.monitor`)."""

    metrics_file: str | None
    healthcheck_url: str | None
    healthcheck_timeout: float


# The class of each section, in the order of the TOML file.
SECTIONS: dict[str, type] = {
    "site": SiteSection, "polite": PoliteSection, "store": StoreSection, "images": ImagesSection,
    "comments": CommentsSection, "posts": PostsSection, "galleries": GalleriesSection, "tags": TagsSection,
    "forums": ForumsSection, "filters": FiltersSection, "profiles": ProfilesSection, "download": DownloadSection,
    "history": HistorySection, "export": ExportSection, "report": ReportSection,
}


def make_section(name: str, values: dict[str, Any]) -> Any:
    """The section ``name`` holding ``values`` (every key, already checked); lists become tuples."""
    return SECTIONS[name](**{key: tuple(value) if isinstance(value, list) else value
                             for key, value in values.items()})


@dataclass(frozen=True)
class Config:
    """The merged configuration: every section, with defaults filled in, and the API key apart."""

    site: SiteSection
    polite: PoliteSection
    store: StoreSection
    images: ImagesSection
    comments: CommentsSection
    posts: PostsSection
    galleries: GalleriesSection
    tags: TagsSection
    forums: ForumsSection
    filters: FiltersSection
    profiles: ProfilesSection
    download: DownloadSection
    history: HistorySection
    export: ExportSection
    report: ReportSection
    api_key: Secret | None = None
    path: Path | None = None  # the file it was read from, if any

    def to_toml(self) -> str:
        """The config as a TOML file that loads back to it (keys set to None are left out).

        JSON's strings, numbers, booleans and lists are also TOML's, so each value is written as
        JSON. For the commands a program starts in another process (tests, benchmarks, the demo).
        The API key is never written.
        """
        lines = []
        for name in SECTIONS:
            lines.append(f"[{name}]")
            values = asdict(getattr(self, name))
            lines += [f"{key} = {json.dumps(value)}" for key, value in values.items() if value is not None]
        return "\n".join(lines) + "\n"

    @property
    def base_url(self) -> str:
        return self.site.base_url.rstrip("/")

    @property
    def database(self) -> Path:
        return Path(self.store.database)

    def enabled_resources(self) -> list[str]:
        return [name for name in RESOURCES if getattr(self, name).enabled]

