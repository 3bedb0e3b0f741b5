"""One answer per line, whatever its size: every reader reads a line Pi reads, or refuses the file.

A line over 64 MiB (a large tool result, an image as base64) is read by Pi; the readers here
once disagreed about it (`session context` read it, `stats` and `stitch` left it out, so an
activation dropped the newest entry). A line longer than V8's longest string cannot be held
by Pi's loader: every reader refuses the whole file then, naming the line, and writes nothing.
Through the CLI in subprocesses, on a real OpenClaw 2026.5.28 state dir.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kurahi.pi.vocab import MAX_LINE_BYTES
from support.security import run_cli, tree
from support.testdata import JSON_ERA, openclaw_state_copy

BIG = 65 * 1024 * 1024 + 17
TAIL = "VERMILION-ASTROLABE-TAIL"
LIVE = "ed83c604-551f-41af-9a44-65881d6be000.jsonl"
KEY = "agent:main:main"


def _last_id(path: Path) -> str:
    with path.open("rb") as f:
        f.seek(-4096, os.SEEK_END)
        return str(json.loads(f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])["id"])


def _append_big(path: Path) -> None:
    """Append a user message whose line is over 64 MiB, ending with :data:`TAIL`."""
    entry = {
        "type": "message",
        "id": "b1g0b1g0",
        "parentId": _last_id(path),
        "timestamp": "2026-11-30T08:25:00.000Z",
        "message": {"role": "user", "content": "x" * BIG + " " + TAIL, "timestamp": 1796027100000},
    }
    with path.open("ab") as f:
        f.write(json.dumps(entry).encode() + b"\n")


def _ok(*args: str, env: dict[str, str] | None = None) -> Any:
    res = run_cli(*args, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "", res.stderr  # no warning: nothing was skipped
    return json.loads(res.stdout) if "--json" in args else res.stdout


@pytest.fixture
def state(tmp_path: Path) -> Path:
    st = openclaw_state_copy(JSON_ERA, tmp_path / "state")
    _append_big(st / "agents" / "main" / "sessions" / LIVE)
    return st


def test_every_reader_reads_a_line_over_64_mib_and_activation_keeps_it(state: Path, tmp_path: Path) -> None:
    live = state / "agents" / "main" / "sessions" / LIVE
    for native in ("1", "0"):  # the C scanner and the Python scanner give one answer
        stats = _ok("session", "stats", "--json", str(live), env={"KURAHI_NATIVE": native})
        assert (stats["entries"], stats["leafId"], stats["warnings"]) == (16, "b1g0b1g0", [])
        assert stats["bytes"] > BIG
    ctx = _ok("session", "context", "--json", str(live))
    assert ctx["messages"][-1]["content"].endswith(TAIL)

    found = _ok("lineage", "find", "--state-dir", str(state), "--agent", "main", "--json")
    assert [(p["kind"], p["entryCount"], p["warnings"]) for p in found["pieces"]] == [
        ("reset-archive", 21, 0),
        ("live", 16, 0),
    ]
    candidate = tmp_path / "C.jsonl"
    report = tmp_path / "report.json"
    pieces = [p["source"] for p in found["pieces"]]
    _ok("lineage", "stitch", *pieces, "--out", str(candidate), "--report", str(report))
    rep = json.loads(report.read_text())
    assert rep["warnings"] == []
    assert [s["copied"] for s in rep["sources"]] == [21, 16]
    assert _ok("session", "stats", "--json", str(candidate))["leafId"] == "b1g0b1g0"
    check = _ok("lineage", "check", str(candidate), "--marker", TAIL, "--window", "100000000", "--json")
    assert check["ok"] is True, check

    pkg = tmp_path / "pkg"
    home = str(state)
    _ok("activate", "plan", "--home", home, "--agent", "main", "--key", KEY,
        "--candidate", str(candidate), "--out", str(pkg), "--marker", TAIL)  # fmt: skip
    applied = _ok("activate", "apply", str(pkg), "--home", home, "--offline", "--json")
    assert applied["outcome"] == "applied", applied
    catalog = json.loads((state / "agents" / "main" / "sessions" / "sessions.json").read_text())
    # By name: the sample's sessionFile is the absolute path of the dir it was recorded in.
    now_live = state / "agents" / "main" / "sessions" / Path(catalog[KEY]["sessionFile"]).name
    ctx = _ok("session", "context", "--json", str(now_live))
    assert ctx["messages"][-1]["content"].endswith(TAIL), "activation dropped the newest entry"


def _too_long(path: Path) -> None:
    """A session whose third line is longer than V8's longest string (a sparse file: no disk used)."""
    header = b'{"type":"session","version":3,"id":"s-1","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/w"}\n'
    first = b'{"type":"message","id":"a","parentId":null,"timestamp":"2026-11-30T08:00:01.000Z",'
    first += b'"message":{"role":"user","content":"hi","timestamp":1}}\n'
    with path.open("wb") as f:
        f.write(header + first + b'{"type":"message","id":"b","parentId":"a","pad":"')
        f.seek(len(header) + len(first) + MAX_LINE_BYTES + 16)
        f.write(b'"}\n')


def test_a_line_longer_than_pi_can_read_refuses_the_file_in_every_reader(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    huge = work / "huge.jsonl"
    _too_long(huge)
    small = work / "small.jsonl"
    small.write_bytes(
        b'{"type":"session","version":3,"id":"s-0","timestamp":"2026-11-29T08:00:00.000Z","cwd":"/w"}\n'
        b'{"type":"message","id":"z","parentId":null,"timestamp":"2026-11-29T08:00:01.000Z",'
        b'"message":{"role":"user","content":"before","timestamp":1}}\n'
    )
    before = tree(tmp_path)
    for args in (
        ("session", "stats", str(huge)),
        ("session", "context", str(huge)),
        ("lineage", "check", str(huge), "--marker", "hi"),
        ("lineage", "stitch", str(small), str(huge), "--out", str(work / "C.jsonl")),
    ):
        res = run_cli(*args, timeout=300)
        assert res.returncode != 0, (args, res.stdout)
        assert f"{huge}:3: line 3 holds more than" in res.stderr, (args, res.stderr)
        assert "Pi cannot load this file either" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert tree(tmp_path) == before  # refused: nothing written
    # find skips such a file with a note naming it and the line (the rest of its report is find's).
    state = openclaw_state_copy(JSON_ERA, tmp_path / "state")
    live = state / "agents" / "main" / "sessions" / LIVE
    lines = live.read_bytes().count(b"\n")
    with live.open("r+b") as f:
        f.seek(0, os.SEEK_END)
        f.write(b'{"type":"message","id":"b1g","parentId":null,"pad":"')
        f.seek(MAX_LINE_BYTES + 16, os.SEEK_CUR)
        f.write(b'"}\n')
    before = tree(state)
    res = run_cli("lineage", "find", "--state-dir", str(state), "--agent", "main", "--json", timeout=300)
    assert res.returncode == 0, res.stderr
    notes = json.loads(res.stdout)["notes"]
    assert any(f"{live}: line {lines + 1} holds more than" in note for note in notes), notes
    assert tree(state) == before
