"""The pairing guard: unanswered tool calls settled from evidence, by appending, in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.agent.conversation import Conversation
from kurahi.agent.ledger import Ledger, action_id
from kurahi.agent.pairing import settle, unpaired_calls
from kurahi.agent.runtime import Runtime
from kurahi.agent.tools import BUILTIN_TOOLS, ToolContext
from kurahi.context.files import project_file
from kurahi.errors import PairingRefusedError
from kurahi.store.record_log import FileRecordLog
from kurahi.testing import assistant_message, tool_result, user_message
from support.peer import PiPeer
from support.residents import config, make_home, run, with_runtime

TOOLS = {c.name: c() for c in BUILTIN_TOOLS}


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def _setup(tmp_path: Path, calls: list[dict[str, Any]], *, later: bool = False) -> tuple[Conversation, Ledger, Path]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    conv = Conversation.create(tmp_path / "s.jsonl", fsync="never", cwd=str(ws))
    conv.append_message(user_message("save it", 1))
    conv.append_message(assistant_message(calls, 2))
    if later:
        conv.append_message(user_message("hello? (sent after the crash)", 3))
        conv.append_message(assistant_message([{"type": "text", "text": "hi"}], 4))
    return conv, Ledger(FileRecordLog(tmp_path / "ledger.jsonl")), ws


def _results(file: Path) -> list[dict[str, Any]]:
    out = []
    for line in file.read_text().splitlines():
        e = json.loads(line)
        if e.get("type") == "message" and e["message"]["role"] == "toolResult":
            out.append(e["message"])
    return out


def test_ledger_outcome_is_appended_as_the_real_result(tmp_path: Path) -> None:
    conv, ledger, ws = _setup(tmp_path, [_call("c1", "write", {"path": "a.md", "content": "x"})])
    aid = action_id(conv.session_id, "c1")
    ledger.intent(conv.session_id, "c1", "write", {"path": "a.md", "content": "x"})
    ledger.outcome(aid, status="ok", result="wrote 1 bytes to a.md", settled_by="run")
    done = settle(conv, ledger, TOOLS, ws)
    assert [(s.settled_by, s.is_error) for s in done] == [("ledger", False)]
    [r] = _results(conv.file)
    assert r["content"][0]["text"] == "wrote 1 bytes to a.md" and r["isError"] is False
    assert r["details"]["kurahi"]["settledBy"] == "ledger"
    assert unpaired_calls(conv) == []
    conv.close()


@pytest.mark.parametrize("written", [True, False])
def test_lookup_settles_an_intent_without_outcome(tmp_path: Path, written: bool) -> None:
    args = {"path": "a.md", "content": "intended"}
    conv, ledger, ws = _setup(tmp_path, [_call("c1", "write", args)])
    ledger.intent(conv.session_id, "c1", "write", args)
    if written:
        (ws / "a.md").write_text("intended")
    [s] = settle(conv, ledger, TOOLS, ws)
    assert s.settled_by == "lookup" and s.is_error is (not written)
    action = Ledger(FileRecordLog(tmp_path / "ledger.jsonl")).get(action_id(conv.session_id, "c1"))
    assert action is not None and action.status == ("ok" if written else "error") and action.settled_by == "lookup"
    conv.close()


def test_unknown_outcome_is_explicit_and_says_verify_before_retry(tmp_path: Path) -> None:
    conv, ledger, ws = _setup(tmp_path, [_call("c1", "deploy", {"to": "prod"})])
    ledger.intent(conv.session_id, "c1", "deploy", {"to": "prod"})
    [s] = settle(conv, ledger, TOOLS, ws)
    assert s.settled_by == "unknown"
    [r] = _results(conv.file)
    assert r["isError"] is True and r["content"][0]["text"].startswith("Outcome unknown")
    assert "Verify the current state before any retry" in r["content"][0]["text"]
    assert Ledger(FileRecordLog(tmp_path / "ledger.jsonl")).get(action_id(conv.session_id, "c1")).status == "unknown"  # type: ignore[union-attr]
    conv.close()


def test_a_call_never_started_is_known_to_be_safe_to_retry(tmp_path: Path) -> None:
    conv, ledger, ws = _setup(
        tmp_path, [_call("c1", "write", {"path": "a", "content": "x"}), _call("c2", "read", {"path": "a"})]
    )
    done = settle(conv, ledger, TOOLS, ws)
    assert [s.settled_by for s in done] == ["not-started", "not-started"]
    texts = [r["content"][0]["text"] for r in _results(conv.file)]
    assert "was never started" in texts[0] and "has no side effects" in texts[1]
    conv.close()


def test_policy_refuse_appends_nothing(tmp_path: Path) -> None:
    conv, ledger, ws = _setup(tmp_path, [_call("c1", "deploy", {})])
    ledger.intent(conv.session_id, "c1", "deploy", {})
    before = conv.file.read_bytes()
    with pytest.raises(PairingRefusedError) as err:
        settle(conv, ledger, TOOLS, ws, policy="refuse")
    assert err.value.tool_call_ids == ["c1"]
    assert conv.file.read_bytes() == before
    conv.close()


def test_results_are_never_out_of_order_when_later_messages_exist(tmp_path: Path, pi: PiPeer) -> None:
    conv, ledger, ws = _setup(tmp_path, [_call("c1", "read", {"path": "x"})], later=True)
    before = conv.file.read_bytes()
    [s] = settle(conv, ledger, TOOLS, ws)
    assert s.settled_by == "not-started"
    assert conv.file.read_bytes().startswith(before)  # appended only
    roles = [m["role"] for m in conv.context.messages]
    assert roles == ["user", "assistant", "toolResult", "user", "assistant"]
    assert conv.context.messages[3]["content"] == "hello? (sent after the crash)"
    conv.close()
    ctx = project_file(conv.file).context.to_dict()
    assert [m["role"] for m in ctx["messages"]] == roles
    assert pi.context(conv.file)["messages"] == ctx["messages"]


def test_a_crash_between_call_and_result_is_settled_when_the_runtime_opens(tmp_path: Path, pi: PiPeer) -> None:
    home = make_home(tmp_path)
    key = "agent:alice:main"

    async def first(rt: Runtime) -> Path:
        await rt.send(key, "hello")
        conv = rt.conversation(key)
        # What a crash leaves: the call is on disk, the intent in the ledger, no result.
        conv.append_message(assistant_message([_call("cX", "write", {"path": "t.md", "content": "T"})], 5))
        rt.ledger.intent(conv.session_id, "cX", "write", {"path": "t.md", "content": "T"})
        (home / "agents/alice/workspace/t.md").write_text("T")  # the write did happen
        return conv.file

    async def second(rt: Runtime) -> Any:
        rt.conversation(key)
        return rt.settlements, await rt.send(key, "did it save?")

    file = run(with_runtime(home, first))
    settlements, r = run(with_runtime(home, second))
    assert [(s.tool_call_id, s.settled_by, s.is_error) for s in settlements] == [("cX", "lookup", False)]
    assert r.status == "ok"
    assert pi.context(file)["messages"] == project_file(file).context.to_dict()["messages"]


def test_refuse_policy_refuses_the_turn_and_says_why(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    key = "agent:alice:main"

    async def go(rt: Runtime) -> Any:
        conv = rt.conversation(key)
        conv.append_message(assistant_message([_call("cY", "deploy", {})], 5))
        rt.ledger.intent(conv.session_id, "cY", "deploy", {})
        return await rt.send(key, "go on")

    r = run(with_runtime(home, go, config=config(pairing="refuse")))
    assert r.status == "refused" and "pairing policy is 'refuse'" in (r.error or "")


def test_tool_result_helper_matches_pi_shape() -> None:
    r = tool_result("c", "read", "x", 1)
    assert set(r) == {"role", "toolCallId", "toolName", "content", "isError", "timestamp"}


def test_a_call_whose_intent_another_process_wrote_is_not_settled_as_never_started(tmp_path: Path) -> None:
    """A ledger read before another process (a gateway on the same database) wrote an intent sees it when settling.

    Found by benchmarks/multi_gateway.py: a gateway that took over a session from one that died
    mid-call settled the call as "never started, safe to call again" from its ledger as read at
    its start, while the dead gateway's intent was in the log and its side effect was done.
    """
    args = {"text": "note", "file": "notes.md"}
    conv, mine, ws = _setup(tmp_path, [_call("c1", "memory_append", args)])
    assert mine.actions() == {}  # read (and kept) before the other process wrote
    theirs = Ledger(FileRecordLog(tmp_path / "ledger.jsonl"))
    theirs.intent(conv.session_id, "c1", "memory_append", args)
    aid = action_id(conv.session_id, "c1")
    TOOLS["memory_append"].run(args, ToolContext(ws, aid))  # it ran, then that process died
    assert mine.get(aid) is None and mine.get(aid, fresh=True) is not None
    mine._actions = {}  # as read before the intent again
    [s] = settle(conv, mine, TOOLS, ws)
    assert s.settled_by == "lookup" and s.is_error is False
    conv.close()
