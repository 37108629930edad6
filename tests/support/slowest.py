"""The test files that take longest, slowest first: the whole suite hands them out first.

Under ``pytest -n auto --dist loadfile`` a file runs whole on one worker, and xdist hands files
out in the order of the collection (:func:`tests.conftest.pytest_configure` turns off its own
reordering by number of tests, which put the one-test kill soak last: the other worker sat idle
while it ran). Starting with the longest files leaves short ones to even out the end. Measured
with ``--durations=0`` (2026-11-27); a file missing here only runs later, never wrongly.
"""

SLOWEST = (
    "tests/download/test_download.py",
    "tests/cli/test_nightly.py",
    "tests/end_to_end/test_fault_suite.py",
    "tests/end_to_end/test_kill_soak.py",
    "tests/localsite/test_site_pictures.py",
    "tests/dump/test_import_killed.py",
    "tests/browse/test_hostile_records.py",
    "tests/export/test_read_back.py",
    "tests/dump/test_import_dump.py",
    "tests/serve/test_serve.py",
    "tests/cli/test_demo.py",
    "tests/browse/test_browse.py",
    "tests/sync/test_sync_walks.py",
    "tests/sync/test_sync_images.py",
    "tests/localsite/test_site.py",
)
