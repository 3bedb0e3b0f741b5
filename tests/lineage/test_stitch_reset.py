"""`kurahi lineage stitch` across OpenClaw 2026.9's in-transcript reset (issue 16, deliverable 3)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from kurahi.lineage.find import export_piece, find_lineage
from support.testdata import JSON_ERA, SQLITE_ERA, openclaw_state_copy, tree_hash

BEFORE, AFTER = "PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"
RESET_ID = "106cd4ae"
runner = CliRunner()


def stitch(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, ["lineage", "stitch", *args])
    return res.exit_code, res.output


def check(path: Path, runtime: str, *markers: str) -> Any:
    args = [a for m in markers for a in ("--marker", m)]
    res = runner.invoke(app, ["lineage", "check", str(path), "--runtime", runtime, *args, "--json"])
    data = json.loads(res.stdout)
    assert (res.exit_code == 0) == data["ok"]
    return data


@pytest.fixture
def sqlite_state(tmp_path: Path) -> Path:
    return openclaw_state_copy(SQLITE_ERA, tmp_path / "state")


@pytest.fixture
def exported(sqlite_state: Path, tmp_path: Path) -> Path:
    (piece,) = find_lineage(sqlite_state).pieces
    return export_piece(piece, tmp_path / "s.jsonl")


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def test_one_session_with_a_reset_becomes_one_history(sqlite_state: Path, tmp_path: Path) -> None:
    (piece,) = find_lineage(sqlite_state).pieces
    before = tree_hash(sqlite_state)
    out, report = tmp_path / "C.jsonl", tmp_path / "r.json"
    code, text = stitch(piece.source, "--out", str(out), "--report", str(report))
    assert code == 0, text
    assert tree_hash(sqlite_state) == before
    assert check(out, "openclaw-2026.9", BEFORE, AFTER)["ok"]
    rep = json.loads(report.read_text())
    (edge,) = rep["edges"]
    assert edge["bypassed"] == RESET_ID and rep["changedLines"] == 1
    header = json.loads(lines(out)[0])
    assert header["id"] != piece.session_id and header["lineage"]["sources"][0]["path"] == piece.source


def test_every_other_line_is_byte_identical_and_the_report_proves_it(exported: Path, tmp_path: Path) -> None:
    out, report = tmp_path / "C.jsonl", tmp_path / "r.json"
    code, text = stitch(str(exported), "--out", str(out), "--report", str(report))
    assert code == 0, text
    src, got = lines(exported), lines(out)
    reset_line = next(i for i, raw in enumerate(src) if json.loads(raw).get("type") == "reset")
    assert b'"type":"reset"' not in out.read_bytes()
    assert len(got) == len(src) - 1  # the header is new, the reset is left out
    rep = json.loads(report.read_text())
    (source,) = rep["sources"]
    changed = 0
    for out_no, src_no, digest, change in source["lines"]:
        assert hashlib.sha256(src[src_no - 1]).hexdigest() == digest
        if change is None:
            assert got[out_no - 1] == src[src_no - 1]
        else:
            changed += 1
            assert change == "parentId" and src_no == reset_line + 2  # the entry right after the reset
            was, now = json.loads(src[src_no - 1]), json.loads(got[out_no - 1])
            assert was["parentId"] == RESET_ID
            assert now == {**was, "parentId": json.loads(src[reset_line])["parentId"]}
    assert changed == 1
    assert not check(exported, "openclaw-2026.9", BEFORE)["ok"]  # the source still hides it


def _append(path: Path, *entries: dict[str, Any]) -> None:
    with path.open("ab") as f:
        for e in entries:
            f.write(json.dumps(e, separators=(",", ":")).encode() + b"\n")


def _message(eid: str, parent: str, text: str, ts: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": ts,
        "message": {"role": "user", "content": text, "timestamp": 1796031000000},
    }


def test_two_resets_are_both_bypassed(exported: Path, tmp_path: Path) -> None:
    leaf = json.loads(lines(exported)[-1])["id"]
    _append(
        exported,
        {"type": "reset", "id": "2ndreset", "parentId": leaf, "timestamp": "2026-11-30T09:00:00.000Z", "reason": "new"},
        _message("c0ffee01", "2ndreset", "third era: TEAL-OTTER-3", "2026-11-30T09:00:01.000Z"),
    )
    out, report = tmp_path / "C.jsonl", tmp_path / "r.json"
    code, text = stitch(str(exported), "--out", str(out), "--report", str(report))
    assert code == 0, text
    assert [e["bypassed"] for e in json.loads(report.read_text())["edges"]] == [RESET_ID, "2ndreset"]
    assert check(out, "openclaw-2026.9", BEFORE, AFTER, "TEAL-OTTER-3")["ok"]


def test_a_reset_then_an_idle_rollover(exported: Path, tmp_path: Path) -> None:
    rolled = tmp_path / "rolled.jsonl"
    header = {"type": "session", "version": 4, "id": "rolled-1", "timestamp": "2026-11-30T10:00:00.000Z", "cwd": "/w"}
    rolled.write_bytes(json.dumps(header).encode() + b"\n")
    _append(rolled, _message("r0000001", None, "after the rollover: CYAN-HERON-9", "2026-11-30T10:00:01.000Z"))  # type: ignore[arg-type]
    out, report = tmp_path / "C.jsonl", tmp_path / "r.json"
    code, text = stitch(str(exported), str(rolled), "--out", str(out), "--report", str(report))
    assert code == 0, text
    edges = json.loads(report.read_text())["edges"]
    assert [e.get("bypassed") for e in edges] == [RESET_ID, None]
    assert check(out, "openclaw-2026.9", BEFORE, AFTER, "CYAN-HERON-9")["ok"]


def test_a_key_with_no_reset_needs_two_pieces(tmp_path: Path) -> None:
    state = openclaw_state_copy(JSON_ERA, tmp_path / "state")
    live = find_lineage(state).pieces[-1].source
    before = tree_hash(state)
    out = tmp_path / "C.jsonl"
    code, text = stitch(live, "--out", str(out))
    assert code == EXIT.FAILED and "no reset entry on its path" in text and "Traceback" not in text
    assert not out.exists() and tree_hash(state) == before
