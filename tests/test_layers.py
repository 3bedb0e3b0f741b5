"""The rooms' order (:mod:`kurahi._rooms`) holds for every import, and no import goes round in a cycle.

Every import counts: at the top of a module, inside a function, under ``TYPE_CHECKING``, a relative
one (``from ..lineage import path``, resolved against the importer's package; ruff's ``TID252``
bans them too, but the walk does not rely on it), and a module named in a string (a lazy loader's
map, ``importlib.import_module``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

import pytest

import kurahi
from kurahi._rooms import ROOMS

PACKAGE = Path(kurahi.__file__).parent
ORDER = {name: rank for rank, (name, _) in enumerate(ROOMS, start=1)}


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["kurahi", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _named(name: str, known: dict[str, Path]) -> str | None:
    """The module ``name`` is or lies in (``kurahi.pi.transcript.Entry`` is in ``kurahi.pi.transcript``)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _base(importer: str, known: dict[str, Path], level: int) -> str | None:
    """The package a relative import of ``level`` dots names, seen from the module ``importer``.

    One dot is the importer's own package: a package's ``__init__`` is that package itself, a
    plain module's is its parent. Each further dot goes one package up; past the top, ``None``
    (Python refuses such an import).
    """
    package = importer if known[importer].name == "__init__.py" else importer.rpartition(".")[0]
    parts = package.split(".") if package else []
    if level - 1 >= len(parts):
        return None
    return ".".join(parts[: len(parts) - (level - 1)])


def imports(source: str, known: dict[str, Path], importer: str) -> set[str]:
    """The Kurahi modules the source of the module ``importer`` imports, in any of the ways the docstring lists."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names: Iterable[str] = ()
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            # `from X import a` names X.a (a submodule, or a name in X: `_named` cuts it back to X);
            # `from . import a` and `from ..X import a` are the same, X found from the importer's package.
            base = node.module if node.level == 0 else _base(importer, known, node.level)
            if base is not None and node.level > 0 and node.module:
                base = f"{base}.{node.module}"
            names = [f"{base}.{a.name}" for a in node.names] if base else []
        elif isinstance(node, ast.Dict):  # a lazy loader's map: name -> module
            names = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        elif isinstance(node, ast.Call) and _called(node) in ("import_module", "__import__") and node.args:
            first = node.args[0]
            names = [first.value] if isinstance(first, ast.Constant) and isinstance(first.value, str) else []
        for name in names:
            if name == "kurahi" or name.startswith("kurahi."):
                target = _named(name, known)
                if target is not None:
                    out.add(target)
    return out


@functools.cache
def _graph() -> dict[str, frozenset[str]]:
    known = modules()
    return {m: frozenset(imports(p.read_text(encoding="utf-8"), known, m) - {m}) for m, p in known.items()}


def graph() -> dict[str, set[str]]:
    """Each module and the modules it imports (read once per run; each caller gets its own copy)."""
    return {m: set(targets) for m, targets in _graph().items()}


def room(module: str) -> str | None:
    """The room a module is in; ``None`` for the package root's own modules."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ORDER) else None


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a room above the importer's (the root's modules sit below every room)."""
    bad = []
    for a, targets in edges.items():
        for b in targets:
            ra, rb = room(a), room(b)
            if rb is not None and ra != rb and (ra is None or ORDER[rb] > ORDER[ra]):
                bad.append(f"{a} imports {b} ({rb} is above {ra or 'the package root'})")
    return sorted(bad)


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        group.add(m)
                        if m == node:
                            break
                    if len(group) > 1:
                        found.append(group)
    return found


def test_every_room_is_a_subpackage_and_every_subpackage_a_room() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(ORDER)


def test_no_module_imports_a_room_above_its_own() -> None:
    assert upward(graph()) == []


def test_no_import_goes_round_in_a_cycle() -> None:
    assert [sorted(c) for c in cycles(graph())] == [], "import cycles"


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("kurahi.pi.tree", "from kurahi.store.session import Session\n"),
        ("kurahi.js.values", "def f():\n    import kurahi.cli\n"),
        (
            "kurahi.context.tokens",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kurahi.lineage import path\n",
        ),
        ("kurahi.fs.locks", "_WHERE = {'X': 'kurahi.gateway.app'}\n"),
        ("kurahi.errors", "from kurahi.pi import vocab\n"),
    ],
)
def test_an_upward_import_of_any_kind_is_caught(importer: str, source: str) -> None:
    edges = graph()
    edges[importer] = edges[importer] | imports(source, modules(), importer)
    assert len(upward(edges)) == 1


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("kurahi.store.catalog", "from ..lineage import path\n"),
        ("kurahi.store.catalog", "from .. import lineage\n"),
        ("kurahi", "from . import cli\n"),  # a package's `.` is the package itself: here the root
        ("kurahi.errors", "from . import resident\n"),  # a plain module's `.` is its parent
        ("kurahi.store.postgres.backend", "from ...cli import main\n"),
        ("kurahi.pi.tree", "def f():\n    from ..context import tokens\n    return tokens\n"),
        ("kurahi.store.audit", "from ...lifecycle.rescue import find_losses\n"),  # `...` from a package two down
    ],
)
def test_an_upward_relative_import_is_caught(importer: str, source: str) -> None:
    edges = graph()
    edges[importer] = edges[importer] | imports(source, modules(), importer)
    assert len(upward(edges)) == 1, upward(edges)


@pytest.mark.parametrize(
    ("importer", "source", "resolved"),
    [
        ("kurahi.store.catalog", "from ..lineage import path\n", {"kurahi.lineage.path"}),
        ("kurahi.store.catalog", "from . import session\n", {"kurahi.store.session"}),
        ("kurahi.store", "from . import catalog\n", {"kurahi.store.catalog"}),
        ("kurahi.store.audit", "from .. import record_log\n", {"kurahi.store.record_log"}),
        ("kurahi.store.postgres.backend", "from ...cli import main\n", {"kurahi.cli"}),
        ("kurahi.store.postgres.backend", "from ..session import Session\n", {"kurahi.store.session"}),
        ("kurahi.store.postgres.backend", "from ...pi import vocab, tree\n", {"kurahi.pi.vocab", "kurahi.pi.tree"}),
        ("kurahi.store.postgres.backend", "from .... import os\n", set()),  # past the top: Python refuses it
    ],
)
def test_a_relative_import_is_resolved_against_the_importers_package(
    importer: str, source: str, resolved: set[str]
) -> None:
    assert imports(source, modules(), importer) == resolved


@pytest.mark.parametrize(
    ("importer", "source"),
    [
        ("kurahi.store.postgres.backend", "from ..session import Session\n"),  # its own room
        ("kurahi.store.catalog", "from ..pi import vocab\n"),  # a room below
        ("kurahi.cli.rescue", "def f():\n    from ..lineage import draw\n    return draw\n"),
    ],
)
def test_a_relative_import_that_is_not_upward_is_not_reported(importer: str, source: str) -> None:
    edges = graph()
    added = imports(source, modules(), importer)
    assert added - edges[importer], "the test should add an edge the module does not have yet"
    edges[importer] = edges[importer] | added
    assert upward(edges) == []


def test_a_cycle_inside_a_room_is_caught() -> None:
    edges = graph()
    edges["kurahi.pi.vocab"] = edges["kurahi.pi.vocab"] | {"kurahi.pi.transcript"}
    assert any({"kurahi.pi.vocab", "kurahi.pi.transcript"} <= c for c in cycles(edges))
