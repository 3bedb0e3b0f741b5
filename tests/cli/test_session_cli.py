"""`kurahi session ...` on real fixture files, as a user runs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from support.peer import FIXTURES, expected


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args), terminal_width=200)
    return res.exit_code, res.output


def test_tree_collapses_side_branches_and_marks_the_leaf() -> None:
    code, out = run("session", "tree", str(FIXTURES / "branches.jsonl"))
    assert code == 0
    assert "side branch at a1: 4 entries from bm" in out
    assert re.search(r"aa assistant Peppers.*←\s+leaf", out, re.S)  # the line may wrap before "leaf"
    code, out = run("session", "tree", str(FIXTURES / "branches.jsonl"), "--all")
    assert code == 0 and "branch at a1" in out and "ba assistant Hourly is too much" in out


def test_tree_json_is_pis_get_tree() -> None:
    for name in ("branches.jsonl", "labels.jsonl", "duplicate_ids.jsonl", "orphan_parent.jsonl", "usage_entries.jsonl"):
        code, out = run("session", "tree", str(FIXTURES / name), "--json")
        assert code == 0
        assert json.loads(out) == expected(FIXTURES / name, "1.6.0")["tree"], name


def test_context_json_is_the_public_contract() -> None:
    code, out = run("session", "context", str(FIXTURES / "compaction.jsonl"), "--json", "--llm")
    assert code == 0
    got = json.loads(out)
    want = expected(FIXTURES / "compaction.jsonl", "1.6.0")
    assert list(got)[:4] == ["leafId", "thinkingLevel", "model", "messages"]
    assert {k: got[k] for k in ("leafId", "thinkingLevel", "model", "messages", "llmMessages")} == {
        k: want[k] for k in ("leafId", "thinkingLevel", "model", "messages", "llmMessages")
    }


def test_context_table_and_stats_exit_codes() -> None:
    code, out = run("session", "context", str(FIXTURES / "linear.jsonl"))
    assert code == 0 and "fits" in out and "messages" in out
    code, _ = run("session", "stats", str(FIXTURES / "linear.jsonl"))
    assert code == 0
    code, _ = run("session", "stats", str(FIXTURES / "empty.jsonl"))
    assert code == EXIT.INVALID


def test_repair_on_a_whole_file_changes_nothing(tmp_path: Path) -> None:
    p = tmp_path / "linear.jsonl"
    p.write_bytes((FIXTURES / "linear.jsonl").read_bytes())
    code, out = run("session", "repair", str(p))
    assert code == 0 and "nothing to repair" in out
    assert p.read_bytes() == (FIXTURES / "linear.jsonl").read_bytes()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["linear.jsonl"]
