"""``kurahi store copy`` and ``kurahi store migrate``: file -> PostgreSQL -> file, byte for byte, verified.

The library's copy runs from and into each backend too (``any_backend``).
"""

from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from typer.testing import CliRunner

from kurahi.cli.store import app
from kurahi.store.audit.log_file import AuditChain, chain_path
from kurahi.store.file_backend import FileBackend, log_path
from kurahi.store.postgres import SCHEMA_VERSION, PostgresBackend
from kurahi.store.session import Session
from kurahi.store.transfer import copy_store, is_empty
from support.backends import BackendMaker

runner = CliRunner()


def split_password(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    assert parts.password
    netloc = f"{parts.username}@{parts.hostname}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc)), parts.password


@pytest.fixture
def db(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test database's URL without its password; the password goes in PGPASSWORD, as an owner would put it."""
    url, password = split_password(pg_url)
    monkeypatch.setenv("PGPASSWORD", password)
    return url


def make_home(home: Path) -> None:
    backend = FileBackend(home)
    for agent_id, count in (("main", 3), ("helper", 1)):
        agent = backend.agent(agent_id, create=True)
        ledger = agent.log("ledger")
        for n in range(count):
            with Session.create_in(agent.transcripts, f"s{n}.jsonl", cwd="/r", session_id_=f"{agent_id}-{n}") as s:
                for i in range(20 + n):
                    s.append_message({"role": "user", "content": f"é {agent_id} {n} {i}", "timestamp": i})
                s.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 99})
                ledger.append({"kind": "intent", "actionId": f"{agent_id}:{n}"})
            agent.catalog.upsert(
                f"agent:{agent_id}:k{n}",
                {"sessionId": f"{agent_id}-{n}", "sessionFile": f"s{n}.jsonl", "zeta": n, "alpha": [1, {"b": 2}]},
            )
        ledger.close()
        jobs = agent.log("jobs")
        for i in range(5):
            jobs.append({"id": f"job_{i}", "event": "created", "note": "ünïcode"})
        jobs.close()
    # A transcript with a torn last line, as a crash leaves it: copied as it is.
    backend.agent("main").transcripts.import_bytes(
        "torn.jsonl", backend.agent("main").transcripts.export("s0.jsonl")[:-7]
    )
    audit = AuditChain(chain_path(home))
    for i in range(4):
        audit.append("owner", "session.reset", {"n": i, "token": "s3cret"})


