"""What each provider family would make of Pi's next request, and which of its rules it breaks.

Pi turns the projected context into a request in two steps after ``convertToLlm``
(:mod:`kurahi.context.llm`): ``transformMessages`` in ``pi-ai`` (the same for every family),
then the family's own converter. This module models both as far as the providers' request
rules can see, the same in Pi 0.73.1 and 1.6.0:

* ``transformMessages``: tool-call ids are passed through the family's normaliser only for
  assistant messages from another model (and a result follows its call's new id); an
  assistant that ended in ``error`` or ``aborted`` is dropped (its stored results stay);
  every call without a result gets a synthetic ``"No result provided"`` error result just
  before the next user or assistant message (or at the end); **a result without a call is
  passed through unchanged**.
* Anthropic Messages: system messages go to ``system``; blank user text and blank
  assistant text are dropped, and a message left empty is dropped; consecutive results make
  one user message of ``tool_result`` blocks. The API then merges consecutive same-role
  messages into one turn.
* OpenAI Chat Completions: each result is its own ``tool`` message; an assistant with
  neither text nor calls is dropped.
* OpenAI Responses: assistant blocks become items; a stored ``call|item`` id gives the
  ``call_id`` before the ``|``; a same-model thinking block's signature is parsed as JSON
  (Pi's conversion throws when it is not, so no request is sent at all).

The rules checked (docs/session-doctor.md cites where each comes from) are the ones a
converted history breaks: pairing and placement of tool results, ids the provider accepts,
and, for Responses, a conversion that cannot finish. Each break is a :class:`Violation`
tied to the projected message (and so the entry) that causes it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

__all__ = [
    "FAMILIES",
    "Sent",
    "Violation",
    "check_family",
    "is_same_model",
    "transform",
]

FAMILIES = ("anthropic-messages", "openai-completions", "openai-responses")
"""The provider families checked, by Pi's ``api`` name."""

_NOT_ID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_ERRORED = frozenset({"error", "aborted"})


class Sent(msgspec.Struct):
    """One message of the transformed list and where it came from.

    Attributes:
        message: the message as ``transformMessages`` leaves it (ids normalised).
        origin: index of the projected message it came from (for a synthetic result: its call's assistant).
        synthetic: a result Pi made up for an unanswered call.
    """

    message: dict[str, Any]
    origin: int
    synthetic: bool = False


class Violation(msgspec.Struct, frozen=True):
    """A rule the family's request breaks, at one projected message.

    Attributes:
        family: the provider family (Pi's ``api``).
        rule: a short code (``result-without-call``, ``call-without-result``, ``result-after-content``,
            ``tool-id-pattern``, ``tool-id-length``, ``duplicate-result``, ``conversion-throws``).
        origin: index of the projected message at fault.
        detail: what the provider would say, in its own words where known.
        certain: the rule is documented or the server's refusal is on record; ``False`` for
            one that may no longer be enforced (reported, not counted as a refusal).
    """

    family: str
    rule: str
    origin: int
    detail: str
    certain: bool = True


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in _blocks(message.get("content")) if isinstance(b, dict) and b.get("type") == "toolCall"]


def _normalise(family: str, call_id: str, provider: Any) -> str:
    """The family's id normaliser (pi-ai), applied to calls from another model."""
    if family == "anthropic-messages":
        return _NOT_ID_CHAR.sub("_", call_id)[:64]
    if family == "openai-completions":
        if "|" in call_id:
            return _NOT_ID_CHAR.sub("_", call_id.split("|", 1)[0])[:40]
        return call_id[:40] if provider == "openai" else call_id
    parts = [_NOT_ID_CHAR.sub("_", p)[:64].rstrip("_") for p in call_id.split("|", 1)]
    return "|".join(parts)


def is_same_model(message: dict[str, Any], target: dict[str, Any] | None) -> bool:
    """Pi's test: the assistant's provider, api and model all equal the target model's."""
    return (
        target is not None
        and message.get("provider") == target.get("provider")
        and message.get("api") == target.get("api")
        and message.get("model") == target.get("id")
    )


def _model_key(m: dict[str, Any]) -> tuple[Any, Any, Any]:
    return m.get("provider"), m.get("api"), m.get("model")


