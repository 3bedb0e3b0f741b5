"""Activation into a store backend: in-process on each (``any_backend``), and PostgreSQL through the CLI and a gateway.

The file home's activation through the gateway is tested in test_activation*.py; the same
plan/apply/verify/rollback code runs here over :class:`~kurahi.store.base.TranscriptClaim`
and :meth:`~kurahi.store.base.SessionCatalog.set_entry`. Where a test takes a session from a
writer that is still open in the same process, it runs on the backends that fence such a
writer off (memory, PostgreSQL); a file home's writer holds a lock that cannot be taken.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kurahi.errors import LockHeldError, WrongHomeError
from kurahi.gateway.activation_host import StoreHost
from kurahi.gateway.lock import gateway_info
from kurahi.lifecycle.activation import apply_package, plan_activation, rollback_package, verify_package
from kurahi.lineage.stitch import stitch
from kurahi.pi.transcript import Transcript
from kurahi.resident.home import Home
from kurahi.resident.init import init_home
from kurahi.store.base import AgentStore, Backend
from kurahi.store.session import Session
from kurahi.testing import build_session
from support.backends import FENCING_KINDS, BackendMaker
from support.waiting import wait_for

KEY = "agent:alice:main"
KURAHI = [sys.executable, "-m", "kurahi.cli"]


def _seed(store: AgentStore, tmp_path: Path) -> tuple[str, Path]:
    """A live session in ``store`` (catalog entry and transcript) and a candidate file; the live name."""
    scratch = tmp_path / "live.jsonl"
    build_session(scratch, entries=40, seed=2, markers=["AFTER-RESET-PHRASE"])
    with Transcript.open(scratch) as t:
        sid = t.session_id
    name = f"{sid}.jsonl"
    store.transcripts.import_bytes(name, scratch.read_bytes())
    store.catalog.upsert(KEY, {"sessionId": sid, "sessionFile": name, "sessionStartedAt": 1, "status": "done"})
    store.catalog.upsert("agent:alice:other", {"sessionId": "other", "updatedAt": 1})
    candidate = tmp_path / "C.jsonl"
    build_session(candidate, entries=200, seed=3, compact_every=50, markers=[f"M{i}" for i in range(7)] + ["LATE"])
    return name, candidate


def _state(store: AgentStore) -> tuple[dict[str, bytes], list[tuple[str, Any]]]:
    return {n: store.transcripts.export(n) for n in store.transcripts.names()}, store.catalog.items()


@pytest.mark.parametrize("any_backend", FENCING_KINDS, indirect=True)
def test_plan_apply_verify_rollback(tmp_path: Path, any_backend: BackendMaker) -> None:
    home = tmp_path / "home"
    backend = any_backend(home)
    store = backend.agent("alice", create=True)
    live, candidate = _seed(store, tmp_path)
    before = _state(store)
    pkg = plan_activation(home, "alice", KEY, candidate, tmp_path / "pkg", markers=["LATE"], backend=backend)
    assert pkg.plan.backend == backend.describe() and _state(store) == before  # planning only reads
    writer = store.transcripts.open(live)  # a gateway's session, open for appending
    host = StoreHost(home, backend)
    res = apply_package(pkg.root, home, host, backend=backend)
    assert res.outcome == "applied" and res.steps == ["install", "catalog", "validate"]
    assert res.validation is not None and res.validation["ok"] and res.validation["source"] == "store"
    with pytest.raises(LockHeldError):
        writer.append(b'{"type":"custom","id":"late0001"}\n', durable=True)  # fenced off: never interleaves
    writer.close()
    target = pkg.plan.target_file
    assert store.transcripts.export(target) == candidate.read_bytes()
    assert store.transcripts.export(live) == before[0][live]  # the old session is kept, untouched
    entry = store.catalog.get(KEY)
    assert entry is not None and entry["sessionId"] == pkg.plan.candidate_session_id and "status" not in entry
    assert verify_package(pkg.root, home, backend=backend).ok
    assert [r.action for r in backend.audit().tail()] == ["session.activate"]
    assert apply_package(pkg.root, home, host, backend=backend).outcome == "already-applied"
    with pytest.raises(WrongHomeError, match="store"):
        verify_package(pkg.root, home)  # planned for the memory store, not the home's files
    rb = rollback_package(pkg.root, home, host, backend=backend)
    assert rb.outcome == "rolled-back" and rb.steps == ["catalog", "transcript"]
    assert _state(store) == before
    assert not verify_package(pkg.root, home, backend=backend).ok
    assert [r.action for r in backend.audit().tail()] == ["session.activate", "session.rollback"]


def test_a_turn_after_planning_is_never_lost(tmp_path: Path, any_backend: BackendMaker) -> None:
    home = tmp_path / "home"
    backend = any_backend(home)
    store = backend.agent("alice", create=True)
    live, candidate = _seed(store, tmp_path)
    pkg = plan_activation(home, "alice", KEY, candidate, tmp_path / "pkg", markers=["LATE"], backend=backend)
    writer = store.transcripts.open(live)
    writer.append(b'{"type":"custom","id":"turn0001","parentId":null}\n', durable=True)  # acknowledged after the plan
    writer.close()
    before = _state(store)
    with pytest.raises(Exception, match="changed since planning"):
        apply_package(pkg.root, home, StoreHost(home, backend), backend=backend)
    assert _state(store) == before


@pytest.mark.parametrize("any_backend", FENCING_KINDS, indirect=True)
def test_rollback_of_a_used_session_needs_force_and_fences_its_writer(
    tmp_path: Path, any_backend: BackendMaker
) -> None:
    home = tmp_path / "home"
    backend = any_backend(home)
    store = backend.agent("alice", create=True)
    _, candidate = _seed(store, tmp_path)
    before = _state(store)
    pkg = plan_activation(home, "alice", KEY, candidate, tmp_path / "pkg", markers=["LATE"], backend=backend)
    host = StoreHost(home, backend)
    apply_package(pkg.root, home, host, backend=backend)
    writer = store.transcripts.open(pkg.plan.target_file)  # the activated session, in use
    turn = b'{"type":"custom","id":"used0001","parentId":null}\n'
    writer.append(turn, durable=True)
    with pytest.raises(Exception, match="was used"):
        rollback_package(pkg.root, home, host, backend=backend)
    assert store.transcripts.export(pkg.plan.target_file) == candidate.read_bytes() + turn  # refused: untouched
    res = rollback_package(pkg.root, home, host, backend=backend, force=True)
    assert res.outcome == "rolled-back" and _state(store) == before
    with pytest.raises(LockHeldError):
        writer.append(turn, durable=True)  # its claim was taken over: it writes nothing into the old state
    writer.close()
    kept = pkg.root / "evidence" / f"replaced-{pkg.plan.target_file}"
    assert kept.read_bytes() == candidate.read_bytes() + turn  # the used transcript is kept, not lost


# -- PostgreSQL ----------------------------------------------------------------------------------


def _kurahi(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KURAHI, *args], capture_output=True, text=True, env=env, timeout=300)


def _pg_env(pg_url: str, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KOLO_STORE", "KOLO_HOME", "KOLO_GATEWAY_TOKEN")}
    return {**env, "KOLO_STORE": pg_url, **more}


def _pg(pg_url: str, home: Path, owner: str) -> Backend:
    from kurahi.store.postgres import PostgresBackend

    return PostgresBackend(pg_url, home=home, owner_id=owner)


def test_plan_apply_verify_rollback_on_postgres_through_the_cli(tmp_path: Path, pg_url: str) -> None:
    home = tmp_path / "home"
    init_home(home, "alice")
    with _pg(pg_url, home, "seed") as backend:
        live, candidate = _seed(backend.agent("alice", create=True), tmp_path)
        before = _state(backend.agent("alice"))
    env, pkg = _pg_env(pg_url), tmp_path / "pkg"
    plan = _kurahi("activate", "plan", "--home", str(home), "--agent", "alice", "--candidate", str(candidate),
                   "--out", str(pkg), "--marker", "LATE", "--json", env=env)  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)["plan"]
    assert planned["backend"].startswith("postgresql://") and ":" not in planned["backend"].split("@")[0][13:]
    apply = _kurahi("activate", "apply", str(pkg), "--home", str(home), "--json", env=env)
    assert apply.returncode == 0, apply.stderr
    out = json.loads(apply.stdout)
    assert out["outcome"] == "applied" and out["steps"] == ["install", "catalog", "validate"]
    assert out["validation"]["ok"] and out["validation"]["source"] == "store" and out["audited"]
    assert _kurahi("activate", "verify", str(pkg), "--home", str(home), env=env).returncode == 0
    with _pg(pg_url, home, "check") as backend:
        store = backend.agent("alice")
        assert store.transcripts.export(planned["targetFile"]) == candidate.read_bytes()
        entry = store.catalog.get(KEY)
        assert entry is not None and entry["sessionFile"] == planned["targetFile"]
        assert store.transcripts.export(live) == before[0][live]
        assert [r.action for r in backend.audit().tail()] == ["session.activate"]
    # The package is bound to its store: the home's files are not where it was planned.
    other = _kurahi("activate", "verify", str(pkg), "--home", str(home), env=_pg_env(pg_url, KOLO_STORE=""))
    assert other.returncode == 4 and "store" in other.stderr
    rollback = _kurahi("activate", "rollback", str(pkg), "--home", str(home), "--json", env=env)
    assert rollback.returncode == 0, rollback.stderr
    assert json.loads(rollback.stdout)["steps"] == ["catalog", "transcript"]
    with _pg(pg_url, home, "check") as backend:
        assert _state(backend.agent("alice")) == before
        assert [r.action for r in backend.audit().tail()] == ["session.activate", "session.rollback"]
    assert _kurahi("activate", "verify", str(pkg), "--home", str(home), env=env).returncode == 1


def test_a_password_never_goes_on_the_activate_command_line(tmp_path: Path, pg_url: str) -> None:
    password = pg_url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    home = tmp_path / "home"
    init_home(home, "alice")
    env = _pg_env(pg_url)
    del env["KOLO_STORE"]
    for args in (
        ["plan", "--agent", "alice", "--candidate", str(home / "x"), "--out", str(tmp_path / "p")],
        ["apply", str(tmp_path / "p")],
        ["verify", str(tmp_path / "p")],
        ["rollback", str(tmp_path / "p")],
    ):
        res = _kurahi("activate", *args, "--home", str(home), "--store", pg_url, env=env)
        assert res.returncode == 2, res.stderr
        assert "process list" in res.stderr and password not in res.stderr + res.stdout
    for store, why in (
        ("memory:", "holds nothing"),
        ("mysql://db/x", "unknown store"),
        (f"file:{tmp_path}", "another home"),
    ):
        res = _kurahi("activate", "verify", str(tmp_path / "p"), "--home", str(home), "--store", store, env=env)
        assert res.returncode == 2 and why in res.stderr, res.stderr
    # From a file instead: accepted, and still never printed.
    secret = tmp_path / "pw"
    secret.write_text(password + "\n")
    bare = pg_url.replace(f":{password}@", "@")
    res = _kurahi("activate", "verify", str(tmp_path / "p"), "--home", str(home), "--store", bare,
                  "--password-file", str(secret), env=env)  # fmt: skip
    secret.unlink()  # the suite's leak scan looks for the password in every file left behind
    assert res.returncode == 3 and "no activation package" in res.stderr and password not in res.stderr + res.stdout


# -- a gateway on the same database ----------------------------------------------------------------


@pytest.fixture
def pg_gateway(tmp_path: Path, pg_url: str) -> Iterator[tuple[Home, httpx.Client, subprocess.Popen[bytes]]]:
    """``kurahi gateway run`` on a home whose sessions live in PostgreSQL (leases ten minutes long, so
    nothing here is freed by a lease running out: only by fencing)."""
    init_home(tmp_path / "home", "alice")
    home = Home(tmp_path / "home")
    log = tmp_path / "gateway.log"
    env = _pg_env(pg_url, KOLO_HOME=str(home.root), KOLO_LEASE_SECONDS="600")
    with log.open("ab") as fh:
        proc = subprocess.Popen(
            [*KURAHI, "gateway", "run", "--port", "0", "--gateway-id", "gw-1"],
            stdout=fh,
            stderr=fh,
            env=env,
            start_new_session=True,
        )

    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"gateway exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        info = gateway_info(home.lock)
        return info is not None and info.pid == proc.pid

    wait_for(listening, "the gateway to listen")
    info = gateway_info(home.lock)
    assert info is not None
    token = home.token_file.read_text().strip()
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{info.port}", headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    try:
        yield home, client, proc
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _chat(client: httpx.Client, text: str) -> httpx.Response:
    return client.post("/api/agents/alice/chat", json={"message": text, "key": KEY})


class _ChattyHost(StoreHost):
    """The store host, plus a chat sent to the gateway while the activation holds the session's claims."""

    def __init__(self, home: Path, backend: Backend, client: httpx.Client | None) -> None:
        super().__init__(home, backend)
        self.client = client
        self.during: list[httpx.Response] = []

    def audit(self, action: str, details: dict[str, Any], *, nonce: str) -> bool:
        if self.client is not None:
            self.during.append(_chat(self.client, "DURING-THE-SWITCH"))
        return super().audit(action, details, nonce=nonce)


