"""Every refusal of an activation leaves the state dir exactly as it was: each file's bytes, each name.

Each case damages a copy of a real OpenClaw state dir in one way, runs a step of the
activation (plan, apply, verify, rollback) as a user runs it (the CLI), and compares the
whole dir before and after: every name (symlinks as links, never followed) and the sha256
of every file, OpenClaw's empty ``-wal`` and its ``-shm`` included. Where a link points out
of the dir, the folder it points at is compared too.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli.activate import app
from kurahi.cli.common import EXIT
from kurahi.lineage.stitch import stitch
from support.activations import OC_NEW, OC_OLD, OPENCLAW
from support.sqlite_activations import KEY, PHRASE_A, PHRASE_B, SqliteSetup, sqlite_setup

runner = CliRunner()


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


def tree(root: Path) -> dict[str, str]:
    """Every name under ``root`` (links not followed) with what it is: a folder, a link's target, a file's sha256."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            p = Path(folder) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = f"link -> {os.readlink(p)}"
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def leave_sidecars(db: Path) -> None:
    """OpenClaw's clean stop leaves an empty ``-wal`` and a ``-shm`` beside the store: make them as a reader would."""
    code = (
        "import os, sqlite3, sys\n"
        "sqlite3.connect(sys.argv[1]).execute('SELECT 1 FROM schema_meta').fetchall()\n"
        "os._exit(0)  # gone without closing: the files stay, as after OpenClaw's stop\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)
    assert db.with_name(db.name + "-shm").is_file() and db.with_name(db.name + "-wal").stat().st_size == 0


class Holder:
    """Another process with the store open (``write``: inside a write transaction), until closed."""

    def __init__(self, db: Path, *, write: bool) -> None:
        code = (
            "import sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('SELECT count(*) FROM schema_meta').fetchone()\n"
            "if sys.argv[2] == 'write': c.execute('BEGIN IMMEDIATE')\n"
            "print('ready', flush=True)\n"
            "sys.stdin.read()\n"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(db), "write" if write else "read"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


@pytest.fixture
def s(tmp_path: Path) -> SqliteSetup:
    s = sqlite_setup(tmp_path)
    leave_sidecars(s.db)
    return s


def sqlite_plan(s: SqliteSetup, pkg: Path) -> Any:
    return cli(
        "plan", "--home", str(s.home), "--agent", "main", "--candidate", str(s.candidate), "--out", str(pkg),
        "--marker", PHRASE_A, "--marker", PHRASE_B,
    )  # fmt: skip


def sql(db: Path, statement: str) -> None:
    con = sqlite3.connect(db)
    try:
        con.execute(statement)
        con.commit()
    finally:
        con.close()


# -- the damage: each takes the setup and returns what undoes it (or None) ----------------------------


def truncated(s: SqliteSetup) -> None:
    with open(s.db, "r+b") as f:
        f.truncate(s.db.stat().st_size // 2)


def corrupt(s: SqliteSetup) -> None:
    with open(s.db, "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 3996)


def unknown_version(s: SqliteSetup) -> None:
    sql(s.db, "UPDATE schema_meta SET schema_version = 24")
    leave_sidecars(s.db)


def extra_trigger(s: SqliteSetup) -> None:
    """The reported case: an extra trigger that deletes the events of every session as a row is inserted."""
    sql(s.db, "CREATE TRIGGER wipe AFTER INSERT ON transcript_events BEGIN DELETE FROM transcript_events "
              "WHERE session_id <> NEW.session_id; END")  # fmt: skip
    leave_sidecars(s.db)


def extra_unique_index(s: SqliteSetup) -> None:
    """A unique index decides which insert fails (a plain index or a view changes no write: accepted)."""
    sql(s.db, "CREATE UNIQUE INDEX by_created ON transcript_events (created_at)")
    leave_sidecars(s.db)


def wal_pending(s: SqliteSetup) -> None:
    s.db.with_name(s.db.name + "-wal").write_bytes(b"\0" * 32)


def running(s: SqliteSetup) -> Callable[[], None]:
    lock_dir = s.home / "tmp" / f"openclaw-{os.getuid()}"
    lock_dir.mkdir(parents=True, exist_ok=True)
    holder = sqlite3.connect(lock_dir / "gateway.state.lock.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # what a running 2026.9 gateway holds

    def undo() -> None:
        holder.execute("ROLLBACK")
        holder.close()

    return undo


def open_elsewhere(s: SqliteSetup) -> Callable[[], None]:
    return Holder(s.db, write=False).close


def writing_elsewhere(s: SqliteSetup) -> Callable[[], None]:
    return Holder(s.db, write=True).close


def read_only_dir(s: SqliteSetup) -> Callable[[], None]:
    s.db.parent.chmod(0o555)
    return lambda: s.db.parent.chmod(0o755)


def read_only_file(s: SqliteSetup) -> Callable[[], None]:
    s.db.chmod(0o444)
    return lambda: s.db.chmod(0o644)


def _link(s: SqliteSetup, rel: str) -> None:
    where = s.home / rel
    outside = s.home.parent / f"outside-{where.name}"
    shutil.move(where, outside)
    where.symlink_to(outside)


def linked_agents(s: SqliteSetup) -> None:
    _link(s, "agents")


def linked_agent_folder(s: SqliteSetup) -> None:
    _link(s, "agents/main")


def linked_agent_dir(s: SqliteSetup) -> None:
    _link(s, "agents/main/agent")


def linked_store(s: SqliteSetup) -> None:
    _link(s, "agents/main/agent/openclaw-agent.sqlite")
    # SQLite would follow the link and write -wal and -shm beside the target, outside.
    for suffix in ("-wal", "-shm"):
        side = s.db.with_name(s.db.name + suffix)
        shutil.move(side, s.home.parent / f"outside-{side.name}")


LINKS = [linked_agents, linked_agent_folder, linked_agent_dir, linked_store]
AT_PLAN = [truncated, corrupt, unknown_version, extra_trigger, extra_unique_index, wal_pending, running,
           writing_elsewhere, *LINKS]  # fmt: skip
AT_APPLY = [truncated, corrupt, unknown_version, extra_trigger, extra_unique_index, wal_pending, running,
            open_elsewhere, writing_elsewhere, read_only_dir, read_only_file, *LINKS]  # fmt: skip
AT_ROLLBACK = [truncated, corrupt, extra_trigger, wal_pending, running, open_elsewhere, read_only_dir, *LINKS]
CODES = {EXIT.INVALID, EXIT.BUSY, EXIT.NOT_FOUND}


def whole(s: SqliteSetup) -> dict[str, dict[str, str]]:
    """The state dir and whatever a link out of it points at."""
    out = {"state": tree(s.home)}
    for p in sorted(s.home.parent.glob("outside-*")):
        out[p.name] = tree(p) if p.is_dir() else {"": hashlib.sha256(p.read_bytes()).hexdigest()}
    return out


def refused(s: SqliteSetup, damage: Callable[[SqliteSetup], Any], step: Callable[[], Any]) -> Any:
    undo = damage(s)
    before = whole(s)
    try:
        res = step()
        after = whole(s)
    finally:
        if callable(undo):
            undo()
    assert res.exit_code != 0, f"{damage.__name__}: not refused\n{res.output}"
    assert ("Traceback" not in res.output and res.exception is None) or isinstance(res.exception, SystemExit)
    assert after == before, f"{damage.__name__}: the refusal changed the state dir\n{res.output}"
    return res


def expected_code(damage: Callable[..., Any]) -> int:
    return EXIT.BUSY if damage in (running, open_elsewhere, writing_elsewhere) else EXIT.INVALID


@pytest.mark.parametrize("damage", AT_PLAN, ids=lambda d: d.__name__)
def test_plan_refuses_and_changes_nothing(s: SqliteSetup, tmp_path: Path, damage: Callable[..., Any]) -> None:
    res = refused(s, damage, lambda: sqlite_plan(s, tmp_path / "pkg"))
    assert res.exit_code == expected_code(damage), res.output
    assert not (tmp_path / "pkg").exists()


@pytest.mark.parametrize("damage", AT_APPLY, ids=lambda d: d.__name__)
def test_apply_refuses_and_changes_nothing(s: SqliteSetup, tmp_path: Path, damage: Callable[..., Any]) -> None:
    assert sqlite_plan(s, tmp_path / "pkg").exit_code == 0
    res = refused(s, damage, lambda: cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline"))
    assert res.exit_code == expected_code(damage), res.output


@pytest.mark.parametrize("damage", AT_ROLLBACK, ids=lambda d: d.__name__)
def test_rollback_refuses_and_changes_nothing(s: SqliteSetup, tmp_path: Path, damage: Callable[..., Any]) -> None:
    assert sqlite_plan(s, tmp_path / "pkg").exit_code == 0
    assert cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    leave_sidecars(s.db)
    res = refused(s, damage, lambda: cli("rollback", str(tmp_path / "pkg"), "--home", str(s.home), "--offline"))
    assert res.exit_code == expected_code(damage), res.output


@pytest.mark.parametrize("damage", [truncated, corrupt, *LINKS], ids=lambda d: d.__name__)
def test_verify_refuses_and_changes_nothing(s: SqliteSetup, tmp_path: Path, damage: Callable[..., Any]) -> None:
    assert sqlite_plan(s, tmp_path / "pkg").exit_code == 0
    assert cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    leave_sidecars(s.db)
    refused(s, damage, lambda: cli("verify", str(tmp_path / "pkg"), "--home", str(s.home)))


@pytest.mark.parametrize("damage", [extra_trigger, wal_pending, open_elsewhere], ids=lambda d: d.__name__)
def test_verify_reads_what_it_can_and_changes_nothing(
    s: SqliteSetup, tmp_path: Path, damage: Callable[..., Any]
) -> None:
    """Verify only reads: a store it can read (an extra trigger, changes in the WAL, another reader) is
    compared as it is, and not one byte of the dir changes."""
    assert sqlite_plan(s, tmp_path / "pkg").exit_code == 0
    assert cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    leave_sidecars(s.db)
    undo = damage(s)
    try:
        before = whole(s)
        res = cli("verify", str(tmp_path / "pkg"), "--home", str(s.home))
        assert whole(s) == before, res.output
    finally:
        if callable(undo):
            undo()
    assert res.exit_code == 0, res.output


def test_plan_and_verify_write_nothing_not_even_shm(s: SqliteSetup, tmp_path: Path) -> None:
    before = whole(s)
    assert sqlite_plan(s, tmp_path / "pkg").exit_code == 0
    assert whole(s) == before
    assert cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    leave_sidecars(s.db)
    before = whole(s)
    assert cli("verify", str(tmp_path / "pkg"), "--home", str(s.home)).exit_code == 0
    assert whole(s) == before


def test_a_write_that_does_not_read_back_is_rolled_back_inside_its_transaction(
    s: SqliteSetup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reported case past the schema check (as if it could not see the trigger): the trigger deletes the
    old session's events as apply inserts; apply sees it before committing, rolls back there, exits 4,
    and the package is back to planned (rollback: nothing to do)."""
    from kurahi.runtimes.openclaw.sqlite import write as openclaw_sqlite_write

    assert sqlite_plan(s, tmp_path / "pkg").exit_code == 0
    extra_trigger(s)
    monkeypatch.setattr(openclaw_sqlite_write, "check_schema", lambda con, db: None)
    before = whole(s)
    res = cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline")
    assert res.exit_code == EXIT.INVALID, res.output
    assert "did not read back inside its transaction" in " ".join(res.output.split()), res.output
    assert whole(s) == before
    res = cli("rollback", str(tmp_path / "pkg"), "--home", str(s.home), "--offline", "--json")
    assert res.exit_code == 0 and '"not-applied"' in res.output, res.output


# -- the JSON era: a symlink on the way to the catalog, a transcript two keys share ----------------------


@pytest.fixture
def json_state(tmp_path: Path) -> tuple[Path, Path]:
    state = tmp_path / "state"
    shutil.copytree(OPENCLAW, state)
    sessions = state / "agents" / "main" / "sessions"
    c = tmp_path / "C.jsonl"
    stitch([sessions / OC_OLD, sessions / OC_NEW], c)
    return state, c


def json_whole(state: Path) -> dict[str, dict[str, str]]:
    out = {"state": tree(state)}
    for p in sorted(state.parent.glob("outside-*")):
        out[p.name] = tree(p)
    return out


def json_link(state: Path, rel: str) -> None:
    where = state / rel
    outside = state.parent / f"outside-{where.name}"
    shutil.move(where, outside)
    where.symlink_to(outside)


@pytest.mark.parametrize("rel", ["agents", "agents/main", "agents/main/sessions"])
@pytest.mark.parametrize("step", ["plan", "apply", "rollback", "verify"])
def test_json_era_refuses_a_symlink_on_the_way(
    json_state: tuple[Path, Path], tmp_path: Path, rel: str, step: str
) -> None:
    state, c = json_state
    pkg = tmp_path / "pkg"
    args = ["plan", "--home", str(state), "--agent", "main", "--candidate", str(c), "--out", str(pkg)]
    if step != "plan":
        assert cli(*args).exit_code == 0
        args = [step, str(pkg), "--home", str(state)] + (["--offline"] if step != "verify" else [])
    if step in ("rollback", "verify"):
        assert cli("apply", str(pkg), "--home", str(state), "--offline").exit_code == 0
    json_link(state, rel)
    before = json_whole(state)
    res = cli(*args)
    assert res.exit_code == EXIT.INVALID, res.output
    assert "is a symlink" in res.output and "Traceback" not in res.output
    assert json_whole(state) == before


def test_replacing_a_transcript_another_key_shares_is_refused(json_state: tuple[Path, Path], tmp_path: Path) -> None:
    """A candidate keeping the live session id replaces the live transcript in place: not when another key uses it."""
    from kurahi.store.catalog import Catalog

    state, _ = json_state
    sessions = state / "agents" / "main" / "sessions"
    catalog = Catalog(sessions / "sessions.json")
    live = catalog.get(KEY)
    assert live is not None
    catalog.upsert("agent:main:other", {"sessionId": live["sessionId"], "sessionFile": live["sessionFile"]})
    c = tmp_path / "same-id.jsonl"
    c.write_bytes((sessions / OC_NEW).read_bytes() + (sessions / OC_NEW).read_bytes().splitlines(True)[-1])
    before = json_whole(state)
    res = cli("plan", "--home", str(state), "--agent", "main", "--candidate", str(c), "--out", str(tmp_path / "pkg"))
    assert res.exit_code == EXIT.FAILED, res.output
    assert "also the transcript of 'agent:main:other'" in " ".join(res.output.split()), res.output
    assert json_whole(state) == before


def test_rollback_gives_the_pages_back(s: SqliteSetup, tmp_path: Path) -> None:
    """The activated session's pages are freed by rollback and handed back (the store is auto_vacuum=incremental)."""
    size = s.db.stat().st_size
    assert sqlite_plan(s, tmp_path / "pkg").exit_code == 0
    assert cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    assert s.db.stat().st_size > size
    assert cli("rollback", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    con = sqlite3.connect(f"file:{s.db}?mode=ro&immutable=1", uri=True)
    try:
        assert con.execute("PRAGMA freelist_count").fetchone() == (0,)
    finally:
        con.close()
    assert s.db.stat().st_size <= size + 16 * 4096  # FTS5 keeps a record of what it deleted, a few pages


@pytest.mark.parametrize("step", ["plan", "apply"])
def test_json_era_refuses_a_live_transcript_that_is_a_symlink(
    json_state: tuple[Path, Path], tmp_path: Path, step: str
) -> None:
    """The catalog names a transcript that is a link out of the dir: refused, nothing read through it or changed."""
    state, c = json_state
    live = state / "agents" / "main" / "sessions" / OC_NEW
    pkg = tmp_path / "pkg"
    plan_args = ["plan", "--home", str(state), "--agent", "main", "--candidate", str(c), "--out", str(pkg)]
    if step == "apply":
        assert cli(*plan_args).exit_code == 0
    outside = state.parent / "outside-transcript.jsonl"
    shutil.move(live, outside)
    live.symlink_to(outside)
    before = json_whole(state) | {"outside": {"": hashlib.sha256(outside.read_bytes()).hexdigest()}}
    res = cli(*plan_args) if step == "plan" else cli("apply", str(pkg), "--home", str(state), "--offline")
    assert res.exit_code != 0 and "Traceback" not in res.output, res.output
    assert "symlink" in res.output, res.output
    after = json_whole(state) | {"outside": {"": hashlib.sha256(outside.read_bytes()).hexdigest()}}
    assert after == before
