"""`kurahi agent send|jobs` and `kurahi actions ls|show`, in-process."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from support.residents import MARKER, make_home

runner = CliRunner()


def test_send_then_actions_ls_and_show(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    r = runner.invoke(
        app,
        [
            "agent",
            "send",
            "--home",
            str(home),
            "--agent",
            "alice",
            'save [[tool:write {"path": "a.md", "content": "A"}]]',
        ],
    )
    assert r.exit_code == 0, r.output
    assert MARKER in r.output and "write ok" in r.output
    r = runner.invoke(app, ["actions", "ls", "--home", str(home), "--agent", "alice", "--json"])
    assert r.exit_code == 0
    [action] = json.loads(r.output)
    assert action["tool"] == "write" and action["status"] == "ok" and action["settledBy"] == "run"
    assert action["args"] == {"path": "a.md", "content": "A"}
    r = runner.invoke(app, ["actions", "show", action["actionId"], "--home", str(home), "--agent", "alice", "--json"])
    assert r.exit_code == 0
    shown = json.loads(r.output)
    assert [rec["kind"] for rec in shown["records"]] == ["intent", "outcome"]
    r = runner.invoke(app, ["actions", "show", "nope:nope", "--home", str(home), "--agent", "alice"])
    assert r.exit_code == EXIT.NOT_FOUND and "no action 'nope:nope'" in r.output
    r = runner.invoke(app, ["actions", "ls", "--home", str(home), "--agent", "alice"])
    assert r.exit_code == 0 and "write" in r.output and "ok" in r.output


def test_send_json_failure_and_exit_codes(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    r = runner.invoke(app, ["agent", "send", "--home", str(home), "--agent", "alice", "--json", "[[fail:error]]"])
    assert r.exit_code == EXIT.FAILED
    assert json.loads(r.output.splitlines()[0])["status"] == "error"
    r = runner.invoke(app, ["agent", "send", "--home", str(home), "--agent", "ghost", "hi"])
    assert r.exit_code == EXIT.NOT_FOUND and "no agent 'ghost'" in r.output
    r = runner.invoke(app, ["agent", "send", "--home", str(home), "--agent", "../etc", "hi"])
    assert r.exit_code == EXIT.USAGE and "not allowed" in r.output
    (home / "config.json").write_text("{not json")
    r = runner.invoke(app, ["agent", "send", "--home", str(home), "--agent", "alice", "hi"])
    assert r.exit_code == EXIT.INVALID and "config.json" in r.output


def test_jobs_lists_status(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    jobs = home / "agents/alice/jobs/jobs.jsonl"
    jobs.write_text(
        json.dumps({"id": "job_1", "event": "created", "kind": "turn", "sessionKey": "k", "ts": 1})
        + "\n"
        + json.dumps({"id": "job_1", "event": "failed", "error": "boom", "ts": 2})
        + "\n"
    )
    r = runner.invoke(app, ["agent", "jobs", "--home", str(home), "--agent", "alice", "--json"])
    assert r.exit_code == 0
    assert json.loads(r.output)[0]["status"] == "failed" and json.loads(r.output)[0]["error"] == "boom"