# Without a chat during the switch, the gateway learns only from the catalog (a stitched
# candidate has a new id) or from its first append after it (a candidate that keeps the live
# id replaces that transcript in place) that its open session was taken: that turn must
# still be served.
@pytest.mark.parametrize(
    ("same_id", "chat_during"),
    [(False, True), (False, False), (True, False)],
    ids=["chat-during-the-switch", "quiet-switch", "same-id-in-place"],
)
def test_a_gateway_on_the_same_database_serves_the_activated_session(
    pg_gateway: tuple[Home, httpx.Client, subprocess.Popen[bytes]],
    tmp_path: Path,
    pg_url: str,
    same_id: bool,
    chat_during: bool,
) -> None:
    home, client, proc = pg_gateway
    for i in range(3):  # acknowledged turns: the gateway now holds the session's lease
        r = _chat(client, f"BEFORE-{i}")
        assert r.status_code == 200, r.text
    with _pg(pg_url, home.root, "activation") as backend:
        store = backend.agent("alice")
        entry = store.catalog.get(KEY)
        assert entry is not None
        live = entry["sessionFile"]
        live_bytes = store.transcripts.export(live)
        (tmp_path / "live.jsonl").write_bytes(live_bytes)
        candidate = tmp_path / "C.jsonl"
        if same_id:  # the live session, carried on: installed over the live transcript
            candidate.write_bytes(live_bytes)
            with Session.open(candidate) as c:
                c.append_message({"role": "user", "content": "EARLIER-HISTORY, said elsewhere", "timestamp": 1})
        else:
            a = tmp_path / "A.jsonl"
            markers_a = [*(f"x{i}" for i in range(7)), "EARLIER-HISTORY"]
            build_session(a, entries=200, seed=3, compact_every=50, markers=markers_a)
            stitch([a, tmp_path / "live.jsonl"], candidate, force=True)
        markers = ["EARLIER-HISTORY", "BEFORE-2"]
        pkg = plan_activation(home.root, "alice", KEY, candidate, tmp_path / "pkg", markers=markers, backend=backend)
        host = _ChattyHost(home.root, backend, client if chat_during else None)
        res = apply_package(pkg.root, home.root, host, backend=backend)
        assert res.outcome == "applied" and res.validation is not None and res.validation["ok"]
        # While the activation held the claims the gateway wrote nothing: it answered busy.
        assert [r.status_code for r in host.during] == ([409] if chat_during else []), [r.text for r in host.during]
        assert pkg.plan.replaces_live == same_id
        if not same_id:
            assert store.transcripts.export(live) == live_bytes  # nothing appended to the old session after the plan
    assert proc.poll() is None  # the gateway was never stopped
    r = _chat(client, "AFTER-THE-SWITCH")
    assert r.status_code == 200, r.text  # served at once, from the activated session
    served = client.get("/api/agents/alice/session/transcript", params={"key": KEY})
    assert served.status_code == 200
    data = served.content
    assert data.startswith(candidate.read_bytes())  # the candidate's history, byte for byte, then the new turn
    rest = data[len(candidate.read_bytes()) :]
    assert b"AFTER-THE-SWITCH" in rest and b"BEFORE-" not in rest and b"DURING-THE-SWITCH" not in data
    with _pg(pg_url, home.root, "check") as backend:
        store = backend.agent("alice")
        entry = store.catalog.get(KEY)
        assert entry is not None and entry["sessionFile"] == pkg.plan.target_file
        if same_id:  # the old bytes are kept in the package, for a rollback
            assert (pkg.root / "rollback" / "transcript.jsonl").read_bytes() == live_bytes
        else:
            assert store.transcripts.export(live) == live_bytes  # the old session: kept, untouched
        assert hashlib.sha256(live_bytes).hexdigest() == pkg.plan.preconditions.live_transcript.sha256
        assert all(f"BEFORE-{i}".encode() in data for i in range(3))  # every acknowledged turn is in the history
        assert b"DURING-THE-SWITCH" not in store.transcripts.export(live)


