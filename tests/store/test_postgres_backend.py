"""The PostgreSQL backend: what only a database shared by gateways needs (conformance: test_backend_conformance.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from kurahi.errors import (
    AppendError,
    DatabaseUnavailableError,
    KurahiError,
    LeaseLostError,
    LockHeldError,
    OwnerInUseError,
    SchemaVersionError,
    UsageError,
)
from kurahi.store.open import open_backend
from kurahi.store.postgres import SCHEMA_VERSION, PostgresBackend
from kurahi.store.postgres.logs import PostgresLog
from kurahi.store.postgres.rows import split_lines
from kurahi.store.session import Session
from support.waiting import wait_for

# -- what only the database backend has ---------------------------------------------------------

HEADER = b'{"type":"session","version":3,"id":"0b5e55ed-0000-4000-8000-000000000002","timestamp":"2026-12-01T00:00:00.000Z","cwd":"/r"}\n'  # noqa: E501


def line(n: int) -> bytes:
    return (
        f'{{"type":"message","id":"{n:08x}","parentId":null,"timestamp":"2026-12-01T00:00:01.000Z",'
        f'"message":{{"role":"user","content":"m{n}","timestamp":1}}}}\n'
    ).encode()


@pytest.fixture
def open_pg(pg_url: str, tmp_path: Path) -> Iterator[Callable[..., PostgresBackend]]:
    made: list[PostgresBackend] = []

    def make(**kwargs: Any) -> PostgresBackend:
        kwargs.setdefault("home", tmp_path / "home")
        backend = PostgresBackend(kwargs.pop("url", pg_url), **kwargs)
        made.append(backend)
        return backend

    yield make
    for b in made:
        b.close()


def sql(url: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def test_a_stale_writer_is_fenced_off_and_writes_nothing(open_pg: Callable[..., PostgresBackend], pg_url: str) -> None:
    a = open_pg(owner_id="gw-a", renew_in_background=False)
    b = open_pg(owner_id="gw-b", renew_in_background=False)
    ts_a = a.agent("main", create=True).transcripts
    ledger_a = a.agent("main").log("ledger")
    h_a = ts_a.create("s.jsonl", HEADER, durable=True)
    h_a.append(line(1), durable=True)
    with pytest.raises(LockHeldError, match="gw-a"):
        b.agent("main").transcripts.open("s.jsonl")  # live: refused, and the holder is named
    # A's lease lapses (its gateway stalled): moved into the past on the database's clock.
    sql(pg_url, "UPDATE kurahi.leases SET expires_at = now() - interval '1 second'")
    h_b = b.agent("main").transcripts.open("s.jsonl")
    assert h_b.token == h_a.token + 1  # the takeover raised the fencing token
    h_b.append(line(2), durable=True)
    with pytest.raises(LeaseLostError):
        h_a.append(line(3), durable=True, records=[(ledger_a, {"kind": "intent", "actionId": "stale"})])
    with pytest.raises(LeaseLostError):  # and stays refused
        h_a.append(line(4), durable=True)
    h_b.append(line(5), durable=True)
    h_a.close()  # releasing a lease that is no longer ours changes nothing
    with pytest.raises(LockHeldError):
        a.agent("main").transcripts.open("s.jsonl")
    h_b.close()
    assert ts_a.export("s.jsonl") == HEADER + line(1) + line(2) + line(5)
    assert list(a.agent("main").log("ledger").records()) == []


def test_an_expired_lease_is_taken_over(open_pg: Callable[..., PostgresBackend]) -> None:
    a = open_pg(owner_id="gw-a", lease_seconds=0.3, renew_in_background=False)
    b = open_pg(owner_id="gw-b")
    h_a = a.agent("main", create=True).transcripts.create("s.jsonl", HEADER, durable=True)
    taken: list[Any] = []

    def try_open() -> bool:
        try:
            taken.append(b.agent("main").transcripts.open("s.jsonl"))
        except LockHeldError:
            return False
        return True

    wait_for(try_open, "gw-a's lease to expire")  # gw-a died: nothing renews its lease
    taken[0].append(line(1), durable=True)
    with pytest.raises(LeaseLostError):
        h_a.append(line(2), durable=True)
    taken[0].close()
    assert b.agent("main").transcripts.export("s.jsonl") == HEADER + line(1)


def test_a_live_writer_keeps_its_lease(open_pg: Callable[..., PostgresBackend], pg_url: str) -> None:
    a = open_pg(owner_id="gw-a", lease_seconds=0.4)  # renewed in the background every 0.1 s
    b = open_pg(owner_id="gw-b")
    h_a = a.agent("main", create=True).transcripts.create("s.jsonl", HEADER, durable=True)
    seen: set[Any] = set()

    def renewed_three_times() -> bool:
        with pytest.raises(LockHeldError):
            b.agent("main").transcripts.open("s.jsonl")
        seen.add(sql(pg_url, "SELECT expires_at FROM kurahi.leases")[0][0])
        return len(seen) > 3

    wait_for(renewed_three_times, "three background renewals")
    h_a.append(line(1), durable=True)
    h_a.close()
    b.agent("main").transcripts.open("s.jsonl").close()  # released on close: free at once


def test_ledger_records_commit_with_their_entry(open_pg: Callable[..., PostgresBackend]) -> None:
    backend = open_pg()
    agent = backend.agent("main", create=True)
    ledger = agent.log("ledger")
    h = agent.transcripts.create("s.jsonl", HEADER, durable=True)

    def fail_between(point: str) -> None:
        if point == "append.after_entry":
            raise RuntimeError("injected: the process dies between the entry and its ledger record")

    backend.fault_point = fail_between
    with pytest.raises(RuntimeError, match="injected"):
        h.append(line(1), durable=True, records=[(ledger, {"kind": "intent", "actionId": "s:1"})])
    backend.fault_point = lambda point: None
    assert agent.transcripts.export("s.jsonl") == HEADER
    assert list(ledger.records()) == []
    # The database refusing the record (a log it has no table for) also takes the entry back.
    bad = PostgresLog(agent, "nonesuch")
    with pytest.raises(AppendError):
        h.append(line(1), durable=True, records=[(ledger, {"kind": "intent"}), (bad, {"x": 1})])
    assert agent.transcripts.export("s.jsonl") == HEADER and list(ledger.records()) == []
    # The handle goes on where it was.
    h.append(line(1), durable=True, records=[(ledger, {"kind": "intent", "actionId": "s:1"})])
    h.append(line(2), durable=False, records=[(ledger, {"kind": "outcome", "actionId": "s:1"})])
    h.close()
    assert agent.transcripts.export("s.jsonl") == HEADER + line(1) + line(2)
    assert [r["kind"] for r in ledger.records()] == ["intent", "outcome"]


def test_a_newer_schema_is_refused(open_pg: Callable[..., PostgresBackend], pg_url: str) -> None:
    first = open_pg()
    assert first.migration is not None and first.migration.applied == list(range(1, SCHEMA_VERSION + 1))
    again = open_pg()
    assert again.migration is not None and again.migration.applied == []
    sql(pg_url, "INSERT INTO kurahi.schema_version (version, description) VALUES (%s, 'from the future')", [99])
    for migrate in (True, False):
        with pytest.raises(SchemaVersionError, match="version 99, newer than") as info:
            open_pg(migrate=migrate)
        assert info.value.found == 99 and info.value.known == SCHEMA_VERSION
    assert sql(pg_url, "SELECT max(version) FROM kurahi.schema_version") == [(99,)]


def test_an_old_schema_is_refused_without_migrate(open_pg: Callable[..., PostgresBackend]) -> None:
    with pytest.raises(SchemaVersionError, match="kurahi store migrate"):
        open_pg(migrate=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_database_that_is_down_is_named_without_its_password(tmp_path: Path) -> None:
    port = _free_port()
    secret = "pw-" + uuid.uuid4().hex
    with pytest.raises(DatabaseUnavailableError) as info:
        PostgresBackend(f"postgres://kurahi:{secret}@127.0.0.1:{port}/kurahi", home=tmp_path, connect_timeout=2)
    assert f"127.0.0.1:{port}/kurahi" in str(info.value)
    assert secret not in str(info.value) and secret not in repr(info.value)
    with pytest.raises(DatabaseUnavailableError) as again:
        open_backend(tmp_path, f"postgresql://kurahi:{secret}@127.0.0.1:{port}/kurahi")
    assert secret not in str(again.value)


def test_a_password_is_never_shown(open_pg: Callable[..., PostgresBackend], pg_url: str, tmp_path: Path) -> None:
    parts = urlsplit(pg_url)
    password = parts.password
    assert password
    backend = open_pg()
    agent = backend.agent("main", create=True)
    h = agent.transcripts.create("s.jsonl", HEADER, durable=True)
    shown = [backend.describe(), repr(backend), repr(agent), repr(agent.transcripts), repr(agent.catalog)]
    shown += [h.locator, agent.transcripts.locator("x.jsonl"), backend.audit().locator, repr(agent.log("ledger"))]
    for call in (
        lambda: agent.transcripts.open("s.jsonl"),
        lambda: agent.transcripts.open("missing.jsonl"),
        lambda: agent.transcripts.create("s.jsonl", HEADER, durable=True),
        lambda: open_pg(owner_id=backend.owner_id),
        lambda: PostgresBackend(pg_url.replace(password, password + "x"), home=tmp_path),
    ):
        with pytest.raises(KurahiError) as info:
            call()
        shown += [str(info.value), repr(info.value)]
    h.close()
    assert backend.describe() == f"postgresql://{parts.username}@{parts.hostname}:{parts.port}{parts.path}"
    for text in shown:
        assert password not in text, text


def test_storage_grows_linearly(open_pg: Callable[..., PostgresBackend], pg_url: str) -> None:
    backend = open_pg()
    ts = backend.agent("main", create=True).transcripts
    n = 300
    with Session.create_in(ts, "s.jsonl", cwd="/r", session_id_="sid") as s:
        for i in range(n):
            s.append_message({"role": "user", "content": f"message {i} " + "x" * (i % 50), "timestamp": i})
    data = ts.export("s.jsonl")
    rows = sql(pg_url, "SELECT count(*), sum(octet_length(line)) FROM kurahi.entries")
    assert rows == [(n + 1, len(data))]  # one row per entry, each line's bytes once
    assert sql(pg_url, "SELECT size, last_seq FROM kurahi.transcripts") == [(len(data), n + 1)]
    assert len(split_lines(data)) == n + 1


def test_same_owner_id_twice_is_refused(open_pg: Callable[..., PostgresBackend], pg_url: str) -> None:
    first = open_pg(owner_id="gw-1")
    with pytest.raises(OwnerInUseError, match="gw-1"):
        open_pg(owner_id="gw-1")
    first.close()
    open_pg(owner_id="gw-1").close()  # a clean stop frees the id at once


def test_a_dead_owners_leases_are_freed_by_its_successor(open_pg: Callable[..., PostgresBackend], pg_url: str) -> None:
    dead = open_pg(owner_id="gw-1", renew_in_background=False)
    h = dead.agent("main", create=True).transcripts.create("s.jsonl", HEADER, durable=True)
    sql(pg_url, "UPDATE kurahi.owners SET expires_at = now() - interval '1 second'")  # it stopped renewing
    successor = open_pg(owner_id="gw-1")  # the same gateway restarted
    h2 = open_pg(owner_id="gw-2").agent("main").transcripts.open("s.jsonl")  # free without waiting
    with pytest.raises(LeaseLostError):
        h.append(line(1), durable=True)
    h2.append(line(2), durable=True)
    h2.close()
    assert successor.agent("main").transcripts.export("s.jsonl") == HEADER + line(2)


# A writer in a process of its own, as a gateway is: it claims ``owner``, creates ``s.jsonl``
# with one line under a lease of an hour (so nothing but a proof of death frees it before the
# test's limit), says "ready", and waits to be killed. The URL comes in the environment.
_HOLDER = """
import os, sys
from kurahi.store.postgres import PostgresBackend
b = PostgresBackend(os.environ["HOLDER_URL"], home=sys.argv[1], owner_id=sys.argv[2], lease_seconds=3600)
h = b.agent("main", create=True).transcripts.create("s.jsonl", bytes.fromhex(sys.argv[3]), durable=True)
h.append(bytes.fromhex(sys.argv[4]), durable=True)
print("ready", h.token, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def holder(pg_url: str, tmp_path: Path) -> Iterator[Callable[[str], tuple[subprocess.Popen[str], int]]]:
    """Start a writer process holding ``s.jsonl`` under an owner id; its process and its lease's token."""
    procs: list[subprocess.Popen[str]] = []

    def start(owner: str) -> tuple[subprocess.Popen[str], int]:
        proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(tmp_path / "home"), owner, HEADER.hex(), line(1).hex()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "HOLDER_URL": pg_url},
        )
        procs.append(proc)
        assert proc.stdout is not None
        said = proc.stdout.readline().split()
        assert said[:1] == ["ready"], f"the holder did not start (exit {proc.wait()})"
        return proc, int(said[1])

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def _open_when_free(backend: PostgresBackend) -> Any:
    got: list[Any] = []

    def try_open() -> bool:
        try:
            got.append(backend.agent("main").transcripts.open("s.jsonl"))
        except LockHeldError:
            return False
        return True

    wait_for(try_open, "the lease to be free")
    return got[0]


