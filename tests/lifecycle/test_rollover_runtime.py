"""Rollovers in the running system: a daily rollover through the gateway carries the lineage;
the guard keeps a session that a crash left with a terminal run and a newer transcript."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from kurahi.agent.runtime import Runtime
from kurahi.context.files import project_file
from kurahi.lifecycle.freshness.carry import check_carry
from kurahi.store.catalog import Catalog
from support.gateways import make_gateway_home, serve_in_thread
from support.residents import config, make_home, run, with_runtime

KEY = "agent:alice:main"


def test_daily_rollover_through_the_gateway_carries_the_old_context(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    with serve_in_thread(home) as s, s.client() as c:
        first = c.post("/api/agents/alice/chat", json={"message": "remember PURPLE-GIRAFFE-ALPHA"}).json()
    catalog = Catalog(home.agent("alice").catalog)
    two_days_ago = int(time.time() * 1000) - 2 * 86_400_000
    catalog.upsert(KEY, {"lastInteractionAt": two_days_ago, "sessionStartedAt": two_days_ago})
    with serve_in_thread(home) as s, s.client() as c:
        after = c.post("/api/agents/alice/chat", json={"message": "what came before? [[recall:PURPLE]]"}).json()
    assert after["sessionId"] != first["sessionId"]
    assert "PURPLE-GIRAFFE-ALPHA" in after["reply"].split("recall PURPLE: ")[1]  # in the new session's context
    sessions = home.agent("alice").sessions
    old_file, new_file = sessions / f"{first['sessionId']}.jsonl", sessions / f"{after['sessionId']}.jsonl"
    assert old_file.exists()
    assert json.loads(new_file.read_text().splitlines()[0])["parentSession"] == str(old_file)
    new_msgs = project_file(new_file).context.messages
    assert new_msgs[0]["role"] == "compactionSummary" and "PURPLE-GIRAFFE-ALPHA" in json.dumps(new_msgs)
    rollovers = [json.loads(x) for x in home.audit.read_text().splitlines() if '"session.rollover"' in x]
    assert [(r["details"]["kind"], r["details"]["carry"]) for r in rollovers] == [("daily", "lineage")]
    entry = Catalog(home.agent("alice").catalog).get(KEY)
    assert entry is not None and entry["previousSessionId"] == first["sessionId"]


@pytest.mark.parametrize("guard", [True, False])
def test_the_guard_keeps_a_fresh_session_a_crash_left_terminal(tmp_path: Path, guard: bool) -> None:
    home = make_home(tmp_path)
    cfg = config(lifecycle={"guard": guard})

    async def first(rt: Runtime) -> Any:
        r = await rt.send(KEY, "hello")
        conv = rt.conversation(KEY)
        # What a kill mid-turn leaves: the user's message is the last entry, and the
        # transcript was written after the catalog's updatedAt.
        conv.append_message({"role": "user", "content": [{"type": "text", "text": "cut off"}], "timestamp": 1})
        return r, conv.file

    r, file = run(with_runtime(home, first, config=cfg))
    assert r.status == "ok"
    entry = Catalog(home / "agents/alice/sessions/sessions.json").get(KEY)
    assert entry is not None
    mtime = entry["updatedAt"] / 1000 + 5
    os.utime(file, (mtime, mtime))

    async def second(rt: Runtime) -> Any:
        after = await rt.send(KEY, "are you there?")
        return after, rt.decisions[KEY], rt.conversation(KEY).session_id

    after, decision, sid = run(with_runtime(home, second, config=cfg))
    assert after.status == "ok"
    if guard:
        assert decision.action == "reuse" and decision.guarded and sid == entry["sessionId"]
    else:
        assert decision.kind == "terminal-timing" and sid != entry["sessionId"]


def test_explicit_reset_and_new_are_obeyed_even_with_the_guard(tmp_path: Path) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> Any:
        a = await rt.send(KEY, "one")
        sid1 = rt.conversation(KEY).session_id
        await rt.send(KEY, "/reset")
        sid2 = rt.conversation(KEY).session_id
        await rt.send(KEY, "/new start over")
        sid3 = rt.conversation(KEY).session_id
        return a, sid1, sid2, sid3, rt.conversation(KEY).file

    a, sid1, sid2, sid3, file = run(with_runtime(home, go))
    assert a.status == "ok" and len({sid1, sid2, sid3}) == 3
    assert project_file(file).context.messages[0]["content"][0]["text"] == "/new start over"  # carry none


def test_lineage_rollover_reproduces_the_context(tmp_path: Path) -> None:
    home = make_home(tmp_path)

    async def go(rt: Runtime) -> Any:
        for i in range(5):
            await rt.send(KEY, f"message {i} [[tool:list {{}}]]")
        old = rt.conversation(KEY).file
        await rt.reset_session(KEY, carry="lineage")
        return old, rt.conversation(KEY).file

    old, new = run(with_runtime(home, go))
    report = check_carry(old, new)
    assert report.ok and report.tail_messages == report.old_messages, report