# -- a process killed part-way ----------------------------------------------------------------------

# Runs `kurahi activate OP` in a process that dies (os._exit: no cleanup, its leases still held,
# its connections dropped by the kernel) at the named point, as a SIGKILL there would.
_DIE_AT = """
import os, sys
from kurahi.gateway import activation_host
from kurahi.lifecycle.activation.targets.backend import state as activation_state

point, argv = sys.argv[1], sys.argv[2:]
if point == "after-install":
    activation_state.LiveState.switch_entry = lambda self: os._exit(9)
elif point == "at-audit":
    activation_host.StoreHost.audit = lambda self, *a, **k: os._exit(9)
elif point == "rollback-after-catalog":
    activation_state.LiveState.uninstall = lambda self, **k: os._exit(9)
sys.argv = ["kurahi", *argv]
from kurahi.cli import main
main()
"""


def _dead_owner_gone(pg_url: str) -> Callable[[], bool]:
    """A condition: the killed activation's connections are gone from the server (it is known dead)."""
    import psycopg

    def check() -> bool:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT count(*) FROM kurahi.owners o JOIN pg_stat_activity a ON a.pid = o.conn_pid "
                "WHERE o.owner_id LIKE 'kurahi-activate-%'"
            ).fetchone()
        return rows is not None and rows[0] == 0

    return check


