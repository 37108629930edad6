"""The quick subset (issue 40) covers every package of the tests, and names only tests that exist."""

from __future__ import annotations

import re
from pathlib import Path

from .support.quick import QUICK

TESTS = Path(__file__).parent
ROOT = TESTS.parent


def packages() -> list[str]:
    """Every tests/<package>/ that holds test files."""
    return sorted(folder.name for folder in TESTS.iterdir() if folder.is_dir() and any(folder.glob("test_*.py")))


def test_every_package_of_the_tests_has_a_quick_test():
    missing = [name for name in packages() if not any(entry.startswith(f"tests/{name}/") for entry in QUICK)]
    assert not missing, f"no quick test in tests/{missing[0]}/: add one to tests/support/quick.py"


def test_every_quick_entry_names_a_test_that_exists():
    for entry in QUICK:
        path, _, test = entry.partition("::")
        assert (ROOT / path).is_file(), f"{entry}: no such file"
        if test:
            name = test.partition("[")[0]
            assert re.search(rf"^(async )?def {name}\(", (ROOT / path).read_text(), re.M), f"{entry}: no such test"