def transform(messages: list[Any], family: str, target: dict[str, Any] | None) -> list[Sent]:
    """Pi's ``transformMessages`` over LLM messages, for one family and target model.

    Args:
        messages: ``convertToLlm``'s output (dicts; anything else is skipped).
        family: the provider family.
        target: ``{provider, api, id}`` of the model the request goes to, or ``None`` when
            it is not known (every assistant is then from another model).
    """
    renamed: dict[str, str] = {}
    first: list[Sent] = []
    same = (target.get("provider"), target.get("api"), target.get("id")) if target is not None else None
    for i, m in enumerate(messages):
        if type(m) is not dict:
            continue
        role = m.get("role")
        if role == "assistant" and _model_key(m) != same:
            content = []
            for b in _blocks(m.get("content")):
                if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str):
                    new = _normalise(family, b["id"], m.get("provider"))
                    if new != b["id"]:
                        renamed[b["id"]] = new
                        b = {**b, "id": new}
                elif isinstance(b, dict) and b.get("type") == "thinking":
                    continue  # another model's thinking is never sent as thinking
                content.append(b)
            m = {**m, "content": content}
        elif role == "toolResult" and m.get("toolCallId") in renamed:
            m = {**m, "toolCallId": renamed[m["toolCallId"]]}
        first.append(Sent(m, i))

    out: list[Sent] = []
    pending: list[dict[str, Any]] = []
    pending_from = -1
    answered: set[Any] = set()

    def settle() -> None:
        nonlocal pending
        for call in pending:
            if call.get("id") not in answered:
                result = {"role": "toolResult", "toolCallId": call.get("id"), "toolName": call.get("name")}
                result["content"] = [{"type": "text", "text": "No result provided"}]
                result["isError"] = True
                out.append(Sent(result, pending_from, synthetic=True))
        pending = []

    for s in first:
        role = s.message.get("role")
        if role == "assistant":
            settle()
            if s.message.get("stopReason") in _ERRORED:
                continue
            calls = _calls(s.message)
            if calls:
                pending, pending_from, answered = calls, s.origin, set()
            out.append(s)
        elif role == "toolResult":
            answered.add(s.message.get("toolCallId"))
            out.append(s)
        else:
            if role == "user":
                settle()
            out.append(s)
    settle()
    return out


def _blank(text: Any) -> bool:
    return not isinstance(text, str) or not text.strip()


def check_family(sent: list[Sent], family: str, target: dict[str, Any] | None) -> list[Violation]:
    """The rules ``family``'s request breaks, given the transformed messages."""
    if family == "anthropic-messages":
        return _anthropic(sent)
    if family == "openai-completions":
        return _chat(sent)
    return _responses(sent, target)


# -- Anthropic Messages ---------------------------------------------------------------


class _Turn(msgspec.Struct):
    role: str
    blocks: list[tuple[dict[str, Any], int]] = msgspec.field(default_factory=list)  # (wire block, origin)


def _anthropic_messages(sent: list[Sent]) -> list[_Turn]:
    """The request's messages as Pi builds them (one per Pi message, results grouped)."""
    msgs: list[_Turn] = []
    for s in sent:
        m, role = s.message, s.message.get("role")
        if role == "user":
            kept = [
                ({"type": b.get("type")}, s.origin)
                for b in _blocks(m.get("content"))
                if isinstance(b, dict) and (b.get("type") != "text" or not _blank(b.get("text")))
            ]
            if kept:
                msgs.append(_Turn("user", kept))
        elif role == "assistant":
            kept = []
            for b in _blocks(m.get("content")):
                if not isinstance(b, dict):
                    continue
                kind = b.get("type")
                if kind == "toolCall":
                    kept.append(({"type": "tool_use", "id": b.get("id")}, s.origin))
                elif kind == "text" and not _blank(b.get("text")):
                    kept.append(({"type": "text"}, s.origin))
                elif kind == "thinking" and (not _blank(b.get("thinking")) or b.get("redacted")):
                    kept.append(({"type": "thinking"}, s.origin))
            if kept:
                msgs.append(_Turn("assistant", kept))
        elif role == "toolResult":
            block = ({"type": "tool_result", "tool_use_id": m.get("toolCallId")}, s.origin)
            if msgs and msgs[-1].role == "results":
                msgs[-1].blocks.append(block)
            else:
                msgs.append(_Turn("results", [block]))
    return msgs


