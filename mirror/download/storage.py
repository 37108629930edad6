"""Where kept files live: a local folder or any fsspec URL (``s3://bucket/prefix`` and friends).

Transfers always stream into a local ``.part`` file first (resumable with a Range request, and
fsynced), which is then published under its final name in one step: ``os.replace`` for a local
folder (same file system, so atomic), a single upload for an object store (an object appears
only once complete). Either way nothing half-written ever carries a final name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from ..errors import EXIT_STORE, MirrorError
from ..store.errors import DENIED, FULL, MISSING, WHAT, os_error_kind
from ..urls import redact
from .kinds import problem

CHUNK = 1 << 20
# Inside a local files root: the .part files, on the same file system as their final names.
PARTIAL_DIR = ".partial"
# What a remote store's files just published are remembered by (see :class:`RecentFiles`).
RECENT_FILE_BYTES = 16 << 20
RECENT_BYTES = 64 << 20


class StorageFailure(MirrorError):
    """Files cannot be written where the config says (disk full, permissions, missing bucket)."""

    exit_code = EXIT_STORE


@dataclass(frozen=True)
class Digest:
    """Size and sha512 (hex) of some bytes."""

    size: int
    sha512: str


def hash_stream(read: Any, digest: Any = None, chunk: int = CHUNK) -> tuple[int, Any]:
    """Feed ``read(chunk)`` into a sha512 (or ``digest``) until EOF; return (bytes read, digest)."""
    digest = digest or hashlib.sha512()
    size = 0
    while block := read(chunk):
        digest.update(block)
        size += len(block)
    return size, digest


class RecentFiles:
    """The bytes of the files a run just uploaded, the most recent first, up to ``limit`` bytes.

    Each file kept is read again at once, for its intensities, its fingerprint and what an
    original says of itself: from an object store that cost two requests a read (a HEAD for the
    size, then a GET), some four of a kept file's seven. The reads take turns with uploads on
    worker threads, hence the lock.
    """

    def __init__(self, limit: int = RECENT_BYTES) -> None:
        self.limit = limit
        self._files: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def remember(self, path: str, data: bytes) -> None:
        with self._lock:
            self._drop(path)
            self._files[path] = data
            self._size += len(data)
            while self._size > self.limit:
                self._drop(next(iter(self._files)))

    def get(self, path: str) -> bytes | None:
        with self._lock:
            return self._files.get(path)

    def forget(self, path: str) -> None:
        with self._lock:
            self._drop(path)

    def _drop(self, path: str) -> None:
        data = self._files.pop(path, None)
        if data is not None:
            self._size -= len(data)


class Storage:
    """The files root: final names for kept files, plus a local staging area for ``.part`` files.

    ``url`` is a path or an fsspec URL; ``options`` go to the fsspec file system (for S3-compatible
    stores, ``endpoint_url`` among them). ``staging`` is the local folder for ``.part`` files when
    the root is not local.
    """

    def __init__(self, url: str, *, options: Mapping[str, Any] | None = None,
                 staging: str | os.PathLike[str] = "data/partial") -> None:
        self.url = url
        try:
            self.fs, self.root = fsspec.core.url_to_fs(url, **dict(options or {}))
        except ImportError as e:
            raise StorageFailure(f"store.files is {redact(url)!r}, which needs an extra package: {e}. "
                                 "For S3 run `pip install 'booru-mirror[s3]'`.") from None
        except Exception as e:  # each storage fails its own way (a refused FTP login, an unknown host)
            raise StorageFailure(f"cannot open store.files {redact(url)!r}: {_reason(e)}. Nothing was written; "
                                 "check the address (and that the server is up) and run again.") from None
        self.root = self.root.rstrip("/")
        self.local = isinstance(self.fs, LocalFileSystem)
        self.staging = Path(self.root, PARTIAL_DIR) if self.local else Path(staging).absolute()
        self.recent = RecentFiles()
        self._listed: dict[str, set[str]] = {}  # folder -> the names in it (see kept)
        self._lock = threading.Lock()

    def describe(self, path: str) -> str:
        """The kept file's location as the user would write it (for messages)."""
        if self.local:
            return os.path.join(self.root, path)
        return redact(f"{self.fs.unstrip_protocol(self.root)}/{path}")

    def part(self, path: str) -> Path:
        """The local ``.part`` file a transfer of ``path`` streams into (its folder created)."""
        part = self.staging / f"{path}.part"
        self._guard(lambda: part.parent.mkdir(parents=True, exist_ok=True), part.parent)
        return part

    def publish(self, part: Path, path: str, *copies: str) -> None:
        """Give the finished ``part`` its final name ``path`` (and ``copies``) in one step each.

        ``part`` is gone afterwards. A copy is staged as its own ``.part`` first, so that it too
        appears whole or not at all.
        """
        def move() -> None:
            if self.local:
                for copy in copies:
                    staged = self.part(copy)
                    shutil.copyfile(part, staged)
                    self._replace(staged, copy)
                self._replace(part, path)
            else:
                data = part.read_bytes() if part.stat().st_size <= RECENT_FILE_BYTES else None
                for name in (*copies, path):
                    self.recent.forget(name)
                    self.fs.put_file(str(part), f"{self.root}/{name}")
                    if data is not None:
                        self.recent.remember(name, data)
                part.unlink()

        self._guard(move, self.describe(path))

    def _replace(self, part: Path, path: str) -> None:
        final = f"{self.root}/{path}"
        os.makedirs(os.path.dirname(final), exist_ok=True)
        os.replace(part, final)
        _fsync_directory(os.path.dirname(final))

    def kept(self, path: str) -> Digest | None:
        """:meth:`digest`, asked only of a file whose folder held its name when first listed.

        A download asks this of each file once, before fetching it (a run stopped between
        publishing a file and recording it left it there). Nearly always the answer is no: asking
        each file cost an object store a HEAD and a listing (a LIST is priced as ten GETs), where
        listing each folder (a thousand images) once a run costs a request per thousand files.
        What this storage publishes since is not added: nothing asks of it again, and a first
        download's listings would grow to every file it keeps.
        """
        folder, _, name = path.rpartition("/")
        if name not in self._names_in(folder):
            return None
        return self.digest(path)

    def _names_in(self, folder: str) -> set[str]:
        with self._lock:  # held while listing: the run's workers ask of the same folders at once
            if folder not in self._listed:
                self._listed[folder] = self._guard(lambda: self._list(folder), self.describe(folder))
            return self._listed[folder]

    def _list(self, folder: str) -> set[str]:
        try:
            found = self.fs.ls(f"{self.root}/{folder}", detail=False)
        except FileNotFoundError:
            return set()
        return {entry.rstrip("/").rpartition("/")[2] for entry in found}

    def _unlist(self, path: str) -> None:
        """A file this storage removed is no longer in its folder's listing."""
        folder, _, name = path.rpartition("/")
        with self._lock:
            self._listed.get(folder, set()).discard(name)

    def digest(self, path: str) -> Digest | None:
        """Size and sha512 of the kept file ``path``, or None when there is none."""
        final = f"{self.root}/{path}"

        def read() -> Digest | None:
            try:
                with self.fs.open(final, "rb", block_size=CHUNK) as f:  # object stores buffer a block
                    size, digest = hash_stream(f.read)
            except FileNotFoundError:
                return None
            return Digest(size, digest.hexdigest())

        return self._guard(read, self.describe(path))

    def read(self, path: str) -> bytes | None:
        """The whole kept file ``path``, or None when there is none."""
        final = f"{self.root}/{path}"

        def read() -> bytes | None:
            if (data := self.recent.get(path)) is not None:
                return data
            try:
                with self.fs.open(final, "rb") as f:
                    return f.read()
            except FileNotFoundError:
                return None

        return self._guard(read, self.describe(path))

    def problem(self, path: str) -> str | None:
        """Why the kept file ``path`` is not a whole file of the format its extension names
        (:mod:`~mirror.download.kinds`), or None."""
        final = f"{self.root}/{path}"

        def read() -> str | None:
            with self.fs.open(final, "rb") as f:
                return problem(f, path.rpartition(".")[2])

        return self._guard(read, self.describe(path))

    def remove(self, path: str) -> None:
        """Delete the kept file ``path`` if present."""
        final = f"{self.root}/{path}"

        def rm() -> None:
            self.recent.forget(path)
            self._unlist(path)
            try:
                self.fs.rm_file(final)
            except FileNotFoundError:
                pass

        self._guard(rm, self.describe(path))

    def _guard(self, action: Any, where: object) -> Any:
        try:
            return action()
        except OSError as e:
            raise storage_failure(e, where) from None
        except Exception as e:
            if not _from_storage(e):
                raise
            raise StorageFailure(f"cannot write {where}: {_reason(e)}. Files finished so far are kept; check "
                                 "store.files (and its credentials: for S3 the AWS_ACCESS_KEY_ID and "
                                 "AWS_SECRET_ACCESS_KEY environment variables) and run again.") from None


# Where the errors of storage back ends come from, when they are not OSErrors (missing credentials).
_BACK_ENDS = ("botocore", "aiobotocore", "s3fs", "gcsfs", "adlfs", "ftplib", "fsspec", "paramiko")


def _from_storage(error: Exception) -> bool:
    return type(error).__module__.split(".")[0] in _BACK_ENDS


def _reason(error: Exception) -> str:
    return f"{type(error).__name__}: {redact(str(error))}" if str(error) else type(error).__name__


def storage_failure(error: OSError, where: object) -> StorageFailure:
    """A clear message for an error writing files: which file, what happened, what to do."""
    kind = os_error_kind(error)
    what = WHAT.get(kind) or error.strerror or str(error)
    todo = {FULL: "free some space", DENIED: "fix the permissions (or point store.files elsewhere)",
            MISSING: "create it (for object storage: the bucket)"}.get(kind, "fix the cause")
    return StorageFailure(f"cannot write {where}: {what}. Files finished so far are kept and nothing "
                          f"half-written was left under a final name; {todo} and run `mirror download` again.")


def _fsync_directory(path: str) -> None:
    """Make a rename durable: fsync the directory that holds the new name (POSIX only)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
