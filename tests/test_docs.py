"""The documentation keeps up with the code, as sqlite-utils' test_docs.py checks: every command
has help text and is in the docs (README.md and docs/), and every config key is in
config.example.toml."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mirror.cli import cli
from mirror.config import DEFAULTS

from .support import docs

ROOT = Path(__file__).resolve().parents[1]
DOCS = docs.every_page()
README = ROOT / "README.md"
EXAMPLE = (ROOT / "config.example.toml").read_text()


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_has_help_and_is_in_the_docs(name):
    assert cli.commands[name].help, name
    assert f"mirror {name}" in DOCS, name


@pytest.mark.parametrize("section, key", [(s, k) for s, keys in DEFAULTS.items() for k in keys])
def test_every_config_key_is_in_the_example_config(section, key):
    body = re.search(rf"^\[{section}\]\n(.*?)(?=^\[|\Z)", EXAMPLE, re.S | re.M)
    assert body is not None, f"[{section}] is not in config.example.toml"
    assert re.search(rf"^#?\s*{re.escape(key)}\s*=", body.group(1), re.M), f"[{section}] {key}"


def test_the_docs_build_with_every_warning_an_error(tmp_path):
    """MkDocs in strict mode, with mkdocs.yml's `validation` set to warn: a page left out of the
    nav, a link to a page or to an anchor that does not exist, fails the build."""
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                            str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "use" / "index.html").exists()


def test_the_readmes_links_reach_pages_and_sections_that_exist():
    """The README is read on the forge, outside the MkDocs build: its links are checked here."""
    broken = [target for target in docs.links(docs.readme()) if not docs.link_resolves(README, target)]
    assert broken == []


def test_a_link_to_a_missing_section_is_found_broken():
    assert docs.link_resolves(README, "docs/use.md#exit-codes")
    assert not docs.link_resolves(README, "docs/use.md#no-such-section")
    assert not docs.link_resolves(README, "docs/no-such-page.md")


def shown_commands() -> list[tuple[str, list[str]]]:
    """Every `mirror ...` command the README and the pages show (the generated reliability page
    quotes what the mirror said, so it is left out), as (page, words)."""
    pages = [("README.md", docs.readme())] + [(path.name, path.read_text()) for path in sorted(docs.DOCS.glob("*.md"))
                                              if path.name != "reliability.md"]
    shown = [(name, words) for name, text in pages for words in docs.commands(text)]
    return [item for index, item in enumerate(shown) if item not in shown[:index]]


@pytest.mark.parametrize("name, words", shown_commands(), ids=lambda value: " ".join(value)
                         if isinstance(value, list) else value)
def test_every_command_the_docs_show_names_a_command_and_options_it_has(name, words):
    group_options = {opt for param in cli.params for opt in (*param.opts, *param.secondary_opts)} | {"-h", "--help"}
    words = words[1:]
    while words and words[0] in group_options:
        words = words[2:] if words[0] in ("-c", "--config") else words[1:]
    if not words:
        return  # `mirror -h`, `mirror -V`
    assert words[0] in cli.commands, f"{name}: mirror {words[0]} is no command"
    command = cli.commands[words[0]]
    known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"-h", "--help"}
    unknown = [word.split("=", 1)[0] for word in words[1:] if word.startswith("-") and word.split("=", 1)[0] not in known]
    assert unknown == [], f"{name}: mirror {words[0]} has no option {unknown}"


def test_a_command_with_an_option_it_lacks_is_found():
    (words,) = docs.commands("```\nmirror changes --since 7d [--no-such-option | --json]  # a comment\n```\n")
    assert words == ["mirror", "changes", "--since", "7d", "--no-such-option", "--json"]
    with pytest.raises(AssertionError, match="no option"):
        test_every_command_the_docs_show_names_a_command_and_options_it_has("x.md", words)
