"""The runtime on each backend: turns, tool calls with their ledger, a restart, a reset, jobs.

The same scenario runs on every backend (``any_backend``: file, memory, PostgreSQL): what a
resident keeps across a restart must not depend on where it is stored. What only gateways
sharing a database meet (leases taken over, claims) is tested on PostgreSQL alone below.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kurahi.agent.ledger import Ledger
from kurahi.agent.runtime import Runtime
from kurahi.context.project import build_context
from kurahi.store.base import Backend, transcript_name
from kurahi.store.memory_backend import MemoryBackend
from support.backends import BackendMaker
from support.residents import make_home, run

KEY = "agent:alice:main"


async def _session(home: Path, backend: Backend, fn: Callable[[Runtime], Any]) -> Any:
    rt = Runtime(home, "alice", backend=backend)
    await rt.start()
    try:
        return await fn(rt)
    finally:
        await rt.close()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def scenario(home: Path, backend: Backend) -> None:
    """A resident's life on ``backend``: every check fails if the backend loses or reorders anything."""

    async def first(rt: Runtime) -> Any:
        a = await rt.send(KEY, "remember the word heliotrope")
        b = await rt.send(KEY, 'save it [[tool:write {"path": "note.md", "content": "heliotrope"}]]')
        return a, b

    a, b = run(_session(home, backend, first))
    assert a.status == "ok" and b.status == "ok"
    store = backend.agent("alice")
    entry = store.catalog.get(KEY)
    name = transcript_name(entry)
    assert name is not None and store.transcripts.exists(name)
    first_bytes = store.transcripts.export(name)
    assert b"heliotrope" in first_bytes

    actions = Ledger(store.log("ledger")).actions()
    assert [x.status for x in actions.values()] == ["ok"]
    assert next(iter(actions.values())).tool == "write"

    async def second(rt: Runtime) -> Any:
        # A restart: a new runtime on the same backend continues the same session.
        assert rt.conversation(KEY).name == name
        r = await rt.send(KEY, "what was the word?")
        jid = rt.start_job(KEY, "a background turn")
        await rt.wait_job(jid)
        return r, jid

    r, jid = run(_session(home, backend, second))
    assert r.status == "ok"
    after = store.transcripts.export(name)
    assert after.startswith(first_bytes)  # appended, never rewritten
    with store.transcripts.read(name) as t:
        ctx = build_context(t.path(), t.leaf_id)
    texts = [_text(m["content"]) for m in ctx.messages if m["role"] == "user"]
    assert texts[0] == "remember the word heliotrope" and "what was the word?" in texts
    jobs = {rec["id"]: rec["event"] for rec in store.log("jobs").records()}
    assert jobs[jid] == "succeeded"

    async def third(rt: Runtime) -> Any:
        return await rt.reset_session(KEY)

    old, new = run(_session(home, backend, third))
    entry = store.catalog.get(KEY)
    assert entry is not None and entry["sessionId"] == new and entry["previousSessionId"] == old
    new_name = transcript_name(entry)
    assert new_name is not None and new_name != name
    with store.transcripts.read(new_name) as t:
        assert t.header["parentSession"] == store.transcripts.locator(name)
    assert store.transcripts.export(name) == after  # the old history is kept as it was
    assert sorted(store.transcripts.names()) == sorted([name, new_name])


def test_a_resident_lives_the_same_on_every_backend(tmp_path: Path, any_backend: BackendMaker) -> None:
    home = make_home(tmp_path)
    scenario(home, any_backend(home))


