"""``kurahi mcp``'s tools and resource through the official client, in process, on the three kinds of state.

Over the real transports (stdio, Streamable HTTP) in ``test_mcp_transports.py``; here the same
client talks to the same server object in memory, so every hostile argument reaches the
server as sent (a lone surrogate too, which no JSON transport carries).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip  # noqa: B018  (the mcp extra is part of dev: a missing SDK fails below, loudly)

from mcp import Client, MCPError  # noqa: E402

from kurahi.mcp_server.served import Served  # noqa: E402
from kurahi.mcp_server.server import build_server  # noqa: E402
from support.mcp_states import (  # noqa: E402
    HOME_AFTER,
    HOME_BEFORE,
    JSON_A,
    JSON_B,
    JSON_C,
    SECRET,
    SQLITE_AFTER,
    SQLITE_BEFORE,
    kurahi_home,
    structured,
)
from support.testdata import openclaw_state_copy, tree_hash  # noqa: E402


def talk(served: Served, script: Callable[[Client], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        async with Client(build_server(served)) as c:
            return await script(c)

    return asyncio.run(run())


def call(served: Served, name: str, args: dict[str, Any]) -> Any:
    async def script(c: Client) -> Any:
        return await c.call_tool(name, args)

    return talk(served, script)


@pytest.fixture
def sqlite_state(tmp_path: Path) -> Served:
    return Served("openclaw", openclaw_state_copy("2026.9.6-reset", tmp_path / "state"))


@pytest.fixture
def json_state(tmp_path: Path) -> Served:
    return Served("openclaw", openclaw_state_copy("2026.5.28-reset-idle", tmp_path / "state"))


@pytest.fixture
def home_state(tmp_path: Path) -> Served:
    return Served("home", kurahi_home(tmp_path / "home", tmp_path))


def test_the_tools_an_agent_sees_are_read_only_and_bounded(sqlite_state: Served) -> None:
    async def script(c: Client) -> Any:
        return await c.list_tools(), await c.list_resource_templates()

    tools, templates = talk(sqlite_state, script)
    by_name = {t.name: t for t in tools.tools}
    assert sorted(by_name) == ["check", "lineage", "losses", "recall"]
    for t in by_name.values():
        assert t.description and "\n" not in t.description.strip()
        assert t.annotations is not None and t.annotations.read_only_hint is True
    recall = by_name["recall"].input_schema
    assert recall["required"] == ["query"]
    assert recall["properties"]["query"]["maxLength"] == 1000
    assert recall["properties"]["limit"]["maximum"] == 20
    assert [t.uri_template for t in templates.resource_templates] == ["kurahi://transcript/{key}/{piece}/{span}"]


def test_recall_reaches_past_a_sqlite_reset_and_says_it_left_the_view(sqlite_state: Served) -> None:
    before = structured(call(sqlite_state, "recall", {"query": SQLITE_BEFORE.lower()}))
    assert before["total"] > 0 and before["hits"]
    top = before["hits"][0]
    assert SQLITE_BEFORE in top["text"] and top["match"] == "exact phrase"
    assert top["inViewNow"] is False and top["standing"] == "before a reset"
    after = structured(call(sqlite_state, "recall", {"query": SQLITE_AFTER}))
    assert any(h["inViewNow"] for h in after["hits"])
    lineage = structured(call(sqlite_state, "lineage", {}))
    assert lineage["key"] == "agent:main:main" and lineage["layout"] == "sqlite"
    assert [b["kind"] for b in lineage["boundaries"]] == ["reset-entry"]
    assert lineage["leftView"]["messages"] > 0 and lineage["inViewNow"]["messages"] > 0
    assert lineage["repairActive"] is False
    losses = structured(call(sqlite_state, "losses", {}))
    assert losses["total"] == 1 and losses["losses"][0]["kind"] == "reset"
    assert losses["losses"][0]["lostMessages"] == lineage["leftView"]["messages"]
    # When it was said, and when it left the view: both, as `kurahi rescue --json` gives them.
    said, left = losses["losses"][0]["lastMessageAt"], losses["losses"][0]["at"]
    assert said is not None and left is not None and said <= left
    check = structured(call(sqlite_state, "check", {"markers": [SQLITE_BEFORE, SQLITE_AFTER]}))
    assert [m["sentNext"] for m in check["markers"]] == [False, True]
    assert check["runtime"] == "openclaw-2026.9"


def test_json_era_archive_and_idle_orphan_are_pieces_of_the_key(json_state: Served) -> None:
    lineage = structured(call(json_state, "lineage", {}))
    assert [p["kind"] for p in lineage["pieces"]][-1] == "live"
    assert len(lineage["pieces"]) == 3
    found = {}
    for phrase in (JSON_A, JSON_B, JSON_C):
        hits = structured(call(json_state, "recall", {"query": phrase}))["hits"]
        found[phrase] = {(h["piece"], h["inViewNow"]) for h in hits if h["match"] == "exact phrase"}
        assert hits[0]["match"] == "exact phrase"  # the phrase first, then passages sharing some words
    assert found[JSON_A] == {("p0", False)}
    assert found[JSON_B] == {("p1", False)}
    assert found[JSON_C] == {("p2", True)}
    losses = structured(call(json_state, "losses", {}))
    assert losses["total"] >= 2


def test_a_kurahi_home_and_its_secrets(home_state: Served) -> None:
    hits = structured(call(home_state, "recall", {"query": HOME_BEFORE, "limit": 3}))["hits"]
    assert hits and all(h["piece"] == "p0" and not h["inViewNow"] for h in hits)
    assert structured(call(home_state, "recall", {"query": HOME_AFTER}))["hits"][0]["inViewNow"] is True
    kestrel = structured(call(home_state, "recall", {"query": "kestrel key"}))
    text = json.dumps(kestrel)
    assert kestrel["hits"] and "kestrel" in text
    assert SECRET not in text and "abcdefgh12345678" not in text and "[redacted]" in text
    lineage = json.dumps(structured(call(home_state, "lineage", {})))
    assert "catalog-secret-value-123" not in lineage
    key = "agent:alice:support"
    assert structured(call(home_state, "lineage", {"key": key}))["key"] == key


def test_resources_read_around_a_hit_and_refuse_bad_uris(sqlite_state: Served) -> None:
    hit = structured(call(sqlite_state, "recall", {"query": SQLITE_BEFORE}))["hits"][0]

    async def script(c: Client) -> Any:
        good = await c.read_resource(hit["around"])
        errors = []
        for uri in (
            "kurahi://transcript/agent:main:main/p9/0-3",
            "kurahi://transcript/agent:main:main/p0/5-2",
            "kurahi://transcript/agent:main:main/p0/0-500",
            "kurahi://transcript/agent:main:main/p0/x-2",
            "kurahi://transcript/..%2F..%2Fetc/p0/0-2",
            "kurahi://transcript/agent:ops:main/p0/0-2",
        ):
            with pytest.raises(MCPError) as caught:
                await c.read_resource(uri)
            errors.append((caught.value.error.code, caught.value.error.message))
        again = await c.read_resource(hit["around"])
        return good, errors, again

    good, errors, again = talk(sqlite_state, script)
    body = json.loads(good.contents[0].text)
    assert any(e["entryId"] == hit["entryId"] and SQLITE_BEFORE in e["text"] for e in body["entries"])
    assert all(code == -32602 for code, _ in errors), errors
    assert "p0" in errors[0][1] and "END" in errors[1][1] and "40" in errors[2][1]
    assert "agent 'ops'" in errors[5][1]
    assert again.contents[0].text == good.contents[0].text


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"query": "x" * 1_000_000}, "query"),
        ({"query": "a\x01b"}, "control character U+0001"),
        ({"query": "pur\ud800ple"}, "query"),  # pydantic refuses it first (string_unicode)
        ({"query": "   "}, "empty"),
        ({"query": 42}, "query"),
        ({"query": "x", "limit": "ten"}, "limit"),
        ({"query": "x", "limit": 999}, "limit"),
        ({"query": "x", "key": "../../etc/passwd"}, "looks like a path"),
        ({"query": "x", "key": "agent:ops:main"}, "belongs to agent 'ops'"),
        ({"query": "x", "key": "agent:main:nope"}, "not a session key"),
        ({"query": "x", "before": "yesterday"}, "ISO-8601"),
    ],
)
def test_hostile_arguments_get_an_error_naming_them_and_the_server_keeps_serving(
    sqlite_state: Served, args: dict[str, Any], says: str
) -> None:
    async def script(c: Client) -> Any:
        bad = await c.call_tool("recall", args)
        good = await c.call_tool("recall", {"query": SQLITE_BEFORE})
        return bad, good

    bad, good = talk(sqlite_state, script)
    assert bad.is_error
    text = bad.content[0].text
    assert says in text and "Traceback" not in text
    assert len(text) < 2_000
    assert structured(good)["hits"]


def test_an_unknown_tool_and_bad_check_markers(sqlite_state: Served) -> None:
    assert call(sqlite_state, "forget_everything", {}).is_error
    assert "markers" in call(sqlite_state, "check", {"markers": []}).content[0].text
    assert "markers[0]" in call(sqlite_state, "check", {"markers": ["a\x1bb"]}).content[0].text


def test_answers_are_capped_and_say_so(sqlite_state: Served) -> None:
    few = structured(call(sqlite_state, "recall", {"query": "turn", "limit": 2}))
    assert few["total"] > few["shown"] == 2 and "more" in few
    res = structured(call(sqlite_state, "recall", {"query": "turn", "limit": 20}))
    assert len(json.dumps(res)) <= 12_000


def test_a_state_changing_under_every_read_is_refused_then_served(sqlite_state: Served, monkeypatch: Any) -> None:
    ticks = iter(range(10_000))
    real = Served.signature
    monkeypatch.setattr(Served, "signature", lambda self: (next(ticks),))
    res = call(sqlite_state, "recall", {"query": SQLITE_BEFORE})
    assert res.is_error and "kept changing" in res.content[0].text
    monkeypatch.setattr(Served, "signature", real)
    assert structured(call(sqlite_state, "recall", {"query": SQLITE_BEFORE}))["hits"]


def test_a_reset_while_serving_is_seen_by_the_next_recall(tmp_path: Path) -> None:
    state = openclaw_state_copy("2026.5.28-reset-idle", tmp_path / "state")
    served = Served("openclaw", state)
    assert structured(call(served, "recall", {"query": "ZEBRA51QUOKKA"}))["total"] == 0
    catalog = json.loads((state / "agents/main/sessions/sessions.json").read_text())
    live = state / "agents/main/sessions" / Path(catalog["agent:main:main"]["sessionFile"]).name
    with open(live, "ab") as f:  # the runtime appends a turn between two calls
        f.write(
            json.dumps(
                {"type": "message", "id": "abc12345", "parentId": None, "timestamp": "2026-12-05T00:00:00.000Z",
                 "message": {"role": "user", "content": "ZEBRA51QUOKKA", "timestamp": 1_796_000_000_000}}
            ).encode() + b"\n"
        )  # fmt: skip
    assert structured(call(served, "recall", {"query": "ZEBRA51QUOKKA"}))["total"] >= 1


def test_a_corrupt_store_is_an_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    state = openclaw_state_copy("2026.9.6-reset", tmp_path / "state")
    served = Served("openclaw", state)
    db = state / "agents/main/agent/openclaw-agent.sqlite"
    db.write_bytes(b"this is not a database" * 100)

    async def script(c: Client) -> Any:
        bad = await c.call_tool("recall", {"query": "x"})
        tools = await c.list_tools()
        return bad, tools

    bad, tools = talk(served, script)
    assert bad.is_error and "could not be read" in bad.content[0].text
    assert len(tools.tools) == 4


def test_nothing_in_the_state_changes_and_no_shm_appears(tmp_path: Path) -> None:
    state = openclaw_state_copy("2026.9.6-reset", tmp_path / "state")
    (state / "agents/main/agent/openclaw-agent.sqlite-wal").write_bytes(b"")
    before = tree_hash(state)
    served = Served("openclaw", state)
    for name, args in (
        ("lineage", {}),
        ("recall", {"query": SQLITE_BEFORE}),
        ("check", {"markers": ["x"]}),
        ("losses", {}),
    ):
        assert not call(served, name, args).is_error
    assert tree_hash(state) == before
    assert not list(state.rglob("*-shm"))


def test_no_link_is_followed_out_of_the_state(tmp_path: Path) -> None:
    home = kurahi_home(tmp_path / "home", tmp_path)
    outside = tmp_path / "outside.jsonl"
    message = {"role": "user", "content": "OUTSIDE-SECRET-88"}
    entry = {"type": "message", "id": "m1", "parentId": None, "timestamp": "2026-10-10T00:00:00Z", "message": message}
    outside.write_text(json.dumps({"type": "session", "version": 3, "id": "x"}) + "\n" + json.dumps(entry) + "\n")
    os.symlink(outside, home / "agents/alice/sessions/linked.jsonl")
    served = Served("home", home)
    assert structured(call(served, "recall", {"query": "OUTSIDE-SECRET-88"}))["total"] == 0


def test_a_pi_sessions_folder(tmp_path: Path) -> None:
    from kurahi.testing.sessions import write_session

    folder = tmp_path / "pi" / "--work-project--"
    folder.mkdir(parents=True)
    write_session(
        folder / "2026-10-01T00-00-00-000Z_s.jsonl", entries=40, compact_every=20, markers=("PI-PHRASE-KAPPA",), seed=3
    )
    served = Served("pi", tmp_path / "pi")
    hits = structured(call(served, "recall", {"query": "PI-PHRASE-KAPPA"}))["hits"]
    assert hits
    assert structured(call(served, "losses", {}))["total"] == 0
    assert structured(call(served, "lineage", {}))["layout"] == "pi"


def test_sqlite_store_is_only_read_through_a_snapshot(sqlite_state: Served) -> None:
    # The live store stays openable and unlocked while the server holds a history.
    structured(call(sqlite_state, "recall", {"query": SQLITE_BEFORE}))
    db = sqlite_state.root / "agents/main/agent/openclaw-agent.sqlite"
    with sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True) as conn:
        assert conn.execute("select count(*) from transcript_events").fetchone()[0] > 0


def test_a_long_answer_is_cut_and_says_so() -> None:
    from kurahi.mcp_server.answers import MAX_ANSWER, _fit

    out = _fit({"hits": [{"text": "x" * 1_000} for _ in range(30)]}, "hits")
    assert out["cut"] is True and len(json.dumps(out)) <= MAX_ANSWER
    assert out["cutNote"].startswith(f"showing {len(out['hits'])} of 30 hits")


def test_when_the_phrase_fills_the_answer_the_words_are_not_searched(sqlite_state: Served) -> None:
    filled = structured(call(sqlite_state, "recall", {"query": SQLITE_BEFORE, "limit": 3}))
    assert [h["match"] for h in filled["hits"]] == ["exact phrase"] * 3
    assert "exact phrase" in filled["totalCounts"]
    wide = structured(call(sqlite_state, "recall", {"query": SQLITE_BEFORE, "limit": 20}))
    assert "totalCounts" not in wide and wide["total"] >= filled["total"]  # every word searched too
    assert wide["hits"][:3] == filled["hits"]


def test_recall_ranks_by_the_words_that_tell_passages_apart(tmp_path: Path) -> None:
    # "where is the deploy": only "deploy" says anything. A passage full of the other words
    # (newer, and holding two of them) must not outrank the one that holds "deploy".
    from kurahi.pi.transcript import Transcript

    root = kurahi_home(tmp_path / "home", tmp_path)
    live = next(p for p in (root / "agents" / "alice" / "sessions").glob("*.jsonl"))
    with Transcript.open(live) as t:
        parent = t.leaf_id
    lines = []
    for n, text in enumerate(["the deploy is on Friday", "where was the plan, and what is it?"]):
        entry = {
            "type": "message",
            "id": f"stop{n:04d}",
            "parentId": parent,
            "timestamp": f"2026-10-09T09:0{n}:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1_791_536_400_000},
        }
        lines.append(json.dumps(entry) + "\n")
        parent = entry["id"]
    with open(live, "a", encoding="utf-8") as f:
        f.writelines(lines)
    served, key = Served("home", root), "agent:alice:support"
    answer = structured(call(served, "recall", {"query": "where is the deploy", "key": key}))
    got = [h["entryId"] for h in answer["hits"]]
    assert got[0] == "stop0000" and "stop0001" not in got, got
    common = structured(call(served, "recall", {"query": "where was", "key": key}))
    assert "stop0001" in [h["entryId"] for h in common["hits"]], "a query of common words alone still finds them"
