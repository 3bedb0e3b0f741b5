"""The action-outcome ledger: what a side-effecting tool call meant to do, and what happened.

A transcript records a conversation; it cannot prove that a side effect happened. The
ledger can. Before a side-effecting tool runs, its *intent* (action id, tool, arguments
and their hash) is appended and flushed; after it returns, its *outcome*. An intent with no
outcome is an action whose result is unknown until a lookup settles it.

The action id is ``<sessionId>:<toolCallId>``: stable across restarts, so it doubles as an
idempotency key. The file is a :class:`~kurahi.store.record_log.FileRecordLog`: one JSON object per
line, one ``write(2)`` each, a torn last line (a crash mid-write) skipped on reading.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from kurahi.store.base import RecordLog

__all__ = ["Action", "Ledger", "action_id", "intent_record", "outcome_record"]

Status = Literal["pending", "ok", "error", "unknown"]


def action_id(session_id: str, tool_call_id: str) -> str:
    """The stable idempotency key of a tool call."""
    return f"{session_id}:{tool_call_id}"


def args_hash(args: Any) -> str:
    """SHA-256 of the arguments' JSON with sorted keys."""
    try:
        data = msgspec.json.encode(args, order="sorted")
    except UnicodeEncodeError:  # a lone surrogate, which JSON carries as an escape
        from kurahi.js.stringify import json_utf8

        data = json_utf8(json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":")))
    return hashlib.sha256(data).hexdigest()


@dataclass
class Action:
    """An action as the ledger knows it (the fold of its records)."""

    action_id: str
    tool: str
    args: Any
    session_id: str
    tool_call_id: str
    intent_at: int
    status: Status = "pending"
    """``pending`` (intent only: running, or cut off), ``ok``, ``error``, or ``unknown``."""
    result: str | None = None
    settled_by: str | None = None
    """``run``, ``lookup``, ``pairing`` or ``interrupt``."""
    outcome_at: int | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for ``kurahi actions --json``."""
        return {
            "actionId": self.action_id,
            "tool": self.tool,
            "args": self.args,
            "argsSha256": args_hash(self.args),
            "sessionId": self.session_id,
            "toolCallId": self.tool_call_id,
            "status": self.status,
            "result": self.result,
            "settledBy": self.settled_by,
            "intentAt": self.intent_at,
            "outcomeAt": self.outcome_at,
        }


class Ledger:
    """One agent's ledger (see the module docstring).

    Args:
        log: the record log it lives in (:meth:`kurahi.store.base.AgentStore.log` ``("ledger")``),
            flushed on every record unless the agent's fsync policy is ``never``.
    """

    def __init__(self, log: RecordLog) -> None:
        self.log = log
        self._journal = log
        self._actions: dict[str, Action] | None = None

    # -- reading --------------------------------------------------------------------

    def actions(self) -> dict[str, Action]:
        """Every action, by id, in the order of their intents (read once, then kept current)."""
        if self._actions is None:
            self._actions = _fold(self._journal.records())
        return self._actions

    def get(self, action_id_: str, *, fresh: bool = False) -> Action | None:
        """One action, or ``None``.

        ``fresh``: when the action is unknown here or has no definite outcome, read the log
        again first. What this object keeps is current only for what this process wrote; on
        a store several gateways share, a session taken over from a gateway that died has
        calls whose intent (and maybe outcome) that gateway wrote, which the pairing guard must
        see (or it would settle a call that ran as "never started").
        """
        action = self.actions().get(action_id_)
        if fresh and (action is None or action.status in ("pending", "unknown")):
            # Only this action's records, not the whole log again: a takeover asks this for
            # each call left dangling, and the log holds everything the agent ever did.
            found = _fold(self._journal.records_where("actionId", action_id_)).get(action_id_)
            if found is not None:
                self.actions()[action_id_] = action = found
        return action

    # -- writing --------------------------------------------------------------------

    def intent(self, session_id: str, tool_call_id: str, tool: str, args: Any) -> Action:
        """Record what is about to run; on disk (and flushed) when this returns."""
        rec = intent_record(session_id, tool_call_id, tool, args)
        self._write(rec)
        action = self.noted(rec)
        assert action is not None  # an intent always makes its action
        return action

    def outcome(self, aid: str, *, status: Status, result: str, settled_by: str) -> None:
        """Record how an action ended (``ok``/``error``) or that it cannot be known (``unknown``)."""
        rec = outcome_record(aid, status=status, result=result, settled_by=settled_by)
        self._write(rec)
        self.noted(rec)

    def noted(self, rec: dict[str, Any]) -> Action | None:
        """Take a record written elsewhere (with its transcript entry) into the ledger's view; its action."""
        aid = rec["actionId"]
        if rec["kind"] == "intent":
            action = Action(
                aid, rec["tool"], rec["args"], rec["sessionId"], rec["toolCallId"], rec["ts"], history=[rec]
            )
            self.actions()[aid] = action
            return action
        found = self.actions().get(aid)
        if found is not None:
            _apply(found, rec)
        return found

    def _write(self, rec: dict[str, Any]) -> None:
        self._journal.append(rec)

    def close(self) -> None:
        """Close the file."""
        self._journal.close()


def intent_record(session_id: str, tool_call_id: str, tool: str, args: Any) -> dict[str, Any]:
    """The ledger record of what is about to run (see :meth:`Ledger.intent`)."""
    return {
        "kind": "intent",
        "actionId": action_id(session_id, tool_call_id),
        "sessionId": session_id,
        "toolCallId": tool_call_id,
        "tool": tool,
        "args": args,
        "argsSha256": args_hash(args),
        "ts": _now(),
    }


def outcome_record(aid: str, *, status: Status, result: str, settled_by: str) -> dict[str, Any]:
    """The ledger record of how an action ended (see :meth:`Ledger.outcome`)."""
    return {"kind": "outcome", "actionId": aid, "status": status, "result": result, "via": settled_by, "ts": _now()}


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _now() -> int:
    return int(time.time() * 1000)


def _apply(action: Action, rec: dict[str, Any]) -> None:
    action.history.append(rec)
    status = rec.get("status")
    # A later definite outcome (a lookup after an "unknown") wins; "unknown" never hides one.
    if status in ("ok", "error") or action.status == "pending":
        action.status = status if status in ("ok", "error", "unknown") else action.status
        action.result = rec.get("result") if isinstance(rec.get("result"), str) else action.result
        action.settled_by = rec.get("via") if isinstance(rec.get("via"), str) else None
        action.outcome_at = rec.get("ts") if isinstance(rec.get("ts"), int) else None


def _fold(records: Iterable[dict[str, Any]]) -> dict[str, Action]:
    out: dict[str, Action] = {}
    for rec in records:
        aid = rec.get("actionId")
        if not isinstance(aid, str):
            continue
        if rec.get("kind") == "intent":
            if aid not in out:
                out[aid] = Action(
                    aid,
                    str(rec.get("tool", "")),
                    rec.get("args"),
                    str(rec.get("sessionId", "")),
                    str(rec.get("toolCallId", "")),
                    _int(rec.get("ts")),
                    history=[rec],
                )
        elif rec.get("kind") == "outcome" and aid in out:
            _apply(out[aid], rec)
    return out