def test_a_killed_writers_lease_is_taken_over_without_waiting_for_it_to_expire(
    open_pg: Callable[..., PostgresBackend], holder: Callable[[str], tuple[subprocess.Popen[str], int]]
) -> None:
    proc, token = holder("gw-dead")
    other = open_pg(owner_id="gw-2")
    with pytest.raises(LockHeldError, match="gw-dead"):
        other.agent("main").transcripts.open("s.jsonl")  # alive: its lease holds
    live = other.live_instances()
    assert live is not None and len(live) == 2
    proc.kill()  # SIGKILL: no chance to release anything
    proc.wait()
    # Its lease has an hour to run; what frees it is the proof that its process is gone (the
    # server closed its liveness connection). The wait is for the server to notice, not a lease.
    h = _open_when_free(other)
    assert h.token == token + 1  # a new tenure: fencing still tells the two apart
    assert other.live_instances() == {other.instance}
    h.append(line(2), durable=True)
    h.close()
    assert other.agent("main").transcripts.export("s.jsonl") == HEADER + line(1) + line(2)


def test_a_stopped_writer_is_alive_and_keeps_its_lease(
    open_pg: Callable[..., PostgresBackend], holder: Callable[[str], tuple[subprocess.Popen[str], int]], pg_url: str
) -> None:
    """Silence is not death: a stalled process keeps its connection, and only its lease's expiry frees it."""
    proc, token = holder("gw-stalled")
    other = open_pg(owner_id="gw-2")
    proc.send_signal(signal.SIGSTOP)
    try:
        with pytest.raises(LockHeldError, match="gw-stalled"):
            other.agent("main").transcripts.open("s.jsonl")
        with pytest.raises(OwnerInUseError, match="gw-stalled"):
            open_pg(owner_id="gw-stalled")
        # Its lease runs out (moved into the past on the database's clock): now it is free.
        sql(pg_url, "UPDATE kurahi.leases SET expires_at = now() - interval '1 second'")
        h = other.agent("main").transcripts.open("s.jsonl")
        assert h.token == token + 1
        h.close()
    finally:
        proc.send_signal(signal.SIGCONT)


