"""What a runtime is stays in its room: issue 37's bars, held by reading every module outside ``kurahi.runtimes``.

Outside the runtime rooms no module may name OpenClaw's store file, hold a SQL statement against
a table of OpenClaw's store, or decide anything by a runtime's version or view name (a
comparison, a ``startswith``, a membership test, or a table keyed by such names). Docstrings
and messages may mention them; only code that decides is held.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import kurahi
from kurahi.runtimes.openclaw.sqlite.schema import KNOWN_OBJECTS

PACKAGE = Path(kurahi.__file__).parent
TABLES = sorted({name for (kind, name) in KNOWN_OBJECTS if kind == "table"} | {t for t, _ in KNOWN_OBJECTS.values()})
SQL = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b.*\b(" + "|".join(map(re.escape, TABLES)) + r")\b",
    re.IGNORECASE | re.DOTALL,
)
NAME = re.compile(r"(openclaw|pi|claude)-\d[\w.]*|\d{4}\.\d{1,2}(\.\d+)?\.?")
"""A runtime's view or version name (``openclaw-2026.9``, ``pi-1.6``), or an OpenClaw release (``2026.5.``)."""
STORE_FILE = "openclaw-agent.sqlite"


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
        # An attribute's docstring: a string statement right after an assignment.
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                for a, b in itertools.pairwise(stmts):
                    assigned = isinstance(a, (ast.Assign, ast.AnnAssign))
                    if assigned and isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant):
                        out.add(id(b.value))
    return out


def _names(node: ast.AST) -> Iterator[str]:
    """String constants a decision is made against: the node itself, or the items of a literal container."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for item in node.elts:
            yield from _names(item)
    elif isinstance(node, ast.Dict):
        for key in node.keys:
            if key is not None:
                yield from _names(key)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set"):
        for arg in node.args:
            yield from _names(arg)


def findings(source: str, where: str) -> list[str]:
    """What in ``source`` says which runtime it is (see the module docstring)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    out: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if STORE_FILE in node.value:
                out.append(f"{where}:{line}: names {STORE_FILE}")
            if SQL.search(node.value):
                out.append(f"{where}:{line}: SQL against OpenClaw's store: {node.value[:60]!r}")
        decided: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            decided = [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith", "get") and node.args:
                decided = [node.args[0]]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Dict, ast.Set, ast.Call)):
            decided = [node.value]  # a table keyed by runtime names
        for part in decided:
            for text in _names(part):
                if NAME.fullmatch(text):
                    out.append(f"{where}:{line}: decides by the runtime name {text!r}")
    return out


def outside_modules() -> Iterator[tuple[str, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if not rel.startswith("runtimes/"):
            yield rel, path.read_text(encoding="utf-8")


def test_no_module_outside_the_runtime_rooms_says_which_runtime_it_is() -> None:
    found = [f for rel, source in outside_modules() for f in findings(source, rel)]
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        'DB = root / "agents" / a / "agent" / "openclaw-agent.sqlite"\n',
        'con.execute("SELECT count(*) FROM transcript_events WHERE session_id = ?", (sid,))\n',
        'if runtime == "openclaw-2026.9":\n    pass\n',
        'if version.startswith("2026.5."):\n    pass\n',
        'ok = runtime in ("pi", "openclaw-2026.5")\n',
        '_TABLE = {"openclaw-2026.9": 1, "pi": 2}\n',
        'x = frozenset({"pi-1.6", "pi-0.73"})\n',
    ],
)
def test_each_way_of_saying_it_is_caught(source: str) -> None:
    assert findings(source, "planted.py")


@pytest.mark.parametrize(
    "source",
    [
        '"""OpenClaw 2026.9 keeps its sessions in openclaw-agent.sqlite, SELECT from transcript_events."""\n',
        'def f():\n    """Judged by openclaw-2026.9\'s view."""\n',
        'raise UsageError(f"{root}: OpenClaw 2026.9 refuses it")\n',
        "if view.after_last_reset:\n    pass\n",
    ],
)
def test_words_that_decide_nothing_are_left_alone(source: str) -> None:
    assert findings(source, "planted.py") == []
