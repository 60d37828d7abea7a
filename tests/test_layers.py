"""The layers, read from the source: tool runtime -> service core -> fronts -> launcher.

Every import of every module under `server/cleveragents` (module level and inside functions;
not those under `if TYPE_CHECKING:`, which never run) is an edge. The rules:

- a front (`daemon`, `acp`, `cli`, `chat`) imports no other front;
- nothing below the fronts (the core, the tool runtime, providers, MCP, ...) imports a front
  or the launcher;
- the tool runtime (`tool/`) imports nothing of ours outside itself;
- no two modules import each other, directly or around a circle.

Only the launcher (`launcher.py`) and the `__main__` modules may start a front.

On top of those rules, `RANKS` places every part of the package (ARCHITECTURE.md draws it):
a module imports only parts of a lower rank, or its own part. So a lazy import inside a
function that reaches up (the command wall asking the service for the data folder, say) fails
as surely as one at the top of the file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "server" / "cleveragents"
FRONTS = ("cleveragents.daemon", "cleveragents.acp", "cleveragents.cli", "cleveragents.chat")
LAUNCHER = "cleveragents.launcher"
TOOL_RUNTIME = "cleveragents.tool"

Graph = dict[str, set[str]]

# Each part of the package and its rank: a module imports only lower ranks (or its own part).
# The longest matching name wins; `__main__` modules rank with the launcher.
RANKS: dict[str, int] = {
    "cleveragents": 0,  # the package itself: its version
    "cleveragents.paths": 0,  # the data folder
    "cleveragents.settings_table": 0,  # every setting: variable, levels, default, doc
    "cleveragents.tool": 0,  # the runtime: loop, runner, registry, policy, events
    "cleveragents.providers": 1,  # LLM callers
    "cleveragents.workspace": 1,  # sandbox wall, built-in tools, command wall
    "cleveragents.toolsets": 2,  # registries from modules and plugins
    "cleveragents.assembly": 2,  # a runtime from its parts
    "cleveragents.mcp": 3,  # MCP servers' tools
    "cleveragents.service": 4,  # the core: runs, settings, history, checkpoints, trust
    "cleveragents.jsonrpc_errors": 5,  # kind -> code, for both JSON-RPC fronts
    "cleveragents.jsonrpc_io": 5,  # framing both JSON-RPC fronts share
    "cleveragents.display": 5,  # the terminal's view of a run
    "cleveragents.setting_flags": 5,  # the command line's setting flags (`run`, `chat`)
    "cleveragents.batch": 5,  # suites of runs over the core (`cleveragents batch`)
    "cleveragents.protocol": 6,  # wire types and the one converter, shared by the fronts
    "cleveragents.daemon": 7,
    "cleveragents.acp": 7,
    "cleveragents.cli": 7,
    "cleveragents.chat": 7,  # the terminal session (`cleveragents` alone, `cleveragents chat`)
    "cleveragents.launcher": 8,
}
LAUNCHER_RANK = RANKS[LAUNCHER]

# Inside a part, the packages split into modules of one job each: each module's rank among its
# siblings. A module imports only siblings of a lower rank (the package's `__init__`, which
# re-exports them, is above them all), so the seams stay where the split put them.
INNER_RANKS: dict[str, dict[str, int]] = {
    "cleveragents.service.history": {
        "schema": 0,  # the migrations
        "records": 0,  # what the history hands back
        "rows": 1,  # values as the columns hold them
        "owners": 0,  # whether a run's process is gone
        "queries": 2,  # reads over one connection
        "store": 3,  # connections, transactions, writes
    },
    "cleveragents.service.checkpoints": {
        "records": 0,  # checkpoints, restores, errors
        "files": 0,  # heavy folders, modes, obstacles, sizes, the lock
        "git": 1,  # the shadow repository and the clean git runner
        "catalog": 1,  # the SQLite catalog
        "state": 1,  # what a snapshot holds beyond git's view
        "git_folder_files": 1,  # files inside a `.git` the file tools changed (opt-in)
        "repository": 2,  # shadow repositories, locks, the catalog's reads
        "scanning": 3,  # what is in a folder
        "snapshots": 4,  # indexes, trees, commits, pins
        "comparing": 5,  # what changed between two states
        "restoring": 6,  # a folder put back as a checkpoint holds it
        "store": 7,  # CheckpointStore: the public face, pruning
    },
    "cleveragents.protocol.wire": {
        "common": 0,  # the version, the literals, `doc`
        "initialize": 1,  # `initialize`'s types: all the first request builds
        "shapes": 1,  # shapes several methods share
        "run": 2,  # `run` and its notifications, `cancel`, `tools`, `listCommands`
        "history": 2,  # `runs`, `getRun`, `restore`
        "server_requests": 1,  # the daemon's requests to the client
    },
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                yield from _imports(child)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def import_graph(root: Path) -> Graph:
    """Module -> the modules of the package it imports."""
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    top = root.name
    graph: Graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                bases = [alias.name for alias in node.names]
                candidates = bases
            else:
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                else:
                    base = node.module or ""
                # `from pkg import sub` imports the module pkg.sub when there is one.
                candidates = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base
                    for alias in node.names
                ]
            for target in candidates:
                while target and target not in paths:
                    target = target.rpartition(".")[0]
                if target.split(".")[0] == top and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def front_of(module: str) -> str | None:
    return next((front for front in FRONTS if _within(module, front)), None)


def is_launcher(module: str) -> bool:
    return module == LAUNCHER or module.endswith(".__main__") or module == "cleveragents.__main__"


def layer_violations(graph: Graph) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        if is_launcher(module):
            continue
        own_front = front_of(module)
        for target in sorted(targets):
            target_front = front_of(target)
            if is_launcher(target):
                problems.append(f"{module} imports the launcher {target}")
            elif own_front is not None and target_front not in (None, own_front):
                problems.append(f"front {module} imports another front: {target}")
            elif own_front is None and target_front is not None:
                problems.append(f"{module} (below the fronts) imports the front {target}")
            elif _within(module, TOOL_RUNTIME) and not _within(target, TOOL_RUNTIME):
                problems.append(f"the tool runtime's {module} imports {target}")
    return problems


def part_of(module: str) -> str | None:
    """The `RANKS` entry a module belongs to (None: it has no rank yet)."""
    # The package's own entry is its `__init__` alone, not everything in it.
    matches = [part for part in RANKS if _within(module, part) and ("." in part or module == part)]
    return max(matches, key=len) if matches else None


def rank_of(module: str) -> int | None:
    if module.endswith(".__main__"):
        return LAUNCHER_RANK + 1
    part = part_of(module)
    return None if part is None else RANKS[part]


def rank_violations(graph: Graph) -> list[str]:
    """Imports of a part at the same or a higher rank (its own part aside), and modules
    with no rank."""
    problems = []
    for module, targets in sorted(graph.items()):
        rank = rank_of(module)
        if rank is None:
            problems.append(f"{module} has no rank in RANKS")
            continue
        for target in sorted(targets):
            target_rank = rank_of(target)
            if target_rank is None or part_of(target) == part_of(module):
                continue  # reported as a module of its own; a part's insides are its own
            if target_rank >= rank:
                problems.append(f"{module} (rank {rank}) imports {target} (rank {target_rank})")
    return problems


def inner_rank_violations(graph: Graph, inner_ranks: dict[str, dict[str, int]]) -> list[str]:
    """Within each package of `inner_ranks`: imports of a sibling at the same or a higher
    rank, and modules with no rank."""
    problems = []
    for package, ranks in sorted(inner_ranks.items()):
        for module, targets in sorted(graph.items()):
            if module == package or not _within(module, package):
                continue
            name = module[len(package) + 1 :].split(".")[0]
            if name not in ranks:
                problems.append(f"{module} has no rank in INNER_RANKS[{package!r}]")
                continue
            for target in sorted(targets):
                if target == package:
                    problems.append(f"{module} imports its package's __init__ {package}")
                    continue
                if not _within(target, package):
                    continue
                sibling = target[len(package) + 1 :].split(".")[0]
                if sibling != name and ranks.get(sibling, len(ranks)) >= ranks[name]:
                    problems.append(
                        f"{module} (rank {ranks[name]}) imports {target} "
                        f"(rank {ranks.get(sibling)})"
                    )
    return problems


def cycles(graph: Graph) -> list[list[str]]:
    """Every circle of imports (one per strongly connected group), as a path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def write_tree(root: Path, files: dict[str, str]) -> None:
    """A synthetic package: each file's path under `root` and its text."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(PACKAGE_DIR)


def test_the_graph_is_read_from_the_source(graph: Graph) -> None:
    assert "cleveragents.service.runs" in graph["cleveragents.daemon.runs"]
    assert "cleveragents.service.runs" in graph["cleveragents.acp.agent"]
    assert "cleveragents.acp.server" in graph[LAUNCHER]  # a lazy import counts
    assert "cleveragents.jsonrpc_io" in graph["cleveragents.acp.transport"]


def test_no_front_reaches_into_another_and_nothing_below_reaches_up(graph: Graph) -> None:
    assert layer_violations(graph) == []


def test_every_module_imports_only_lower_ranks(graph: Graph) -> None:
    assert rank_violations(graph) == []


def test_split_packages_import_only_lower_siblings(graph: Graph) -> None:
    assert inner_rank_violations(graph, INNER_RANKS) == []


def test_the_sibling_order_catches_an_import_up(tmp_path: Path) -> None:
    root = tmp_path / "cleveragents"
    write_tree(
        root,
        {
            "__init__.py": "",
            "store/__init__.py": "from .writes import W\n",
            "store/schema.py": "def f():\n    from .writes import W\n",  # lazy, still caught
            "store/writes.py": "from .schema import S\n",
            "store/extra.py": "",
        },
    )
    ranks = {"cleveragents.store": {"schema": 0, "writes": 1}}
    assert inner_rank_violations(import_graph(root), ranks) == [
        "cleveragents.store.extra has no rank in INNER_RANKS['cleveragents.store']",
        "cleveragents.store.schema (rank 0) imports cleveragents.store.writes (rank 1)",
    ]


def test_no_import_circles(graph: Graph) -> None:
    assert cycles(graph) == []


def test_the_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    root = tmp_path / "cleveragents"
    files = {
        "__init__.py": "",
        "launcher.py": "def main():\n    from .daemon import server\n",
        "daemon/__init__.py": "",
        "daemon/server.py": "from ..acp import agent\nfrom ..service import runs\n",
        "acp/__init__.py": "",
        "acp/agent.py": "",
        "service/__init__.py": "",
        "service/runs.py": "def f():\n    from cleveragents.daemon.server import x\n",
        "tool/__init__.py": "",
        "tool/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from .b import B\nfrom ..service import runs\n",
        "tool/b.py": "from . import c\n",
        "tool/c.py": "from .b import thing\n",
    }
    write_tree(root, files)
    synthetic = import_graph(root)
    assert "cleveragents.tool.b" not in synthetic["cleveragents.tool.a"]  # TYPE_CHECKING only
    assert layer_violations(synthetic) == [
        "front cleveragents.daemon.server imports another front: cleveragents.acp.agent",
        "cleveragents.service.runs (below the fronts) imports the front cleveragents.daemon.server",
        "the tool runtime's cleveragents.tool.a imports cleveragents.service.runs",
    ]
    assert cycles(synthetic) == [
        ["cleveragents.daemon.server", "cleveragents.service.runs"],
        ["cleveragents.tool.b", "cleveragents.tool.c"],
    ]


def test_a_lazy_import_that_reaches_up_is_caught(tmp_path: Path) -> None:
    root = tmp_path / "cleveragents"
    files = {
        "__init__.py": "",
        "paths.py": "",
        "workspace/__init__.py": "",
        # Inside a function, as the command wall once asked the service for the data folder.
        "workspace/command_policy.py": "def data():\n    from cleveragents.service.history "
        "import default_history_path\n    return default_history_path()\n",
        "workspace/sandbox.py": "from ..paths import x\nfrom . import command_policy\n",
        "service/__init__.py": "",
        "service/history.py": "from ..workspace import sandbox\n",
        "cli.py": "from .acp import agent\n",
        "acp/__init__.py": "",
        "acp/agent.py": "",
        "odd.py": "",
    }
    write_tree(root, files)
    assert rank_violations(import_graph(root)) == [
        "cleveragents.cli (rank 7) imports cleveragents.acp.agent (rank 7)",
        "cleveragents.odd has no rank in RANKS",
        "cleveragents.workspace.command_policy (rank 1) imports cleveragents.service.history "
        "(rank 4)",
    ]