def _anthropic(sent: list[Sent]) -> list[Violation]:
    fam = "anthropic-messages"
    out: list[Violation] = []
    turns: list[_Turn] = []
    for m in _anthropic_messages(sent):
        role = "user" if m.role == "results" else m.role
        if turns and turns[-1].role == role:
            turns[-1].blocks.extend(m.blocks)  # the API merges consecutive same-role messages
        else:
            turns.append(_Turn(role, list(m.blocks)))
    for n, turn in enumerate(turns):
        if turn.role == "assistant":
            uses = [(b, o) for b, o in turn.blocks if b["type"] == "tool_use"]
            nxt = turns[n + 1] if n + 1 < len(turns) else None
            answers = {b.get("tool_use_id") for b, _ in nxt.blocks if b["type"] == "tool_result"} if nxt else set()
            for b, o in uses:
                call_id = b.get("id")
                if not isinstance(call_id, str) or not _ANTHROPIC_ID.match(call_id):
                    out.append(
                        Violation(fam, "tool-id-pattern", o, f"tool_use.id {call_id!r} should match '^[a-zA-Z0-9_-]+$'")
                    )
                elif len(call_id) > 64:
                    out.append(Violation(fam, "tool-id-length", o, f"tool_use.id is {len(call_id)} chars", False))
                if nxt is not None and call_id not in answers:
                    out.append(
                        Violation(
                            fam,
                            "call-without-result",
                            o,
                            f"`tool_use` ids were found without `tool_result` blocks immediately after: {call_id}",
                        )
                    )
            continue
        prev_uses = (
            {b.get("id") for b, _ in turns[n - 1].blocks if b["type"] == "tool_use"}
            if n > 0 and turns[n - 1].role == "assistant"
            else set()
        )
        seen_other = False
        for b, o in turn.blocks:
            if b["type"] != "tool_result":
                seen_other = True
                continue
            call_id = b.get("tool_use_id")
            if call_id not in prev_uses:
                out.append(
                    Violation(
                        fam,
                        "result-without-call",
                        o,
                        f"unexpected `tool_use_id` found in `tool_result` blocks: {call_id}. Each `tool_result` "
                        "block must have a corresponding `tool_use` block in the previous message.",
                    )
                )
            elif seen_other:
                out.append(Violation(fam, "result-after-content", o, "tool_result blocks must come first in the turn"))
    return out


# -- OpenAI Chat Completions ---------------------------------------------------------------


def _chat(sent: list[Sent]) -> list[Violation]:
    fam = "openai-completions"
    out: list[Violation] = []
    pending: dict[Any, int] | None = None  # call id -> origin, while tool messages may follow
    for s in sent:
        m, role = s.message, s.message.get("role")
        if role == "toolResult":
            call_id = m.get("toolCallId")
            if pending is None or call_id not in pending:
                out.append(
                    Violation(
                        fam,
                        "result-without-call",
                        s.origin,
                        "messages with role 'tool' must be a response to a preceding message with 'tool_calls' "
                        f"(tool_call_id {call_id})",
                    )
                )
            else:
                del pending[call_id]
            continue
        if role == "system":
            continue  # goes first, outside the conversation
        if role == "assistant":
            calls = _calls(m)
            has_text = any(
                isinstance(b, dict) and b.get("type") == "text" and not _blank(b.get("text"))
                for b in _blocks(m.get("content"))
            )
            if not calls and not has_text:
                continue  # Pi leaves it out of the request
        if pending:
            for call_id, o in pending.items():
                out.append(Violation(fam, "call-without-result", o, f"tool_call_id {call_id} has no response message"))
        pending = None
        if role == "assistant":
            calls = _calls(m)
            if calls:
                pending = {c.get("id"): s.origin for c in calls}
                for c in calls:
                    cid = c.get("id")
                    if isinstance(cid, str) and len(cid) > 40:
                        out.append(
                            Violation(
                                fam,
                                "tool-id-length",
                                s.origin,
                                f"tool_calls[].id is {len(cid)} chars; the documented maximum is 40",
                                False,
                            )
                        )
    return out


# -- OpenAI Responses ---------------------------------------------------------------------


def _call_id(call_id: Any) -> Any:
    return call_id.split("|", 1)[0] if isinstance(call_id, str) else call_id


def _responses(sent: list[Sent], target: dict[str, Any] | None) -> list[Violation]:
    fam = "openai-responses"
    out: list[Violation] = []
    calls: dict[Any, int] = {}
    outputs: dict[Any, int] = {}
    for s in sent:
        m, role = s.message, s.message.get("role")
        if role == "assistant":
            for b in _blocks(m.get("content")):
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "thinking" and b.get("thinkingSignature") and is_same_model(m, target):
                    try:
                        json.loads(b["thinkingSignature"])
                    except (TypeError, ValueError):
                        out.append(
                            Violation(
                                fam,
                                "conversion-throws",
                                s.origin,
                                "a thinking block's signature is not JSON: Pi's conversion throws, no request is sent",
                            )
                        )
                elif b.get("type") == "toolCall":
                    calls.setdefault(_call_id(b.get("id")), s.origin)
        elif role == "toolResult":
            cid = _call_id(m.get("toolCallId"))
            if cid not in calls:
                out.append(
                    Violation(
                        fam,
                        "result-without-call",
                        s.origin,
                        f"No tool call found for function call output with call_id {cid}.",
                    )
                )
            elif cid in outputs and not s.synthetic:
                out.append(
                    Violation(fam, "duplicate-result", s.origin, f"a second function_call_output for {cid}", False)
                )
            outputs.setdefault(cid, s.origin)
    for cid, o in calls.items():
        if cid not in outputs:
            out.append(Violation(fam, "call-without-result", o, f"No tool output found for function call {cid}."))
    return out
