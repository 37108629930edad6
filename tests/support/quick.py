"""The quick subset (``pytest -m quick``): a few cheap tests of every package, for a contributor
to run after each change in two minutes or less on 2 cores; the whole suite is what CI runs.

Entries are node ids or their beginnings (a file, a test, one case), relative to the repository;
:mod:`tests.test_quick_subset` checks that each names a test and that every package has one.
"""

from __future__ import annotations

QUICK: tuple[str, ...] = (
    "tests/test_layout.py",
    "tests/test_quick_subset.py",
    "tests/api/test_client_fixtures.py",
    "tests/asof/test_records_as_of.py",
    "tests/browse/test_markup.py",
    "tests/cli/test_help.py",
    "tests/download/test_similar_cli.py::test_an_archive_without_fingerprints_says_what_to_do",
    "tests/dump/test_import_source.py::test_what_is_not_a_dump_file_is_one_line_exit_2_and_creates_nothing",
    "tests/end_to_end/test_fault_suite.py::test_fault[500/502/504 burst]",
    "tests/export/test_command.py::test_export_needs_a_dest",
    "tests/follow/test_follow.py::test_an_edit_is_in_the_mirror_with_its_history_dated_by_arrival_and_no_request",
    "tests/imaging/test_golden.py",
    "tests/localsite/test_board_edits.py::test_a_board_made_in_a_temporary_folder_goes_with_its_editor",
    "tests/search/test_query.py",
    "tests/serve/test_reverse.py::test_reverse_search_on_the_site_and_its_rules",
    "tests/store/test_store_errors.py",
    "tests/sync/test_page_duplicates.py",
)
