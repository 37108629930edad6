"""The layout tells the truth: the import graph of ``mirror/`` has no cycles, and the local test
site stands apart, imported only by the CLI, the demo, the tests and the benchmarks.

Every import counts, at the top of a module or inside a function, and those under
``TYPE_CHECKING`` too: a cycle a type checker needs is still a knot a reader has to untie.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mirror"
LOCALSITE = "mirror.localsite"
# Who may import the local site besides itself: the commands that run it.
MAY_IMPORT_LOCALSITE = {"mirror.cli", "mirror.commands.demo"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``mirror`` that ``name`` imports (a name imported from a package counts as
    its submodule when there is one; a module's own ancestors do not count)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = {f"{target}.{alias.name}" for alias in node.names} & known
            found |= subs or {target}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {t for t in found if t in known and t != name and not name.startswith(t + ".")}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(name, path, set(found)) for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_import_graph_has_no_cycles(graph):
    assert cycles(graph) == []


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_the_cli_the_demo_tests_and_benchmarks_import_the_local_site(graph):
    outside = {name: sorted(t for t in targets if t == LOCALSITE or t.startswith(LOCALSITE + "."))
               for name, targets in graph.items()
               if not (name == LOCALSITE or name.startswith(LOCALSITE + ".")) and name not in MAY_IMPORT_LOCALSITE}
    assert {name: found for name, found in outside.items() if found} == {}


def test_the_fence_sees_an_import_from_inside_a_function(tmp_path):
    module = tmp_path / "mirror" / "serve" / "x.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from ..localsite.board import editor\n")
    assert imports_of("mirror.serve.x", module, {"mirror.localsite.board", "mirror.localsite.board.editor"}) == {
        "mirror.localsite.board.editor"}


@pytest.mark.parametrize("layer, forbidden", [
    ("mirror.store", ("mirror.api", "mirror.sync", "mirror.download", "mirror.serve", "mirror.browse",
                      "mirror.dump", "mirror.follow")),
    # The follower is a reader too: it feeds the store's writers and walks with the crawlers' queries.
    ("mirror.follow", ("mirror.serve", "mirror.browse", "mirror.dump", "mirror.download", "mirror.commands")),
    ("mirror.sync", ("mirror.follow",)),
    # The dump reader is a way in beside the crawlers: it feeds the store's writers, never the crawlers.
    ("mirror.dump", ("mirror.sync", "mirror.serve", "mirror.browse")),
    ("mirror.serve", ("mirror.api", "mirror.sync")),
    ("mirror.api", ("mirror.sync", "mirror.store", "mirror.serve", "mirror.browse", "mirror.follow")),
    # Search reads today's board; the past is a reader beside it that builds on it, chosen by the callers.
    ("mirror.search", ("mirror.asof", "mirror.serve", "mirror.browse")),
])
def test_data_flows_one_way(graph, layer, forbidden):
    """api -> sync -> store (and dump -> store), then store -> download / serve / browse: no layer
    imports one above it."""
    wrong = {name: sorted(t for t in targets if t.startswith(forbidden))
             for name, targets in graph.items() if name == layer or name.startswith(layer + ".")}
    assert {name: found for name, found in wrong.items() if found} == {}


def test_only_the_commands_run_the_follower(graph):
    """``mirror follow`` is a command's: no layer below the CLI reaches for the firehose."""
    outside = {name: sorted(t for t in targets if t == "mirror.follow" or t.startswith("mirror.follow."))
               for name, targets in graph.items()
               if not (name.startswith("mirror.follow") or name.startswith("mirror.commands."))}
    assert {name: found for name, found in outside.items() if found} == {}
