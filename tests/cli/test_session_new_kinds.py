"""`kurahi session tree|stats` on files with Pi 1.6.0's kinds (context edits, usage, system messages)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from support.peer import PiPeer

USAGE = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3, "cost": {"total": 0}}


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args), terminal_width=200)
    return res.exit_code, res.output


@pytest.fixture
def written(tmp_path: Path, pi: PiPeer) -> tuple[Path, dict[str, str]]:
    out = tmp_path / "pi16.jsonl"
    script = [
        {"op": "system", "content": "You are Ava.", "timestamp": 1, "as": "sys"},
        {"op": "user", "text": "the key is sk-SECRET-9", "timestamp": 2, "as": "u"},
        {"op": "assistant", "text": "noted", "timestamp": 3, "as": "a"},
        {"op": "appendUsage", "kind": "cache_warm", "provider": "anthropic", "model": "m", "usage": USAGE, "as": "use"},
        *[{"op": "user", "text": f"filler {i}", "timestamp": 4 + i} for i in range(4)],
        {"op": "appendContextEdit", "targetId": "$u", "replacement": None, "as": "e1"},
        {"op": "appendContextEdit", "targetId": "$a", "replacement": {"content": "[hidden]"}, "as": "e2"},
        {"op": "user", "text": "end", "timestamp": 20},
    ]
    (res,) = pi.batch("write", json.dumps([{"out": str(out), "script": script}]))
    assert "error" not in res, res
    return out, res["ids"]


def test_tree_marks_edits_and_their_targets_and_hides_what_was_removed(written: tuple[Path, dict[str, str]]) -> None:
    path, ids = written
    code, out = run("session", "tree", str(path))
    assert code == 0
    assert f"{ids['e1']} context edit removes {ids['u']}" in out
    assert f"{ids['e2']} context edit replaces the content of {ids['a']}" in out
    assert f"{ids['u']} user (removed by a context edit)" in out
    assert f"{ids['a']} assistant (replaced by a context edit)" in out
    assert "sk-SECRET-9" not in out
    assert f"{ids['sys']} system You are Ava." in out
    code, out = run("session", "tree", str(path), "--full")
    assert code == 0 and f"{ids['use']} usage cache_warm anthropic/m" in out


def test_tree_json_is_still_pis_get_tree(written: tuple[Path, dict[str, str]], pi: PiPeer) -> None:
    path, _ = written
    (report,) = pi.reports([path])
    code, out = run("session", "tree", str(path), "--json")
    assert code == 0 and json.loads(out) == report["tree"]


def test_stats_count_the_new_kinds(written: tuple[Path, dict[str, str]]) -> None:
    path, _ = written
    code, out = run("session", "stats", str(path), "--json")
    facts = json.loads(out)
    assert code == 0
    assert (facts["contextEdits"], facts["usageEntries"], facts["systemMessages"]) == (2, 1, 1)
    assert facts["types"] == {"context_edit": 2, "message": 8, "usage": 1}
    code, out = run("session", "stats", str(path))
    assert code == 0 and "contextEdits" in out and "usageEntries" in out and "systemMessages" in out
