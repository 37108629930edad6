"""Representation downloads: what is pending, fetching it verified, where it is kept, re-checking it.

Modules: ``layout`` (trusted file names), ``storage`` (local folder or fsspec URL), ``fetch`` (one
file, paced, resumable, verified), ``run`` (the planner and workers), ``verify`` (re-hashing).
The state lives in the ``downloads`` table (:mod:`mirror.store.downloads`).
"""

from .run import DownloadOptions, DownloadReport, run_downloads
from .storage import Storage, StorageFailure
from .verify import Sample, VerifyReport, verify_files

__all__ = ["DownloadOptions", "DownloadReport", "Sample", "Storage", "StorageFailure", "VerifyReport", "run_downloads",
           "verify_files"]