@pytest.mark.parametrize("point", ["after-install", "at-audit", "rollback-after-catalog"])
def test_an_activation_killed_part_way_is_finished_by_a_rerun(tmp_path: Path, pg_url: str, point: str) -> None:
    home = tmp_path / "home"
    init_home(home, "alice")
    with _pg(pg_url, home, "seed") as backend:
        _, candidate = _seed(backend.agent("alice", create=True), tmp_path)
        before = _state(backend.agent("alice"))
    env, pkg = _pg_env(pg_url), tmp_path / "pkg"
    plan = _kurahi("activate", "plan", "--home", str(home), "--agent", "alice", "--candidate", str(candidate),
                   "--out", str(pkg), "--marker", "LATE", env=env)  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    op = "rollback" if point.startswith("rollback") else "apply"
    if op == "rollback":
        assert _kurahi("activate", "apply", str(pkg), "--home", str(home), env=env).returncode == 0
    killed = subprocess.run(
        [sys.executable, "-c", _DIE_AT, point, "activate", op, str(pkg), "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert killed.returncode == 9, killed.stderr
    with _pg(pg_url, home, "check") as backend:
        middle = _state(backend.agent("alice"))
    assert middle != before if op == "apply" else middle[1] == before[1]  # it had changed something
    wait_for(_dead_owner_gone(pg_url), "the killed activation to be known dead")
    rerun = _kurahi("activate", op, str(pkg), "--home", str(home), "--json", env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert "resume" in json.loads(rerun.stdout)["steps"]
    verify = _kurahi("activate", "verify", str(pkg), "--home", str(home), env=env)
    with _pg(pg_url, home, "check") as backend:
        store = backend.agent("alice")
        actions = [r.action for r in backend.audit().tail()]
        if op == "apply":
            assert verify.returncode == 0, verify.stdout
            assert store.transcripts.export(json.loads((pkg / "activation.json").read_text())["targetFile"]) == (
                candidate.read_bytes()
            )
            assert actions == ["session.activate"]  # once, though the first run may have reached it
        else:
            assert verify.returncode == 1 and _state(store) == before
            assert actions == ["session.activate", "session.rollback"]
        assert backend.audit().verify().ok


@pytest.mark.parametrize("any_backend", FENCING_KINDS, indirect=True)
def test_the_viewer_reads_a_database_package_state_from_the_gateways_store(
    tmp_path: Path, any_backend: BackendMaker
) -> None:
    from kurahi.ui.repairs import load_repair

    home = tmp_path / "home"
    init_home(home, "alice")
    backend = any_backend(home)
    store = backend.agent("alice", create=True)
    _, candidate = _seed(store, tmp_path)
    (home / "repairs").mkdir()
    pkg = plan_activation(home, "alice", KEY, candidate, home / "repairs" / "r1", markers=["LATE"], backend=backend)
    assert load_repair(home, "r1", backend)["state"] == {"phase": "planned", "catalogEntry": "old", "target": "old"}
    apply_package(pkg.root, home, StoreHost(home, backend), backend=backend)
    assert load_repair(home, "r1", backend)["state"] == {"phase": "applied", "catalogEntry": "new", "target": "new"}
    state = load_repair(home, "r1", None)["state"]  # a gateway on the home's files: not read as if it were its own
    assert "catalogEntry" not in state and f"planned for the store {backend.describe()}" in state["error"]
