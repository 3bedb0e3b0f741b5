"""One protocol for the entry index: the C scanner's table and the Python one answer alike.

A transcript asks its index how many entries there are, each entry's type, id and parent,
where the last entry with an id is (Pi's ``byId``) and the path up from an entry. These
tests ask both implementations the same questions on the same files, real files on disk,
and check the answers against what Pi's rules give (the later line wins, a loop is named).
They also hold the library to its shape: no ``os.fork`` anywhere, and the entry kinds and
id-carrying fields spelled in one module.
"""

from __future__ import annotations

import ast
import functools
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kurahi.errors import ParentCycleError
from kurahi.pi import Transcript, vocab
from kurahi.pi.read import native
from kurahi.pi.read.table import EntryTable, PyTable
from kurahi.testing import build_session

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/"}'
SRC = Path(__file__).resolve().parents[2] / "src" / "kurahi"


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """The syntax tree of a library module, parsed once for all the source checks here (they only read it)."""
    return ast.parse(path.read_text(), filename=str(path))


needs_c = pytest.mark.skipif(not native.available(), reason="the C scanner is not built (make install builds it)")


def _line(id_: Any, parent: Any, text: str) -> str:
    return json.dumps(
        {
            "type": "message",
            "id": id_,
            "parentId": parent,
            "timestamp": "2026-11-30T08:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1},
        }
    )


def _open(path: Path, monkeypatch: pytest.MonkeyPatch, *, c_scanner: bool) -> Transcript:
    monkeypatch.setattr(native, "ENABLED", c_scanner)
    return Transcript.open(path)


