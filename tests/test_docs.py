"""The documentation keeps up with the code, as sqlite-utils' test_docs.py checks: every command
has help text and is in the README or a page of docs/, and every config key is in config.example.toml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mirror.cli import cli
from mirror.config import DEFAULTS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# The README is split into pages under docs/: a command said there is documented too.
DOCS = README + "".join(page.read_text() for page in sorted((ROOT / "docs").glob("*.md")))
EXAMPLE = (ROOT / "config.example.toml").read_text()


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_has_help_and_is_in_the_readme(name):
    assert cli.commands[name].help, name
    assert f"mirror {name}" in DOCS, name


@pytest.mark.parametrize("section, key", [(s, k) for s, keys in DEFAULTS.items() for k in keys])
def test_every_config_key_is_in_the_example_config(section, key):
    body = re.search(rf"^\[{section}\]\n(.*?)(?=^\[|\Z)", EXAMPLE, re.S | re.M)
    assert body is not None, f"[{section}] is not in config.example.toml"
    assert re.search(rf"^#?\s*{re.escape(key)}\s*=", body.group(1), re.M), f"[{section}] {key}"
