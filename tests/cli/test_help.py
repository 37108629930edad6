"""What a newcomer types first: -h and -V, shell completion, and the commands of docs/use.md as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result
from starlette.routing import Route

from mirror import __version__
from mirror.cli import cli
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.control import control_routes
from mirror.localsite.http.server import SiteServer

from ..support import docs
from ..support.configs import site_config, write_config

ROOT = Path(__file__).resolve().parents[2]
USE = docs.page("use.md")
MIRROR = str(Path(sys.executable).parent / "mirror")


def run(arguments: list[str]) -> Result:
    return CliRunner().invoke(cli, arguments, prog_name="mirror")


@pytest.mark.parametrize("command", [[], *([name] for name in sorted(cli.commands))])
def test_h_is_help_everywhere(command):
    short, long = run([*command, "-h"]), run([*command, "--help"])
    assert short.exit_code == 0, short.output
    assert short.output == long.output and short.output.startswith("Usage: mirror")


def test_capital_v_is_the_version():
    short, long = run(["-V"]), run(["--version"])
    assert short.exit_code == 0 and short.output == long.output == f"mirror, version {__version__}\n"


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o nosort -F _mirror_completion mirror"),
                                           ("zsh", "compdef _mirror_completion mirror"),
                                           ("fish", "complete --no-files --command mirror")])
def test_the_completion_the_docs_show_produces_a_script(shell, marker):
    assert f"_MIRROR_COMPLETE={shell}_source mirror" in USE
    script = subprocess.run([MIRROR], env={**os.environ, "_MIRROR_COMPLETE": f"{shell}_source"},
                            capture_output=True, text=True, timeout=60)
    assert script.returncode == 0 and marker in script.stdout


def test_completion_completes_commands_and_resources():
    def complete(words: str) -> list[str]:
        env = {**os.environ, "_MIRROR_COMPLETE": "bash_complete", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
        result = subprocess.run([MIRROR], env=env, capture_output=True, text=True, timeout=60)
        return [line.split(",", 1)[1] for line in result.stdout.splitlines()]

    assert complete("mirror sy") == ["sync"]
    assert set(complete("mirror sync ")) >= {"images", "comments", "tags"}


def test_the_docs_commands_call_mirror_after_activating_the_venv():
    """The install line leaves `mirror` in .venv/bin: the usage block puts it on PATH before its
    first bare `mirror`; the crontab lines and the systemd unit name it by path."""
    usage = re.search(r"```\n(.*?)```", docs.section(USE, "Use"), re.S).group(1).splitlines()
    assert usage[0].startswith(". .venv/bin/activate")
    assert any(line.startswith("mirror ") for line in usage)
    assert "cd /srv/mirror && .venv/bin/mirror sync" in USE
    assert "cd /srv/mirror && .venv/bin/mirror sync" in docs.readme()
    if (ROOT / ".venv/bin/activate").exists():  # installed as the README says
        found = subprocess.run(["bash", "-c", ". .venv/bin/activate && command -v mirror"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        assert found.endswith("/.venv/bin/mirror")


def control_paths() -> list[str]:
    """The control API's paths as the help writes them (an image's id as ID)."""
    return [re.sub(r"\{id:int\}", "ID", route.path) for route in control_routes() if isinstance(route, Route)]


def test_the_control_api_is_documented_in_the_sites_help_and_on_a_users_page_the_dump_and_history_pages_link():
    help_text = run(["site", "-h"]).output
    editing = docs.section(docs.page("demo-and-tests.md"), "Editing the local board")
    for path in control_paths():
        assert f"SITE{path}" in help_text, path
        assert f"/_control{path.removeprefix('/_control')}`" in editing, path
    for name in ("dump.md", "history.md", "design.md"):
        assert "(demo-and-tests.md#editing-the-local-board)" in docs.page(name), name


def test_the_control_api_does_what_the_help_says():
    with SiteServer(BoardEditor.generate(seed=2, images=12)) as site:
        control = site.url + "/_control"
        added = httpx.post(control + "/images/add", content='{"n": 2}').json()["ids"]
        assert len(added) == 2
        edited = httpx.post(f"{control}/images/{added[0]}/edit", content='{"tags": ["safe", "pony"], "score": 10}')
        assert edited.json()["image"]["score"] == 10 and "pony" in edited.json()["image"]["tags"]
        hidden = httpx.post(f"{control}/images/{added[1]}/hide", content='{"reason": "Rule #0"}').json()["image"]
        assert hidden["deletion_reason"] == "Rule #0"
        merged = httpx.post(f"{control}/images/3/merge", content=f'{{"into": {added[0]}}}').json()["image"]
        assert merged["duplicate_of"] == added[0]
        assert httpx.post(control + "/faults", content='{"spec": "down"}').json() == {"faults": "down:503"}
        assert httpx.get(site.api_url + "/search/images", params={"q": "*"}).status_code == 503
        httpx.post(control + "/faults", content='{"spec": ""}')
        assert httpx.get(control + "/requests").json()["requests"]
        assert httpx.post(control + "/requests/clear").json() == {"cleared": True}
        assert httpx.get(control + "/requests").json() == {"requests": []}
        unknown = httpx.post(f"{control}/images/999999/hide")
        assert unknown.status_code == 404 and "error" in unknown.json()


def test_one_request_is_said_in_the_singular(site, tmp_path):
    config = str(write_config(site_config(site, tmp_path), tmp_path / "m.toml"))
    assert run(["-c", config, "sync", "images"]).exit_code == 0
    again = run(["-c", config, "sync", "images"])  # nothing changed: one request
    assert again.exit_code == 0
    assert re.search(r"images: 0 fetched, 0 new, 0 updated; 1 request$", again.stdout, re.M), again.stdout
