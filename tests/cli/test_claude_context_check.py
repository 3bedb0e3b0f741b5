"""``kurahi session context`` and ``kurahi lineage check`` on a Claude Code session: what ``--resume`` sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import build_app
from kurahi.cli.common import EXIT
from kurahi.cli.fast.dispatch import run as fast_run
from kurahi.runtimes.claude.loader import resume_view
from kurahi.runtimes.claude.rows import parse_rows
from support.claude_sessions import real_sample, snapshot

runner = CliRunner()
PI_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "pi" / "branch_summary.jsonl"


def cli(*args: str) -> Any:
    result = runner.invoke(build_app(), list(args), env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _sessions(tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    root, told = real_sample(tmp_path / "claude", damaged=True)
    damaged = next(root.glob("projects/*/00000000-*.jsonl"))
    [whole] = [p for p in root.glob("projects/*/*.jsonl") if p != damaged]
    return whole, damaged, told


def test_context_json_is_the_loader_models_messages_told_by_the_rows(tmp_path: Path, capsys: Any) -> None:
    whole, _, told = _sessions(tmp_path)
    model = [m for m in resume_view(parse_rows(whole.read_bytes())).message_dicts() if m["role"] != "system"]
    out = json.loads(cli("session", "context", str(whole), "--json").stdout)
    assert out["runtime"] == "claude-code-2.1.332" and out["sessionId"] == told["sessionId"]
    assert out["messages"] == model and out["resume"] == f"claude --resume {told['sessionId']}"
    # the fast path (scripts run it on every turn) prints the same
    assert fast_run(["session", "context", str(whole), "--json"]) == EXIT.OK
    assert json.loads(capsys.readouterr().out) == out


def test_context_table_says_what_resume_sends(tmp_path: Path) -> None:
    whole, _, told = _sessions(tmp_path)
    out = cli("session", "context", str(whole)).stdout
    assert "Claude Code 2.1.332" in out and f"claude --resume {told['sessionId']}" in out
    assert "remember P1-ALPHA" in out and "finally P5-ECHO" in out


def test_check_finds_every_turns_words_in_a_whole_session_and_misses_them_in_a_cut_one(tmp_path: Path) -> None:
    whole, damaged, told = _sessions(tmp_path)
    before = snapshot(whole.parent.parent.parent)
    markers = [w for turn in told["turns"] for w in turn["words"]]
    args = [a for w in markers for a in ("--marker", w)]
    ok = cli("lineage", "check", str(whole), *args, "--json")
    assert ok.exit_code == EXIT.OK, ok.stdout
    report = json.loads(ok.stdout)
    assert report["ok"] and all(m["sent"] for m in report["markers"]) and report["runtimeReason"] == "its rows"
    cut = cli("lineage", "check", str(damaged), "--marker", "P1-ALPHA", "--marker", "P5-ECHO", "--json")
    assert cut.exit_code == EXIT.FAILED
    sent = {m["marker"]: m["sent"] for m in json.loads(cut.stdout)["markers"]}
    assert sent == {"P1-ALPHA": False, "P5-ECHO": True}
    table = cli("lineage", "check", str(damaged), "--marker", "P1-ALPHA")
    assert table.exit_code == EXIT.FAILED and "missing" in table.stdout
    assert snapshot(whole.parent.parent.parent) == before


def test_runtime_claude_reads_any_file_as_claude_codes_and_a_pi_transcript_stays_pis(tmp_path: Path) -> None:
    whole, _, _ = _sessions(tmp_path)
    renamed = tmp_path / "copy.txt"
    renamed.write_bytes(whole.read_bytes())
    forced = json.loads(cli("session", "context", str(renamed), "--runtime", "claude", "--json").stdout)
    assert forced["leafFrom"] == "last-prompt" and len(forced["messages"]) == 14
    pi = json.loads(cli("session", "context", str(PI_FILE), "--json").stdout)
    assert "runtime" not in pi and "leafId" in pi
    check = cli("lineage", "check", str(PI_FILE), "--json")
    assert json.loads(check.stdout)["projectionsAgree"] is True and "leafFrom" not in check.stdout


@pytest.mark.parametrize("runtime", ["bogus"])
def test_an_unknown_runtime_is_a_usage_error(tmp_path: Path, runtime: str) -> None:
    whole, _, _ = _sessions(tmp_path)
    out = cli("lineage", "check", str(whole), "--runtime", runtime)
    assert out.exit_code == EXIT.USAGE and "not a runtime Kurahi knows" in out.stderr