def test_a_restarted_owner_id_is_claimed_as_soon_as_its_process_is_dead(
    open_pg: Callable[..., PostgresBackend], holder: Callable[[str], tuple[subprocess.Popen[str], int]], pg_url: str
) -> None:
    proc, token = holder("gw-1")
    with pytest.raises(OwnerInUseError, match=r"gw-1.*in use by another live process"):
        open_pg(owner_id="gw-1")  # the first is alive: refused, whatever its claim's expiry
    sql(pg_url, "UPDATE kurahi.owners SET expires_at = now() + interval '1 hour'")
    proc.kill()
    proc.wait()
    restarted: list[PostgresBackend] = []

    def claim() -> bool:
        try:
            restarted.append(open_pg(owner_id="gw-1"))
        except OwnerInUseError:
            return False
        return True

    wait_for(claim, "the dead process's connection to close")  # not its claim's hour
    # The restart freed what the dead instance held: any gateway opens it at once.
    third = open_pg(owner_id="gw-3")
    h = third.agent("main").transcripts.open("s.jsonl")
    assert h.token == token + 1
    h.close()
    assert restarted[0].live_instances() == {restarted[0].instance, third.instance}


def test_a_broken_liveness_connection_is_made_again_and_named(
    open_pg: Callable[..., PostgresBackend], pg_url: str
) -> None:
    a = open_pg(owner_id="gw-a", renew_in_background=False)
    h = a.agent("main", create=True).transcripts.create("s.jsonl", HEADER, durable=True)
    before = sql(pg_url, "SELECT conn_pid FROM kurahi.owners WHERE owner_id = 'gw-a'")[0][0]
    sql(pg_url, "SELECT pg_terminate_backend(%s)", [before])
    wait_for(  # the signal is sent at once; the backend is gone a moment later
        lambda: not sql(pg_url, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", [before]), "the backend to end"
    )
    # Until it renews, gw-a looks dead: its lease may be taken (fencing keeps that safe).
    assert a.live_instances() == frozenset()
    a.renew()  # what the heartbeat does: a new connection, named in the owner row
    after = sql(pg_url, "SELECT conn_pid FROM kurahi.owners WHERE owner_id = 'gw-a'")[0][0]
    assert after != before and a.live_instances() == {a.instance}
    with pytest.raises(LockHeldError):
        open_pg(owner_id="gw-b").agent("main").transcripts.open("s.jsonl")
    h.append(line(1), durable=True)
    h.close()


def test_a_dropped_connection_is_replaced(open_pg: Callable[..., PostgresBackend], pg_url: str) -> None:
    backend = open_pg()
    h = backend.agent("main", create=True).transcripts.create("s.jsonl", HEADER, durable=True)
    h.append(line(1), durable=True)
    db = urlsplit(pg_url).path.lstrip("/")
    killed = sql(
        pg_url,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        [db],
    )
    assert killed[0][0] >= 1
    h.append(line(2), durable=True)  # the pool hands out a new connection
    h.close()
    assert backend.agent("main").transcripts.export("s.jsonl") == HEADER + line(1) + line(2)


def test_open_backend_names_postgres(pg_url: str, tmp_path: Path) -> None:
    with open_backend(tmp_path, pg_url) as backend:
        assert isinstance(backend, PostgresBackend) and backend.kind == "postgres"


def test_a_database_that_goes_away_mid_session_fails_cleanly_and_comes_back(
    open_pg: Callable[..., PostgresBackend], pg_url: str
) -> None:
    backend = open_pg(connect_timeout=0.5, renew_in_background=False)
    ledger = backend.agent("main", create=True).log("ledger")
    h = backend.agent("main").transcripts.create("s.jsonl", HEADER, durable=True)
    h.append(line(1), durable=True)
    db = urlsplit(pg_url).path.lstrip("/")
    admin = pg_url.rsplit("/", 1)[0] + "/postgres"
    sql(admin, f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS false')
    sql(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [db])
    try:
        # The connection broke under the statement, and no other could be had to ask whether
        # it landed: the append fails, and this writer stops rather than guess.
        with pytest.raises(AppendError, match="unknown") as info:
            h.append(line(2), durable=True, records=[(ledger, {"kind": "intent", "actionId": "s:2"})])
        assert urlsplit(pg_url).password not in str(info.value)
        with pytest.raises(KurahiError):
            backend.agent("main").transcripts.export("s.jsonl")
    finally:
        sql(admin, f'ALTER DATABASE "{db}" ALLOW_CONNECTIONS true')
    with pytest.raises(AppendError, match="open the transcript again"):
        h.append(line(3), durable=True)
    h.close()
    h = backend.agent("main").transcripts.open("s.jsonl")  # reconnected: the writer reads the truth again
    h.append(line(3), durable=True, records=[(ledger, {"kind": "intent", "actionId": "s:3"})])
    h.close()
    assert backend.agent("main").transcripts.export("s.jsonl") == HEADER + line(1) + line(3)
    assert [r["actionId"] for r in ledger.records()] == ["s:3"]


def test_without_the_driver_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import sys

    for name in [m for m in sys.modules if m == "kurahi.store.postgres" or m.startswith("kurahi.store.postgres.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the extra 'postgres' were not installed
    with pytest.raises(UsageError, match=r"pip install 'kurahi\[postgres\]'"):
        open_backend(tmp_path, "postgres://kurahi@127.0.0.1/kurahi")


def test_takeovers_under_load_lose_nothing_acknowledged_and_accept_nothing_stale(
    open_pg: Callable[..., PostgresBackend], pg_url: str
) -> None:
    """Two gateways contend for one session while its lease is cut under them, again and again."""
    gateways = [open_pg(owner_id=f"gw-{i}", renew_in_background=False) for i in range(2)]
    gateways[0].agent("main", create=True).transcripts.create("s.jsonl", HEADER, durable=True).close()
    cond = threading.Condition()
    state = {"since_cut": 0, "done": False}
    acked: list[int] = []
    refused: list[int] = []
    numbers = iter(range(1, 1_000_000))
    errors: list[BaseException] = []

    def worker(backend: PostgresBackend) -> None:
        ts = backend.agent("main").transcripts
        try:
            while not state["done"]:
                try:
                    h = ts.open("s.jsonl")
                except LockHeldError:
                    with cond:
                        cond.wait(0.05)  # until the lease is cut (or look again)
                    continue
                try:
                    while not state["done"]:
                        with cond:
                            n = next(numbers)
                        try:
                            h.append(line(n), durable=False)
                        except LeaseLostError:
                            refused.append(n)
                            break
                        acked.append(n)
                        with cond:
                            state["since_cut"] += 1
                            cond.notify_all()
                finally:
                    h.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(g,)) for g in gateways]
    for t in threads:
        t.start()
    try:
        for _ in range(25):
            with cond:
                assert cond.wait_for(lambda: state["since_cut"] >= 3 or bool(errors), timeout=60), "no progress"
                state["since_cut"] = 0
            sql(pg_url, "UPDATE kurahi.leases SET expires_at = now() - interval '1 second' WHERE owner_id IS NOT NULL")
            with cond:
                cond.notify_all()
    finally:
        state["done"] = True
        with cond:
            cond.notify_all()
        for t in threads:
            t.join()
    assert not errors, errors
    data = gateways[0].agent("main").transcripts.export("s.jsonl")
    stored = [int(ln.split(b'"content":"m', 1)[1].split(b'"', 1)[0]) for ln in split_lines(data)[1:]]
    assert stored == sorted(stored) and len(stored) == len(set(stored))  # in order, none twice
    assert set(stored) == set(acked)  # every acknowledged append is there, nothing else
    assert refused and not set(refused) & set(stored)  # stale writers were refused and wrote nothing


def test_an_append_that_cannot_get_a_connection_wrote_nothing_and_the_writer_goes_on(
    open_pg: Callable[..., PostgresBackend], pg_url: str
) -> None:
    backend = open_pg(connect_timeout=0.5, renew_in_background=False, max_connections=1)
    h = backend.agent("main", create=True).transcripts.create("s.jsonl", HEADER, durable=True)
    db = backend.db
    # The pool's only connection is busy: nothing can be sent.
    with db.connection(), pytest.raises(AppendError, match="nothing was appended"):
        h.append(line(1), durable=True)
    h.append(line(2), durable=True)  # the same writer goes on
    h.close()
    assert backend.agent("main").transcripts.export("s.jsonl") == HEADER + line(2)