def snapshot(home: Path) -> dict[str, Any]:
    """Every stored file's SHA-256 (transcripts, catalogs, logs, the chain)."""
    out = {}
    for p in sorted(home.rglob("*")):
        if p.is_file() and not p.name.endswith(".lock"):
            out[str(p.relative_to(home))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_file_to_postgres_to_file_is_byte_identical(tmp_path: Path, db: str) -> None:
    home, back = tmp_path / "home", tmp_path / "back"
    make_home(home)
    before = snapshot(home)
    out = runner.invoke(app, ["copy", "--from", f"file:{home}", "--to", db, "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["verified"] and report["totals"]["transcripts"] == 5 and report["totals"]["auditRecords"] == 4
    assert report["target"] == db.replace("postgres://", "postgresql://")
    out = runner.invoke(app, ["copy", "--from", db, "--to", f"file:{back}"])
    assert out.exit_code == 0, out.output
    assert "verified" in out.output
    after = snapshot(back)
    assert after == before  # every transcript, catalog, log and the chain, byte for byte
    src, dst = AuditChain(chain_path(home)).verify(), AuditChain(chain_path(back)).verify()
    assert dst.ok and dst.head_hash == src.head_hash and dst.entries == 4
    for agent_id in ("main", "helper"):
        assert FileBackend(back).agent(agent_id).catalog.items() == FileBackend(home).agent(agent_id).catalog.items()
        assert (
            log_path(back / "agents" / agent_id, "ledger").read_bytes()
            == log_path(home / "agents" / agent_id, "ledger").read_bytes()
        )
    assert snapshot(home) == before  # the source is untouched


def test_a_non_empty_target_is_refused_unless_forced(tmp_path: Path, db: str) -> None:
    home = tmp_path / "home"
    make_home(home)
    assert runner.invoke(app, ["copy", "--from", f"file:{home}", "--to", db]).exit_code == 0
    again = runner.invoke(app, ["copy", "--from", f"file:{home}", "--to", db])
    assert again.exit_code == 1 and "not empty" in again.output
    forced = runner.invoke(app, ["copy", "--from", f"file:{home}", "--to", db, "--force", "--json"])
    assert forced.exit_code == 0, forced.output
    report = json.loads(forced.output)
    assert {t["action"] for t in report["transcripts"]} == {"present"}
    assert report["audit"]["copied"] == 0 and all(x["copied"] == 0 for x in report["logs"])


def test_force_never_overwrites_what_differs(tmp_path: Path, db: str) -> None:
    home = tmp_path / "home"
    make_home(home)
    with PostgresBackend(db, home=tmp_path) as target:
        target.agent("main", create=True).transcripts.import_bytes("s1.jsonl", b'{"type":"session"}\n')
    out = runner.invoke(app, ["copy", "--from", f"file:{home}", "--to", db, "--force"])
    assert out.exit_code == 1 and "never overwritten" in out.output
    with PostgresBackend(db, home=tmp_path) as target:
        assert target.agent("main").transcripts.export("s1.jsonl") == b'{"type":"session"}\n'


def test_a_home_copied_into_each_backend_and_back_is_byte_identical(tmp_path: Path, any_backend: BackendMaker) -> None:
    home, back = tmp_path / "home", tmp_path / "back"
    make_home(home)
    before = snapshot(home)
    middle = any_backend(tmp_path / "middle")
    there = copy_store(FileBackend(home), middle)
    totals = there.to_dict()["totals"]
    assert totals["transcripts"] == 5 and totals["auditRecords"] == 4
    copy_store(middle, FileBackend(back))
    assert snapshot(back) == before  # every transcript, catalog, log and the chain, byte for byte
    assert snapshot(home) == before


def test_an_interrupted_copy_is_finished_with_force(tmp_path: Path, any_backend: BackendMaker) -> None:
    src = any_backend(tmp_path / "src")
    agent = src.agent("main", create=True)
    ledger = agent.log("ledger")
    for i in range(6):
        ledger.append({"n": i})
    for i in range(3):
        src.audit().append("owner", "x", {"i": i})
    dst = FileBackend(tmp_path / "dst")
    part = dst.agent("main", create=True).log("ledger")
    for i in range(2):
        part.append({"n": i})
    part.close()
    report = copy_store(src, dst, force=True)
    assert report.logs == [
        {"agent": "main", "log": "ledger", "records": 6, "sha256": report.logs[0]["sha256"], "copied": 4}
    ]
    assert [r["n"] for r in dst.agent("main").log("ledger").records()] == list(range(6))
    assert dst.audit().verify().head_hash == src.audit().verify().head_hash
    assert not is_empty(dst)


def test_a_password_is_never_taken_from_or_shown_on_the_command_line(tmp_path: Path, pg_url: str) -> None:
    password = urlsplit(pg_url).password
    assert password
    out = runner.invoke(app, ["copy", "--from", f"file:{tmp_path}", "--to", pg_url])
    assert out.exit_code == 2 and "process list" in out.output and password not in out.output
    out = runner.invoke(app, ["migrate", "--store", pg_url])
    assert out.exit_code == 2 and password not in out.output
    # From a file instead: used, never printed.
    url, _ = split_password(pg_url)
    secret = tmp_path / "secrets" / "pw"  # the end-of-run leak scan skips secrets/ folders, as a home's
    secret.parent.mkdir()
    secret.write_text(password + "\n")
    home = tmp_path / "home"
    make_home(home)
    out = runner.invoke(app, ["copy", "--from", f"file:{home}", "--to", url, "--to-password-file", str(secret)])
    assert out.exit_code == 0, out.output
    assert password not in out.output


def test_a_database_that_is_down_fails_cleanly() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = runner.invoke(app, ["migrate", "--store", f"postgres://kurahi@127.0.0.1:{port}/kurahi"])
    assert out.exit_code == 1 and f"127.0.0.1:{port}/kurahi" in out.output and "cannot reach" in out.output


def test_migrate(db: str, pg_url: str) -> None:
    first = runner.invoke(app, ["migrate", "--store", db, "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["applied"] == list(range(1, SCHEMA_VERSION + 1))
    again = runner.invoke(app, ["migrate", "--store", db])
    assert again.exit_code == 0 and "already at version" in again.output
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO kurahi.schema_version (version, description) VALUES (%s, 'future')", [99])
    newer = runner.invoke(app, ["migrate", "--store", db])
    assert newer.exit_code == 4 and "newer than this Kurahi" in newer.output