def _answers(table: EntryTable, probes: list[Any]) -> dict[str, Any]:
    n = len(table)
    return {
        "len": n,
        "rows": [table.row(k) for k in range(n)],
        "columns": (table.types(), table.ids(), table.parents()),
        "get": [table.get(p) for p in probes],
        "walks": [table.walk(k) for k in range(0, n, max(1, n // 50))] + [table.walk(n - 1)],
    }


@needs_c
def test_the_c_table_and_the_python_table_answer_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "tree.jsonl"
    build_session(p, entries=2000, seed=5, branch_chance=0.2, compact_every=300)
    with _open(p, monkeypatch, c_scanner=True) as by_c, _open(p, monkeypatch, c_scanner=False) as by_python:
        assert by_c._stored is not None, "a clean file is read by the C scanner alone"
        assert by_python._stored is None and isinstance(by_python._table, PyTable)
        ids = by_c.columns()[1]
        # Ids of the file, one that is absent, and values that are not strings: a Map finds none.
        probes = [*ids[::7], ids[-1], "absent", "", 5, None, True, msgspec.UNSET]
        assert _answers(by_c._table, probes) == _answers(by_python._table, probes)
        assert [by_c.index_of(x) for x in probes] == [by_python.index_of(x) for x in probes]
        assert by_c.id_positions() == by_python.id_positions()


@pytest.mark.parametrize("c_scanner", [True, False], ids=["c", "python"])
def test_a_repeated_id_resolves_to_its_later_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c_scanner: bool
) -> None:
    if c_scanner and not native.available():
        pytest.skip("the C scanner is not built")
    # "b" appears twice; Pi's byId keeps the later line, though the first is nearer the leaf.
    rows = [
        HEADER,
        _line("a", None, "root"),
        _line("b", "a", "early"),
        _line("c", "b", "leafish"),
        _line("b", None, "late"),
        _line("d", "c", "leaf"),
    ]
    p = tmp_path / "dup.jsonl"
    p.write_text("\n".join(rows) + "\n")
    with _open(p, monkeypatch, c_scanner=c_scanner) as t:
        assert t.index_of("b") == 3
        assert [e.data["message"]["content"] for e in t.path()] == ["late", "leafish", "leaf"]
        assert t.id_positions()["b"] == 3 and len(t.id_positions()) == 4


@pytest.mark.parametrize("c_scanner", [True, False], ids=["c", "python"])
def test_a_parent_loop_is_named_with_its_entries_and_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c_scanner: bool
) -> None:
    if c_scanner and not native.available():
        pytest.skip("the C scanner is not built")
    rows = [HEADER, _line("a", "c", "one"), _line("b", "a", "two"), _line("c", "b", "three"), _line("d", "c", "leaf")]
    p = tmp_path / "loop.jsonl"
    p.write_text("\n".join(rows) + "\n")
    with _open(p, monkeypatch, c_scanner=c_scanner) as t, pytest.raises(ParentCycleError) as exc:
        t.path()
    assert sorted(exc.value.cycle) == ["a", "b", "c"]
    assert "lines [" in str(exc.value) and "Pi would hang" in str(exc.value)


def test_ids_that_are_not_strings_match_as_a_javascript_map_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 1 and "1" and true are three keys; 1 and 1.0 are one. The C scanner hands such lines
    # to Python, so the transcript's index is the Python table whatever is built.
    rows = [
        HEADER,
        _line(1, None, "number"),
        _line("1", None, "string"),
        _line(True, None, "bool"),
        _line("x", 1.0, "x"),
    ]
    p = tmp_path / "odd-ids.jsonl"
    p.write_text("\n".join(rows) + "\n")
    with _open(p, monkeypatch, c_scanner=native.available()) as t:
        assert isinstance(t._table, PyTable)
        assert (t.index_of(1), t.index_of("1"), t.index_of(True), t.index_of(1.0)) == (0, 1, 2, 0)
        assert [e.data["message"]["content"] for e in t.path()] == ["number", "x"]


def _calls(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("fork", "forkpty"):
            out.append(ast.unparse(node))
        if isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name == "fork" for a in node.names):
            out.append("from os import fork")
    return out


def test_the_library_never_forks() -> None:
    # fork() copies only the calling thread: in a process with threads (a gateway, a pool) a
    # lock another thread holds stays held in the child for good.
    found = {
        str(path.relative_to(SRC)): calls for path in sorted(SRC.rglob("*.py")) if (calls := _calls(_parsed(path)))
    }
    assert found == {}, f"os.fork in the library: {found}"


def _code_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants that are not docstrings."""
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


# Modules that write sample data on purpose, spelled as Pi writes it (test builders).
_SAMPLE_WRITERS = {"testing/sessions.py", "testing.py", "testing/conformance.py"}


def test_id_fields_and_the_leaf_marker_are_spelled_only_in_the_vocabulary() -> None:
    owned = {vocab.FIRST_KEPT_ENTRY_ID, vocab.TARGET_ID, vocab.FROM_ID, vocab.LEAF_MARKER_TYPE}
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if rel == "pi/vocab.py" or rel in _SAMPLE_WRITERS:
            continue
        hits = [(line, s) for line, s in _code_strings(_parsed(path)) if s in owned]
        if hits:
            found[rel] = hits
    assert found == {}, f"spell these through kurahi.pi.vocab: {found}"


def _type_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """Kind names compared with an entry's type: ``x.type == "..."`` or ``d.get("type") == "..."``."""

    def is_type(node: ast.expr) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "type":
            return True
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and bool(node.args)
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "type"
        )

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and is_type(node.left):
            for right in node.comparators:
                if isinstance(right, ast.Constant) and right.value in vocab.KINDS:
                    out.append((node.lineno, right.value))
    return out


@pytest.mark.parametrize("room", sorted(p.name for p in SRC.iterdir() if p.is_dir() and p.name != "__pycache__"))
def test_entry_kinds_are_compared_through_the_vocabulary(room: str) -> None:
    found = {}
    for path in sorted((SRC / room).rglob("*.py")):
        hits = _type_comparisons(_parsed(path))
        if hits:
            found[str(path.relative_to(SRC))] = hits
    assert found == {}, f"compare entry types with kurahi.pi.vocab's names: {found}"


def test_the_vocabulary_names_every_kind_and_id_field_once() -> None:
    assert len(vocab.KINDS) == 13
    assert ("id", "parentId", *vocab.REFERENCE_FIELDS) == vocab.ID_FIELDS
    assert set(vocab.REFERENCE_FIELDS) == {"targetId", "firstKeptEntryId", "fromId"}
    assert set(vocab.__all__) == {n for n in dir(vocab) if n.isupper()}
