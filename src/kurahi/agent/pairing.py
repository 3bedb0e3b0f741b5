"""The pairing guard: every tool call on the path gets a result before the next model call.

A call whose result never reached the transcript (the process died, the turn was cut off)
is settled from evidence, in this order:

1. the ledger holds its outcome: that real result is appended;
2. the ledger holds only its intent and the tool can look the outcome up in the world:
   the lookup's result is appended (and written to the ledger);
3. the call was never started (a side-effecting tool with no intent; a read-only tool):
   an error result saying so, which makes a retry safe;
4. nothing can tell: an ``isError`` result saying the outcome is unknown and must be
   verified before any retry (policy ``synthesize``), or :class:`PairingRefusedError`
   (policy ``refuse``).

Repairs are appended entries, never edits. When the unanswered call is followed by later
messages, appending at the leaf would put results out of order, so the guard moves the leaf
back to the end of the call's results (durably), appends the missing results there and
copies the later entries after them, byte for byte in their content.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kurahi.agent.conversation import Conversation, PathItem
from kurahi.agent.ledger import Ledger, action_id
from kurahi.agent.tools import Tool, ToolContext
from kurahi.agent.types import ToolOutput
from kurahi.errors import PairingRefusedError
from kurahi.pi.vocab import CUSTOM, FIRST_KEPT_ENTRY_ID, LEAF_MARKER_TYPE, TARGET_ID

__all__ = ["Settlement", "settle", "tool_result_message", "unpaired_calls"]

SettledBy = Literal["ledger", "lookup", "not-started", "unknown"]


@dataclass(frozen=True)
class Settlement:
    """How one unanswered call was settled."""

    tool_call_id: str
    tool: str
    settled_by: SettledBy
    entry_id: str
    is_error: bool


@dataclass(frozen=True)
class _Gap:
    window_end: int  # index of the last entry of the call's result window
    calls: list[dict[str, Any]]  # the unanswered toolCall blocks
    at_leaf: bool


def tool_result_message(call_id: str, tool: str, out: ToolOutput, **details: Any) -> dict[str, Any]:
    """A Pi ``toolResult`` message."""
    msg: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool,
        "content": [{"type": "text", "text": out.text}],
        "isError": out.is_error,
        "timestamp": int(time.time() * 1000),
    }
    merged = {**(out.details or {}), **details}
    if merged:
        msg["details"] = merged
    return msg


def _calls(item: PathItem) -> list[dict[str, Any]]:
    m = item.message
    if not isinstance(m, dict) or m.get("role") != "assistant" or not isinstance(m.get("content"), list):
        return []
    return [
        b for b in m["content"] if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
    ]


def _gaps(path: list[PathItem], start: int) -> list[_Gap]:
    gaps = []
    i = start
    while i < len(path):
        calls = _calls(path[i])
        if not calls:
            i += 1
            continue
        answered: set[str] = set()
        j = i + 1
        while j < len(path):
            m = path[j].message
            if m is None:
                j += 1
                continue
            if isinstance(m, dict) and m.get("role") == "toolResult":
                answered.add(str(m.get("toolCallId")))
                j += 1
                continue
            break
        missing = [c for c in calls if c["id"] not in answered]
        if missing:
            gaps.append(_Gap(j - 1, missing, at_leaf=j >= len(path)))
        i = j
    return gaps


def unpaired_calls(conv: Conversation) -> list[tuple[str, str]]:
    """``(toolCallId, tool)`` of every call on the path that has no result."""
    return [(c["id"], str(c.get("name"))) for g in _gaps(conv.path, 0) for c in g.calls]


def _decide(
    call: Mapping[str, Any], sid: str, ledger: Ledger, tools: Mapping[str, Tool], ctx_of: Any
) -> tuple[ToolOutput, SettledBy]:
    name = str(call.get("name"))
    aid = action_id(sid, call["id"])
    action = ledger.get(aid, fresh=True)
    tool = tools.get(name)
    if action is not None and action.status in ("ok", "error") and action.result is not None:
        return ToolOutput(action.result, is_error=action.status == "error"), "ledger"
    if action is not None and tool is not None:
        args = action.args if isinstance(action.args, dict) else {}
        found = tool.lookup(args, ctx_of(aid))
        if found is not None:
            ledger.outcome(aid, status="error" if found.is_error else "ok", result=found.text, settled_by="lookup")
            return found, "lookup"
    if action is None and tool is not None:
        kind = "has no side effects" if not tool.side_effecting else "was never started (no intent in the ledger)"
        text = f"No result: the call to {name} {kind}; the process stopped before it ran. It is safe to call it again."
        return ToolOutput(text, is_error=True), "not-started"
    text = (
        f"Outcome unknown: the call to {name} (id {call['id']}) may or may not have taken effect; the process "
        "stopped before its result was recorded. Verify the current state before any retry."
    )
    if action is not None:
        ledger.outcome(aid, status="unknown", result=text, settled_by="pairing")
    return ToolOutput(text, is_error=True), "unknown"


def settle(
    conv: Conversation,
    ledger: Ledger,
    tools: Mapping[str, Tool],
    workspace: Any,
    *,
    policy: Literal["synthesize", "refuse"] = "synthesize",
) -> list[Settlement]:
    """Give every unanswered call on ``conv``'s path a result (see the module docstring).

    Only the part of the path not checked before is scanned, so calling this before every
    model call costs next to nothing. Call it only while no run is active on the session.

    Raises:
        PairingRefusedError: policy ``refuse`` and a call that nothing can settle (nothing
            is appended then).
    """
    out: list[Settlement] = []
    sid = conv.session_id

    def ctx_of(aid: str) -> ToolContext:
        return ToolContext(workspace, aid)

    while True:
        gaps = _gaps(conv.path, conv.paired_upto)
        if not gaps:
            conv.paired_upto = len(conv.path)
            return out
        gap = gaps[0]
        decided = [(c, *_decide(c, sid, ledger, tools, ctx_of)) for c in gap.calls]
        unknown = [c["id"] for c, _, how in decided if how == "unknown"]
        if unknown and policy == "refuse":
            raise PairingRefusedError(
                f"{len(unknown)} tool call(s) have no result and nothing can tell their outcome; "
                "the agent's pairing policy is 'refuse'",
                tool_call_ids=unknown,
            )
        later = conv.path[gap.window_end + 1 :]
        if not gap.at_leaf:
            conv.session.branch(conv.path[gap.window_end].id)
        for call, result, how in decided:
            msg = tool_result_message(
                call["id"],
                str(call.get("name")),
                result,
                kurahi={"settledBy": how, "actionId": action_id(sid, call["id"])},
            )
            eid = conv.session.append_message(msg) if not gap.at_leaf else conv.append_message(msg)
            out.append(Settlement(call["id"], str(call.get("name")), how, eid, result.is_error))
        if not gap.at_leaf:
            _replay(conv, later)
            conv.reload()
        conv.paired_upto = gap.window_end + 1


_REMAP = (FIRST_KEPT_ENTRY_ID, TARGET_ID)


def _replay(conv: Conversation, items: list[PathItem]) -> None:
    """Copy ``items`` after the new leaf, their content unchanged and their ids mapped."""
    mapping: dict[Any, str] = {}
    for item in items:
        data = {k: v for k, v in item.data.items() if k not in ("id", "parentId", "timestamp")}
        for key in _REMAP:
            if data.get(key) in mapping:
                data[key] = mapping[data[key]]
        if item.type == CUSTOM and data.get("customType") == LEAF_MARKER_TYPE:
            continue  # an old leaf move means nothing on the new branch
        mapping[item.id] = conv.session.append_entry(data)
