"""`kurahi audit verify` and `kurahi audit tail`, in-process through the audit sub-app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
import typer
from typer.testing import CliRunner

from kurahi.cli.audit import app
from kurahi.cli.common import EXIT
from kurahi.store.audit.log_file import AuditChain, chain_path

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    chain = AuditChain(chain_path(tmp_path))
    chain.append("gateway", "gateway.start", {"port": 8787, "ownerToken": "s3cret"})
    for i in range(4):
        chain.append("owner", "session.reset", {"sessionKey": f"agent:main:{i}"})
    return tmp_path


def break_seq(home: Path, seq: int) -> None:
    path = chain_path(home)
    lines = path.read_bytes().splitlines(keepends=True)
    rec = json.loads(lines[seq - 1])
    rec["details"]["sessionKey"] = "agent:main:forged"
    lines[seq - 1] = rfc8785.dumps(rec) + b"\n"
    path.write_bytes(b"".join(lines))


def test_verify_ok(home: Path) -> None:
    result = runner.invoke(app, ["verify", "--home", str(home)])
    assert result.exit_code == EXIT.OK, result.output
    assert "ok:" in result.stdout and "5 records verify" in result.stdout and "head seq 5" in result.stdout


def test_verify_ok_json(home: Path) -> None:
    result = runner.invoke(app, ["verify", "--home", str(home), "--json"])
    assert result.exit_code == EXIT.OK
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["entries"] == 5 and data["headSeq"] == 5 and data["firstBadSeq"] is None


def test_verify_broken_names_the_first_bad_record(home: Path) -> None:
    break_seq(home, 3)
    result = runner.invoke(app, ["verify", "--home", str(home)])
    assert result.exit_code == EXIT.FAILED
    assert f"{chain_path(home)}:3: record seq 3: hash does not match" in result.stdout
    assert "the chain holds up to seq 2" in result.stdout
    as_json = runner.invoke(app, ["verify", "--home", str(home), "--json"])
    assert as_json.exit_code == EXIT.FAILED
    data = json.loads(as_json.stdout)
    assert (data["ok"], data["firstBadSeq"], data["firstBadLine"], data["headSeq"]) == (False, 3, 3, 2)


def test_verify_missing_chain_exits_3(tmp_path: Path) -> None:
    result = runner.invoke(app, ["verify", "--home", str(tmp_path)])
    assert result.exit_code == EXIT.NOT_FOUND
    assert "no audit chain" in result.stderr


def test_home_from_the_environment(home: Path) -> None:
    result = runner.invoke(app, ["verify", "--json"], env={"KOLO_HOME": str(home)})
    assert result.exit_code == EXIT.OK and json.loads(result.stdout)["entries"] == 5


def test_tail_table(home: Path) -> None:
    result = runner.invoke(app, ["tail", "--home", str(home)], env={"COLUMNS": "200"})
    assert result.exit_code == EXIT.OK, result.output
    out = result.stdout
    assert "gateway.start" in out and "session.reset" in out and "agent:main:3" in out
    assert "s3cret" not in out and "[redacted]" in out


def test_tail_json_last_n(home: Path) -> None:
    result = runner.invoke(app, ["tail", "--home", str(home), "-n", "2", "--json"])
    assert result.exit_code == EXIT.OK
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    assert [r["seq"] for r in rows] == [4, 5]
    assert set(rows[0]) == {"seq", "ts", "actor", "action", "details", "prevHash", "hash"}
    assert rows[1]["prevHash"] == rows[0]["hash"]


def test_tail_missing_and_bad_count(tmp_path: Path) -> None:
    assert runner.invoke(app, ["tail", "--home", str(tmp_path)]).exit_code == EXIT.NOT_FOUND
    assert runner.invoke(app, ["tail", "--home", str(tmp_path), "-n", "0"]).exit_code == EXIT.USAGE


def test_tail_on_a_damaged_end(home: Path) -> None:
    with open(chain_path(home), "ab") as fh:
        fh.write(b"junk\n")
    result = runner.invoke(app, ["tail", "--home", str(home)])
    assert result.exit_code == EXIT.INVALID
    assert ":6:" in result.stderr and "kurahi audit verify" in result.stderr


def test_empty_chain(tmp_path: Path) -> None:
    path = chain_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.touch()
    assert runner.invoke(app, ["tail", "--home", str(tmp_path)]).stdout.splitlines()[-1] == "none"
    result = runner.invoke(app, ["verify", "--home", str(tmp_path)])
    assert result.exit_code == EXIT.OK and "0 records verify (empty)" in result.stdout


def test_every_command_and_option_has_help() -> None:
    group: Any = typer.main.get_group(app)
    assert group.help
    assert set(group.commands) == {"verify", "tail"}
    for name, cmd in group.commands.items():
        assert cmd.help, f"audit {name} has no help"
        for param in cmd.params:
            if param.param_type_name == "option":
                assert param.help, f"audit {name} {param.opts[0]} has no help"
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output
