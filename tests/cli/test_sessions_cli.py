"""`kurahi sessions ls` and `kurahi sessions repair`, in-process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli import sessions as sessions_cli
from kurahi.cli.common import EXIT
from kurahi.store.catalog import Catalog
from support.testdata import JSON_ERA, openclaw_state

OPENCLAW_STATE = openclaw_state(JSON_ERA)
SESSION_ID = "ed83c604-551f-41af-9a44-65881d6be000"
KEY = "agent:main:main"

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    target = tmp_path / "state"
    shutil.copytree(OPENCLAW_STATE, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)  # the samples are read-only
    return target


def catalog_of(home: Path, agent: str = "main") -> Path:
    return home / "agents" / agent / "sessions" / "sessions.json"


def test_ls_json_on_openclaw_state(home: Path) -> None:
    result = runner.invoke(app, ["sessions", "ls", "--home", str(home), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows == [
        {
            "agent": "main",
            "key": KEY,
            "sessionId": SESSION_ID,
            "updatedAt": 1796027095177,
            "status": "done",
            "transcript": str(home / "agents/main/sessions" / f"{SESSION_ID}.jsonl"),
            "transcriptExists": True,
        }
    ]


def test_ls_table_on_openclaw_state(home: Path) -> None:
    result = runner.invoke(app, ["sessions", "ls", "--home", str(home)])
    assert result.exit_code == 0, result.output
    assert KEY in result.stdout
    assert "main" in result.stdout
    assert "done" in result.stdout
    assert "yes" in result.stdout
    assert "2026-11-30" in result.stdout  # updatedAt shown as a date, not epoch ms
    assert "1796027095177" not in result.stdout


def test_ls_reads_kolo_home_and_reports_missing_transcripts(home: Path) -> None:
    Catalog(catalog_of(home)).upsert("agent:main:gone", {"sessionId": "nope"})
    result = runner.invoke(app, ["sessions", "ls", "--json"], env={"KOLO_HOME": str(home)})
    assert result.exit_code == 0, result.output
    rows = {row["key"]: row for row in json.loads(result.stdout)}
    assert rows[KEY]["transcriptExists"] is True
    assert rows["agent:main:gone"]["transcriptExists"] is False
    assert rows["agent:main:gone"]["transcript"].endswith("nope.jsonl")


def test_ls_agent_filter_and_hostile_agent(home: Path) -> None:
    (home / "agents" / "ops" / "sessions").mkdir(parents=True)
    Catalog(catalog_of(home, "ops")).upsert("agent:ops:main", {"sessionId": "x"})
    result = runner.invoke(app, ["sessions", "ls", "--home", str(home), "--agent", "ops", "--json"])
    assert result.exit_code == 0, result.output
    assert [row["key"] for row in json.loads(result.stdout)] == ["agent:ops:main"]
    result = runner.invoke(app, ["sessions", "ls", "--home", str(home), "--json"])
    assert [row["agent"] for row in json.loads(result.stdout)] == ["main", "ops"]
    result = runner.invoke(app, ["sessions", "ls", "--home", str(home), "--agent", "../main"])
    assert result.exit_code == EXIT.USAGE
    assert "path separator" in result.output


def test_ls_corrupt_catalog_is_a_clean_error(home: Path) -> None:
    path = catalog_of(home)
    path.write_bytes(b'{"agent:main:main": {')
    result = runner.invoke(app, ["sessions", "ls", "--home", str(home)])
    assert result.exit_code == EXIT.INVALID
    assert str(path) in result.output
    assert "line 1" in result.output
    assert "Traceback" not in result.output
    assert path.read_bytes() == b'{"agent:main:main": {'


def test_ls_missing_home(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sessions", "ls", "--home", str(tmp_path / "none")])
    assert result.exit_code == EXIT.NOT_FOUND  # the README's table: not found
    assert f"create one with `kurahi init --home {tmp_path / 'none'}`" in " ".join(result.output.split())


def test_repair_moves_corrupt_catalog_aside(home: Path) -> None:
    path = catalog_of(home)
    path.write_bytes(b"\xff\xfe not json")
    result = runner.invoke(app, ["sessions", "repair", str(path)])
    assert result.exit_code == 0, result.output
    assert not path.exists()
    moved = list(path.parent.glob("sessions.json.corrupt.*"))
    assert len(moved) == 1
    assert moved[0].read_bytes() == b"\xff\xfe not json"
    assert moved[0].name in result.output.replace("\n", "")


def test_repair_leaves_healthy_catalog_alone(home: Path) -> None:
    path = catalog_of(home)
    before = path.read_bytes()
    result = runner.invoke(app, ["sessions", "repair", str(path)])
    assert result.exit_code == EXIT.FAILED
    assert "nothing to repair" in result.output
    assert path.read_bytes() == before
    assert not list(path.parent.glob("sessions.json.corrupt.*"))


def test_repair_missing_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sessions", "repair", str(tmp_path / "sessions.json")])
    assert result.exit_code == EXIT.NOT_FOUND


@pytest.mark.parametrize("command", [["sessions"], ["sessions", "ls"], ["sessions", "repair"]])
def test_help_runs(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_every_command_and_option_has_help() -> None:
    group = typer.main.get_command(sessions_cli.app)
    assert isinstance(group, typer.core.TyperGroup)
    assert group.help
    assert sorted(group.commands) == ["ls", "repair"]
    for name, command in group.commands.items():
        assert command.help, f"command {name} has no help"
        for param in command.params:
            if param.name == "help":
                continue
            assert getattr(param, "help", None), f"{name}: {param.name} has no help"


def test_repair_refuses_a_file_not_named_sessions_json_unless_asked(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes, which are not JSON\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    result = runner.invoke(app, ["sessions", "repair", str(notes)])
    assert result.exit_code == EXIT.USAGE and "not named sessions.json" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # untouched, and no lock file made
    assert notes.read_text() == "# my notes, which are not JSON\n"
    result = runner.invoke(app, ["sessions", "repair", str(notes), "--any-name"])
    assert result.exit_code == 0, result.output
    assert not notes.exists() and len(list(tmp_path.glob("notes.md.corrupt.*"))) == 1
