"""Above ``store``, code asks a backend what it can do, never what it is (issue 37), checked on the source.

A module of a room above ``kurahi.store`` (:mod:`kurahi._rooms`) must not

* import a backend's own module or class (``kurahi.store.file_backend``,
  ``kurahi.store.memory_backend``, ``kurahi.store.postgres.backend``, or ``PostgresBackend``
  from ``kurahi.store.postgres``), in any of the ways ``tests/test_layers.py`` counts (a
  lazy loader's string included): a home's default store comes from
  :func:`kurahi.store.open.default_backend`, a database's class from
  :func:`kurahi.store.open.postgres_backend`;
* branch on ``Backend.kind``: compare it, match on it, look it up, or test it. Printing it
  is fine (it is a label); deciding goes through the capabilities on
  :class:`kurahi.store.base.Backend` (``shared``, ``fences_writers``, ``persistent``,
  ``directory``).

A ``.kind`` counts as a backend's when the expression it is read from names a backend
(``backend.kind``, ``gateway.backend.kind``, ``self._backend.kind``) or when it is compared
with a backend's label (``"file"``, ``"memory"``, ``"postgres"``) whatever it is read from.
Other objects' ``kind`` (a CLI option's, a boundary's, a rescue target's) are left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from kurahi._rooms import ROOMS

SRC = Path(__file__).resolve().parents[2] / "src" / "kurahi"

FORBIDDEN_MODULES = ("kurahi.store.file_backend", "kurahi.store.memory_backend", "kurahi.store.postgres.backend")
FORBIDDEN_NAMES = {"FileBackend", "MemoryBackend", "PostgresBackend", "FileAgentStore", "FileTranscripts"}
BACKEND_LABELS = {"file", "memory", "postgres"}

# The rooms the store is built on and the store itself may know its backends; the package
# root's modules sit below every room and import no store at all (tests/test_layers.py).
_NAMES = [name for name, _ in ROOMS]
_BELOW = tuple(f"{name}/" for name in _NAMES[: _NAMES.index("store") + 1])


def _above_store() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if "/" in rel and not rel.startswith(_BELOW):
            yield rel, ast.parse(path.read_text(encoding="utf-8"), filename=rel)


def _forbidden_module(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES)


def backend_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Every import of a backend's own module or class in ``tree``: (line, what)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if _forbidden_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _forbidden_module(node.module):
                found.append((node.lineno, node.module))
            elif node.module.startswith("kurahi."):
                found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names if a.name in FORBIDDEN_NAMES]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _forbidden_module(node.value):
            found.append((node.lineno, node.value))  # a lazy loader's map, import_module("...")
    return sorted(found)


def _names_a_backend(expr: ast.expr) -> bool:
    return "backend" in ast.unparse(expr).lower()


def _backend_kind(expr: ast.expr, labels_nearby: bool) -> bool:
    return isinstance(expr, ast.Attribute) and expr.attr == "kind" and (labels_nearby or _names_a_backend(expr.value))


def _is_label(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant):
        return expr.value in BACKEND_LABELS
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_label(e) for e in expr.elts)
    return False


def kind_branches(tree: ast.AST) -> list[tuple[int, str]]:
    """Every place in ``tree`` that decides something on a backend's ``kind``: (line, the code)."""
    found: list[tuple[int, str]] = []

    def check(expr: ast.expr | None, node: ast.AST, labels_nearby: bool = False) -> None:
        if expr is not None and _backend_kind(expr, labels_nearby):
            found.append((getattr(node, "lineno", 0), ast.unparse(node)))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            labels = any(_is_label(e) for e in operands)
            for e in operands:
                check(e, node, labels)
        elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            check(node.test, node.test)
        elif isinstance(node, ast.BoolOp):
            for e in node.values:
                check(e, node)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            check(node.operand, node)
        elif isinstance(node, ast.Match):
            check(node.subject, node.subject)
        elif isinstance(node, ast.Subscript):
            check(node.slice, node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            args = node.args
            kind = len(args) >= 2 and isinstance(args[1], ast.Constant) and args[1].value == "kind"
            if kind and _names_a_backend(args[0]):
                found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_no_module_above_store_imports_a_backend_class() -> None:
    bad = [f"{rel}:{line} imports {what}" for rel, tree in _above_store() for line, what in backend_imports(tree)]
    assert not bad, (
        "above kurahi.store, ask kurahi.store.open for a backend (default_backend, open_backend) and "
        "its capabilities for what it can do: " + "; ".join(bad)
    )


def test_no_module_above_store_branches_on_the_backend_kind() -> None:
    bad = [f"{rel}:{line}: {code}" for rel, tree in _above_store() for line, code in kind_branches(tree)]
    assert not bad, (
        "Backend.kind is a label to print; decide on a capability (shared, fences_writers, persistent, "
        "directory) instead: " + "; ".join(bad)
    )


# The checks themselves: each catches what it is for and lets a label through.


def _parse(src: str) -> ast.Module:
    return ast.parse(src)


def test_the_import_check_catches_every_way_in() -> None:
    src = """
from kurahi.store.file_backend import FileBackend
import kurahi.store.memory_backend
from kurahi.store.postgres import PostgresBackend
from kurahi.store.postgres.backend import PostgresAgentStore
_WHERE = {"X": "kurahi.store.file_backend"}
from kurahi.store.open import default_backend
from kurahi.store.postgres.db import Database
"""
    assert [line for line, _ in backend_imports(_parse(src))] == [2, 3, 4, 5, 6]


def test_the_kind_check_catches_branches_and_leaves_labels() -> None:
    src = """
if backend.kind == "file": pass
x = backend.kind != "file"
y = store.kind in ("memory", "postgres")
z = {"file": 1}[gateway.backend.kind]
match self.backend.kind:
    case "file": pass
w = getattr(backend, "kind") == "file"
msg = f"the {backend.kind} store"
out = {"backend": gateway.backend.kind}
ok = o.kind == "flag" or target.kind == "pi"
"""
    assert [line for line, _ in kind_branches(_parse(src))] == [2, 3, 4, 5, 6, 8]
