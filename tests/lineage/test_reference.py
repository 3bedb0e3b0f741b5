"""The reference projection reads every line in full, even though it keeps only three keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kurahi.context.files import project_file
from kurahi.context.reference import reference_projection
from kurahi.errors import CheckError, NotASessionError
from kurahi.lineage.check import check, messages_sha256
from support.cli_probe import run_main
from support.peer import PiPeer

HEADER = '{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/"}'


def _msg(i: int, parent: str | None, content: str) -> str:
    return json.dumps(
        {
            "type": "message",
            "id": f"e{i}",
            "parentId": parent,
            "timestamp": "2026-11-30T08:00:00.000Z",
            "message": {"role": "user", "content": content, "timestamp": 1},
        }
    )


def test_a_line_broken_deep_inside_is_dropped(tmp_path: Path) -> None:
    # The three keys parse; the damage sits in the content, after them. JSON.parse refuses
    # the line, so Pi's leaf is the entry before it.
    broken = '{"type":"message","id":"e3","parentId":"e2","message":{"role":"user","content":["ok",]}}'
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([HEADER, _msg(1, None, "one"), _msg(2, "e1", "two"), broken]) + "\n")
    ref = reference_projection(p)
    assert [m["content"] for m in ref.messages] == ["one", "two"]
    assert messages_sha256(ref.messages) == messages_sha256(project_file(p).context.messages)


def test_lines_msgspec_refuses_are_read_by_the_standard_library(tmp_path: Path) -> None:
    # A lone surrogate escape: JSON.parse takes it, msgspec does not.
    p = tmp_path / "t.jsonl"
    lone = _msg(2, "e1", "x").replace('"x"', '"\\ud800"')
    p.write_text("\n".join([HEADER, _msg(1, None, "one"), lone, "[1, 2]", _msg(3, "e2", "three")]) + "\n")
    ref = reference_projection(p)
    assert [m["content"] for m in ref.messages] == ["one", "\ud800", "three"]
    assert messages_sha256(ref.messages) == messages_sha256(project_file(p).context.messages)


# Pi 1.6.0 hands each line to JSON.parse untrimmed and skips lines blank in JavaScript's sense
# (trim(): a BOM goes, \x1f stays); 0.73.1 trimmed the whole file first. The reference reads
# as 1.6.0; where 1.6.0 refuses the file (the header line spoiled), so does the reference.
_M1, _M2 = _msg(1, None, "one"), _msg(2, "e1", "two")
EDGES = {
    "bom_before_the_header": "\ufeff" + "\n".join([HEADER, _M1, _M2]) + "\n",
    "unit_separator_after_the_last_line": "\n".join([HEADER, _M1, _M2]) + "\x1f",
    "unit_separator_line_at_the_end": "\n".join([HEADER, _M1, _M2]) + "\n\x1f\n",
    "no_break_spaces_around": "\u00a0\n\u00a0" + "\n".join([HEADER, _M1, _M2]) + "\u00a0\n\u3000",
    "no_break_space_lines_around": "\u00a0\n" + "\n".join([HEADER, _M1, _M2]) + "\n\u3000",
    "line_separator_after_the_last_line": "\n".join([HEADER, _M1, _M2]) + "\u2028",
    "unit_separator_line_first": "\x1f\n  " + "\n".join([HEADER, _M1, _M2]) + "\n",
    "carriage_returns": "\r\n".join([HEADER, _M1, _M2]) + "\r\n",
}


@pytest.mark.pi
def test_lines_are_read_untrimmed_as_pi_reads_them(tmp_path: Path, pi: PiPeer) -> None:
    paths = []
    for name, text in EDGES.items():
        p = tmp_path / f"{name}.jsonl"
        p.write_bytes(text.encode("utf-8"))
        paths.append(p)
    refused = 0
    for p, live in zip(paths, pi.contexts(paths), strict=True):
        if "error" in live:
            refused += 1
            assert "not a valid pi session" in live["error"], (p.name, live)
            with pytest.raises(NotASessionError):
                reference_projection(p)
            with pytest.raises(NotASessionError):
                project_file(p)
            continue
        ref = reference_projection(p)
        assert messages_sha256(ref.messages) == messages_sha256(live["messages"]), p.name
        assert messages_sha256(ref.messages) == messages_sha256(project_file(p).context.messages), p.name
    assert 0 < refused < len(paths)


def test_a_line_nested_deeper_than_python_decodes_is_read(tmp_path: Path) -> None:
    # Node's JSON.parse reads 100,000 levels, and so do both of Kurahi's projections, from
    # any stack depth; the check's hash and marker search work at that depth too.
    deep = _msg(2, "e1", "x").replace('"x"', "[" * 100_000 + '"deep marker"' + "]" * 100_000)
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([HEADER, _msg(1, None, "one"), deep, _msg(3, "e2", "three")]) + "\n")
    ref = reference_projection(p)
    assert [m["content"] for m in ref.messages][::2] == ["one", "three"]
    assert messages_sha256(ref.messages) == messages_sha256(project_file(p).context.messages)
    report = check(p, markers=["deep marker"])
    assert report.ok and report.markers[0].index == 1


@pytest.mark.parametrize(
    "version,refused",
    [(None, True), (1, True), (2, True), ("2", True), (True, True), (3, False), ("3", False), ("x", False), (4, False)],
)
def test_a_session_pi_would_migrate_is_refused_by_check(tmp_path: Path, version: object, refused: bool) -> None:
    # Pi migrates when (version ?? 1) < 3, with JavaScript's comparison ("2" < 3, "x" is NaN).
    header = json.loads(HEADER)
    if version is None:
        del header["version"]
    else:
        header["version"] = version
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join([json.dumps(header), _msg(1, None, "one"), _msg(2, "e1", "two")]) + "\n")
    if refused:
        with pytest.raises(CheckError, match="Pi rewrites it to version 3"):
            check(p)
    else:
        assert check(p).projections_agree


def test_the_cli_says_why_a_legacy_session_is_not_checked(tmp_path: Path) -> None:
    p = tmp_path / "old.jsonl"
    header = {k: v for k, v in json.loads(HEADER).items() if k != "version"}
    p.write_text("\n".join([json.dumps(header), _msg(1, None, "one")]) + "\n")
    r = run_main("lineage", "check", str(p), watch=())
    assert r.code == 4 and "version-1 session" in r.stderr and not r.stdout


@pytest.mark.parametrize(
    ("fast", "reference"),
    [
        ([{"n": 1}], [{"n": 1.0}]),
        ([{"n": 1}], [{"n": True}]),
        ([{"n": 0.0}], [{"n": -0.0}]),
        ([{"n": float("inf")}], [{"n": None}]),
        ([{"a": 1, "b": 2}], [{"a": 1}]),
        ([{"t": "\ud800"}], [{"t": "\ufffd"}]),
    ],
)
def test_check_tells_apart_values_that_compare_equal_in_python_or_encode_alike(
    fast: list[object], reference: list[object]
) -> None:
    # check compares the two projections by their canonical hashes (computed in C where it
    # can): values Python's == or msgspec's encoding take for one another still differ there.
    assert messages_sha256(fast) != messages_sha256(reference)
    copy = json.loads(json.dumps(fast))  # equal values hash alike, whichever way they are hashed
    assert messages_sha256(fast) == messages_sha256(copy)