def test_memory_backend_leaves_the_sessions_out_of_the_home(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    backend = MemoryBackend(home)
    run(_session(home, backend, lambda rt: rt.send(KEY, "hello")))
    assert not (home / "agents" / "alice" / "sessions" / "sessions.json").exists()
    assert not list((home / "agents" / "alice").rglob("*.jsonl"))
    assert backend.agent("alice").catalog.get(KEY) is not None


def test_intent_and_outcome_travel_with_their_entries(tmp_path: Path, any_backend: BackendMaker) -> None:
    """The intent is written with the tool-call entry, the outcome with the tool result (one write)."""
    home = make_home(tmp_path)
    backend = any_backend(home)
    store = backend.agent("alice", create=True)
    seen: list[tuple[str, int, int]] = []  # (entry role, ledger records at the time, intents at the time)

    def listener(kind_: str, payload: dict[str, Any]) -> None:
        if kind_ == "entry":
            recs = list(store.log("ledger").records())
            seen.append((payload["message"]["role"], len(recs), sum(r["kind"] == "intent" for r in recs)))

    async def go(rt: Runtime) -> Any:
        return await rt.send(
            KEY, 'two [[tool:write {"path": "a.md", "content": "x"}]] [[tool:write {"path": "b.md", "content": "y"}]]'
        )

    rt_result = run(_with_listener(home, backend, go, listener))
    assert rt_result.status == "ok"
    # The provider asks for one call per reply. When a tool-call entry is announced, its intent
    # is already in the ledger; when a tool result is, its outcome is; nothing comes early.
    assert seen == [
        ("user", 0, 0),
        ("assistant", 1, 1),
        ("toolResult", 2, 1),
        ("assistant", 3, 2),
        ("toolResult", 4, 2),
        ("assistant", 4, 2),
    ]
    actions = Ledger(store.log("ledger")).actions()
    assert sorted(a.status for a in actions.values()) == ["ok", "ok"]


async def _with_listener(home: Path, backend: Backend, fn: Callable[[Runtime], Any], listener: Any) -> Any:
    rt = Runtime(home, "alice", backend=backend, listener=listener)
    await rt.start()
    try:
        return await fn(rt)
    finally:
        await rt.close()


@pytest.mark.postgres
def test_a_session_whose_lease_was_taken_over_is_dropped_and_reopened(tmp_path: Path, pg_url: str) -> None:
    """A gateway that lost a session's lease writes nothing more to it, and serves it again once it is free."""
    import psycopg

    from kurahi.errors import LockHeldError
    from kurahi.store.postgres import PostgresBackend

    home = make_home(tmp_path)
    with (
        # No background renewal: a lease or claim the test lets run out stays run out.
        PostgresBackend(pg_url, home=home, owner_id="gw-a", renew_in_background=False) as a,
        PostgresBackend(pg_url, home=home, owner_id="gw-b", renew_in_background=False) as b,
    ):

        async def go(rt: Runtime) -> Any:
            first = await rt.send(KEY, "one")
            name = rt.conversation(KEY).name
            # Another gateway takes the session over once the lease has (been made to) run out.
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute("UPDATE kurahi.leases SET expires_at = now() - interval '1 second'")
            other = b.agent("alice").transcripts.open(name)
            with pytest.raises(LockHeldError):
                await rt.send(KEY, "two")  # refused by fencing: nothing written
            assert KEY not in rt._convs  # dropped, not kept broken
            with pytest.raises(LockHeldError):
                await rt.send(KEY, "three")  # busy while the other gateway holds it
            other.close()
            third = await rt.send(KEY, "four")  # free again: reopened and served
            return first, third, name

        first, third, name = run(_session(home, a, go))
        assert first.status == "ok" and third.status == "ok"
        data = a.agent("alice").transcripts.export(name)
        assert b'"one"' in data and b'"four"' in data and b'"two"' not in data and b'"three"' not in data


@pytest.mark.postgres
def test_a_starting_gateway_settles_only_what_dead_gateways_left(tmp_path: Path, pg_url: str) -> None:
    """Jobs and queued messages of a live gateway on the same database are left to it."""
    import psycopg

    from kurahi.agent.jobs import JobStore
    from kurahi.agent.queue import pending_from_journal
    from kurahi.store.postgres import PostgresBackend

    home = make_home(tmp_path)
    with (
        # No background renewal: a lease or claim the test lets run out stays run out.
        PostgresBackend(pg_url, home=home, owner_id="gw-a", renew_in_background=False) as a,
        PostgresBackend(pg_url, home=home, owner_id="gw-b", renew_in_background=False) as b,
    ):
        jobs_a = JobStore(a.agent("alice", create=True).log("jobs"), instance=a.instance)
        jid = jobs_a.create(KEY)
        jobs_a.mark(jid, "running")
        a.agent("alice").log("queue").append(
            {"op": "put", "qid": "q1", "key": KEY, "message": {}, "gateway": a.instance}
        )
        jobs_b = JobStore(b.agent("alice").log("jobs"), instance=b.instance)
        live = b.live_instances()
        assert live is not None and {a.instance, b.instance} <= live
        assert jobs_b.recover(live) == []
        assert jobs_b.get(jid) is not None and jobs_b.get(jid).status == "running"  # type: ignore[union-attr]
        assert pending_from_journal(b.agent("alice").log("queue"), live) == {}
        # A dies: its claim runs out. Now what it left is B's to settle.
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE kurahi.owners SET expires_at = now() - interval '1 second' WHERE owner_id = 'gw-a'")
        live = b.live_instances()
        assert live is not None and a.instance not in live
        assert jobs_b.recover(live) == [jid]
        assert jobs_b.get(jid).status == "interrupted"  # type: ignore[union-attr]
        assert list(pending_from_journal(b.agent("alice").log("queue"), live)) == [KEY]


@pytest.mark.postgres
def test_a_runtime_starts_while_another_gateway_holds_a_session_with_queued_messages(
    tmp_path: Path, pg_url: str
) -> None:
    """Messages a dead writer left queued on a session a live gateway has since taken over stay queued.

    Starting next to that gateway must not fail on them (it did: the restarted gateway's
    start-up tried to open the session, got LockHeldError and exited).
    """
    from kurahi.store.postgres import PostgresBackend

    home = make_home(tmp_path)
    with (
        PostgresBackend(pg_url, home=home, owner_id="gw-a") as a,
        PostgresBackend(pg_url, home=home, owner_id="gw-b") as b,
    ):

        async def hold(rt: Runtime) -> Any:
            assert (await rt.send(KEY, "one")).status == "ok"
            # A message a dead writer queued (it names no live gateway) on the session A now holds.
            rt.queue_journal.append(
                {"op": "put", "qid": "q-a-1", "key": KEY, "mode": "followup", "message": {"role": "user"}, "ts": 1}
            )
            other = Runtime(home, "alice", backend=b)
            try:
                return await other.start()
            finally:
                await other.close()

        recovered = run(_session(home, a, hold))
        assert recovered["queuedElsewhere"] == 1 and recovered["requeuedMessages"] == 0
        assert KEY in recovered["openErrors"]


def _stale_once(rt: Runtime, entry: Any) -> None:
    """Make ``rt``'s next catalog read of a key return ``entry`` (a read that lost a race with another gateway)."""
    real = rt.catalog.get
    calls = {"n": 0}

    def get(key: str) -> Any:
        calls["n"] += 1
        return entry if calls["n"] == 1 else real(key)

    rt.catalog.get = get  # type: ignore[method-assign]


@pytest.mark.postgres
def test_gateways_sharing_a_database_switch_a_key_only_while_holding_its_session(tmp_path: Path, pg_url: str) -> None:
    """A reset (or a first session) replaces what the catalog names only under the session's claim.

    Found by benchmarks/multi_gateway.py: a gateway that did not hold a key's session could reset
    it (the holder went on writing the old one) or create it beside another gateway's first
    session, and the turns acknowledged in the session the key left were outside its lineage.
    """
    from kurahi.errors import LockHeldError
    from kurahi.store.postgres import PostgresBackend

    home = make_home(tmp_path)
    with (
        PostgresBackend(pg_url, home=home, owner_id="gw-a") as a,
        PostgresBackend(pg_url, home=home, owner_id="gw-b") as b,
    ):
        catalog = a.agent("alice", create=True).catalog

        async def go(rt_a: Runtime) -> None:
            assert (await rt_a.send(KEY, "one")).status == "ok"
            first = catalog.get(KEY)
            assert first is not None
            rt_b = Runtime(home, "alice", backend=b)
            await rt_b.start()
            try:
                # B holds nothing: it may not reset the session A is writing.
                with pytest.raises(LockHeldError):
                    await rt_b.reset_session(KEY)
                assert catalog.get(KEY) == first
                # B read the catalog before A made the key's first session: its own loses the
                # compare-and-set, and A's (held) is busy, not replaced.
                _stale_once(rt_b, None)
                with pytest.raises(LockHeldError):
                    rt_b.conversation(KEY)
                assert transcript_name(catalog.get(KEY)) == first["sessionFile"]
                # A resets; B read the catalog just before: the old session it then opens is no
                # longer the key's, so it lets it go and finds the new one busy.
                await rt_a.reset_session(KEY)
                second = catalog.get(KEY)
                assert second is not None and second["sessionFile"] != first["sessionFile"]
                _stale_once(rt_b, first)
                with pytest.raises(LockHeldError):
                    rt_b.conversation(KEY)
                assert rt_b.open_conversation(KEY) is None
                assert (await rt_a.send(KEY, "two")).status == "ok"
                rt_a.drop_conversation(KEY)  # A lets the session go: now B may reset it
                old, new = await rt_b.reset_session(KEY)
                assert old == second["sessionId"] and catalog.get(KEY)["sessionId"] == new  # type: ignore[index]
                header = b.agent("alice").transcripts.export(f"{new}.jsonl").split(b"\n", 1)[0]
                assert second["sessionFile"].encode() in header  # linked: "two" stays in the key's lineage
            finally:
                await rt_b.close()

        run(_session(home, a, go))


def test_a_reset_switches_the_key_only_from_the_session_it_replaces(tmp_path: Path, any_backend: BackendMaker) -> None:
    """If the key was moved to another session under a writer (its claim lapsed unseen), its reset switches nothing."""
    from kurahi.errors import LockHeldError

    home = make_home(tmp_path)
    backend = any_backend(home)

    async def go(rt: Runtime) -> None:
        assert (await rt.send(KEY, "one")).status == "ok"
        elsewhere = {**dict(rt.catalog.get(KEY) or {}), "sessionId": "other", "sessionFile": "other.jsonl"}
        rt.catalog.upsert(KEY, elsewhere)
        with pytest.raises(LockHeldError):
            await rt.reset_session(KEY)
        assert transcript_name(rt.catalog.get(KEY)) == "other.jsonl"

    run(_session(home, backend, go))


@pytest.mark.postgres
def test_a_gateway_starting_on_a_shared_database_opens_sessions_when_asked(tmp_path: Path, pg_url: str) -> None:
    """On a database gateways share, a start takes no session's lease (it would hoard every free one)."""
    from kurahi.store.postgres import PostgresBackend

    home = make_home(tmp_path)
    with PostgresBackend(pg_url, home=home, owner_id="gw-a") as a:

        async def first(rt: Runtime) -> None:
            assert (await rt.send(KEY, "one")).status == "ok"

        run(_session(home, a, first))

        async def later(rt: Runtime) -> None:
            assert rt.open_conversation(KEY) is None  # not taken at start
            assert (await rt.send(KEY, "two")).status == "ok"  # opened (and settled) when asked
            assert rt.open_conversation(KEY) is not None

        run(_session(home, a, later))
