"""One turn: user message(s) in, model calls and tool calls until the model stops.

Write-ahead order, which the crash tests check:

1. the pairing guard settles every unanswered call on the path;
2. the user's message is appended before the model is called;
3. each assistant message is appended before any of its tools run;
4. a side-effecting call's intent is in the ledger before the tool runs, its outcome
   after; the tool result is appended before the next model call;
5. at the end the transcript is synced (policies ``turn`` and ``always``), and only then is
   the turn reported done.

Listeners hear about an entry only after it is written under the session's fsync policy
(``always``: on stable storage; ``turn``: written to the kernel, on stable storage by the
end of the turn). Text deltas are streamed to listeners as *provisional*.

Steering: messages put in :attr:`TurnControl.steer` while the turn runs are appended at
the next tool boundary, so the model's next call in this same turn sees them; any left
when the model stops start another step of the same turn. Interrupting: a turn told to
stop during a model call records the partial reply with ``stopReason: "aborted"``; told to
stop while a tool runs, it lets the tool finish (a half-run side effect is worse than a
late stop), records its result, records the calls it will not run, and stops.

Retries: a model call that failed with 429, a 5xx or a connection error before any of its
reply arrived is tried again, up to the profile's ``maxRetries``, after a backoff
(:mod:`kurahi.agent.retry`). Nothing is written for a failed attempt; a call that fails
after its retries is recorded as an error entry like any failed call, and the turn reports it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kurahi.agent.compaction import maybe_compact
from kurahi.agent.config import AgentSettings, ModelProfile
from kurahi.agent.conversation import Conversation
from kurahi.agent.ledger import Ledger, action_id, intent_record, outcome_record
from kurahi.agent.pairing import settle, tool_result_message
from kurahi.agent.providers.base import Provider
from kurahi.agent.retry import RetryReason, backoff_delay, retry_reason
from kurahi.agent.tools import Tool, ToolContext
from kurahi.agent.types import Finished, ModelRequest, TextDelta, ToolCallReady, ToolOutput, Usage
from kurahi.agent.workspace import system_prompt
from kurahi.context.budget import should_compact
from kurahi.errors import KurahiError, ProviderError, ToolError, UsageError

__all__ = ["Listener", "RetryHook", "TurnControl", "TurnResult", "run_turn", "user_message"]

Listener = Callable[[str, dict[str, Any]], None]
"""Called with ``("entry", {...})`` once an entry is written, ``("delta", {...})`` for streamed text."""

RetryHook = Callable[[RetryReason, float], None]
"""Told why a failed model call is retried and how long the turn waits first (metrics)."""

Status = Literal["ok", "error", "aborted", "refused"]


@dataclass
class TurnResult:
    """How a turn ended."""

    status: Status
    reply: str = ""
    """The final assistant text."""
    reply_entry_id: str | None = None
    error: str | None = None
    entries: list[str] = field(default_factory=list)
    """Ids of every entry this turn appended, in order."""
    steps: int = 0
    """Model calls made."""
    replayed: bool = False
    """The answer of a turn stored earlier, given again for a message sent again (its idempotency key)."""
    session_id: str | None = None
    """The session the turn ran on (set by the runtime)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "status": self.status,
            "reply": self.reply,
            "replyEntryId": self.reply_entry_id,
            "error": self.error,
            "entries": self.entries,
            "steps": self.steps,
        }


@dataclass
class TurnControl:
    """Ways in to a running turn."""

    steer: list[dict[str, Any]] = field(default_factory=list)
    """User messages to inject at the next tool boundary."""
    stop_requested: bool = False
    """Stop at the next boundary (set by an interrupt while a tool runs)."""
    stop_reason: str = "interrupted by a newer message"
    """Why the turn was stopped, recorded with the abort."""
    phase: Literal["idle", "model", "tool", "write"] = "idle"
    on_steer_taken: Callable[[list[dict[str, Any]]], None] | None = None
    """Told which steered messages were appended (the queue marks them delivered)."""


def user_message(text: str, *, max_bytes: int = 256 * 1024) -> dict[str, Any]:
    """A Pi user message.

    Raises:
        UsageError: empty, or larger than ``max_bytes`` in UTF-8.
    """
    if not isinstance(text, str) or not text.strip():
        raise UsageError("a message needs some text")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise UsageError(f"message is {size} bytes; the limit is {max_bytes}")
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": _now()}


def _now() -> int:
    return int(time.time() * 1000)


def _parse_args(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass
class _Turn:
    conv: Conversation
    provider: Provider
    profile: ModelProfile
    settings: AgentSettings
    tools: Mapping[str, Tool]
    ledger: Ledger
    workspace: Path
    listener: Listener | None
    control: TurnControl
    result: TurnResult = field(default_factory=lambda: TurnResult("ok"))
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Ledger outcomes waiting for their tool result's entry, by tool call id."""
    on_retry: RetryHook | None = None

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        if self.listener is not None:
            self.listener(kind, payload)

    def append(
        self, msg: dict[str, Any], extra: Mapping[str, Any] | None = None, *, ledger: Sequence[dict[str, Any]] = ()
    ) -> str:
        """Append an entry, with the ledger records that belong to it written in the same write."""
        self.control.phase = "write"
        eid = self.conv.append_message(msg, extra=extra, records=[(self.ledger.log, rec) for rec in ledger])
        for rec in ledger:
            self.ledger.noted(rec)
        self.result.entries.append(eid)
        self.emit("entry", {"id": eid, "message": msg})
        return eid

    def runnable(self, call: ToolCallReady) -> tuple[Tool, dict[str, Any]] | None:
        """The tool and arguments of a call that will run and has a side effect (``None`` otherwise)."""
        args = _parse_args(call.arguments)
        tool = self.tools.get(call.name)
        if args is None or tool is None or not tool.side_effecting or not self.settings.tools.permits(call.name):
            return None
        return tool, args

    def tool_result(self, call_id: str, name: str, out: ToolOutput) -> None:
        """Append a call's result with its pending ledger outcome."""
        pending = self.outcomes.pop(call_id, None)
        self.append(tool_result_message(call_id, name, out), ledger=[pending] if pending else ())

    def assistant(
        self, content: list[dict[str, Any]], stop: str, usage: Usage, error: str | None = None
    ) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": self.provider.api,
            "provider": self.provider.provider_name,
            "model": self.profile.model,
            "usage": usage.to_pi(),
            "stopReason": stop,
            "timestamp": _now(),
        }
        if error is not None:
            msg["errorMessage"] = error
        return msg

    def take_steered(self) -> bool:
        if not self.control.steer:
            return False
        taken, self.control.steer = self.control.steer, []
        for m in taken:
            self.append(m["message"], m.get("extra"))
        if self.control.on_steer_taken is not None:
            self.control.on_steer_taken(taken)
        return True

    async def model_call(self) -> tuple[list[dict[str, Any]], list[ToolCallReady], str] | None:
        """One streamed model call; ``None`` when it failed or was aborted (already recorded)."""
        self.result.steps += 1
        tools = [t.spec() for t in self.tools.values() if self.settings.tools.permits(t.name)]
        request = ModelRequest(
            system=system_prompt(self.workspace),
            messages=self.conv.llm,
            model=self.profile.model,
            tools=tools,
            max_tokens=self.profile.max_tokens,
            estimated_input_tokens=self.conv.size_tokens,
        )
        text: list[str] = []
        content: list[dict[str, Any]]
        calls: list[ToolCallReady] = []
        finished: Finished | None = None
        retries = 0
        self.control.phase = "model"
        try:
            while True:
                try:
                    async with asyncio.timeout(self.profile.timeout_s):
                        async for event in self.provider.stream(request):
                            if isinstance(event, TextDelta):
                                text.append(event.text)
                                self.emit("delta", {"text": event.text, "provisional": True})
                            elif isinstance(event, ToolCallReady):
                                calls.append(event)
                            elif isinstance(event, Finished):
                                finished = event
                    break
                except ProviderError as exc:
                    # Only a call of which nothing arrived is tried again: a listener has seen
                    # the deltas of one that broke off, and a second reply would follow them.
                    wait = self.retry_wait(exc, retries + 1) if not text and not calls else None
                    if wait is None:
                        raise
                    retries += 1
                    await asyncio.sleep(wait)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            partial: list[dict[str, Any]] = [{"type": "text", "text": "".join(text)}] if text else []
            why = self.control.stop_reason
            self.append(self.assistant(partial, "aborted", Usage(), why))
            self.result.status, self.result.error = "aborted", why
            return None
        except (TimeoutError, ProviderError) as exc:
            error = (
                f"model call timed out after {self.profile.timeout_s:g} s"
                if isinstance(exc, TimeoutError)
                else str(exc)
            )
            if retries:
                error += f" (gave up after {retries} {'retry' if retries == 1 else 'retries'})"
            self.append(self.assistant([], "error", Usage(), error))
            self.result.status, self.result.error = "error", error
            return None
        finally:
            self.control.phase = "write"
        if finished is None:
            error = f"{self.provider.kind}: the reply ended without a stop reason"
            self.append(self.assistant([], "error", Usage(), error))
            self.result.status, self.result.error = "error", error
            return None
        content = [{"type": "text", "text": "".join(text)}] if text else []
        for c in calls:
            args = _parse_args(c.arguments)
            content.append(
                {"type": "toolCall", "id": c.id, "name": c.name, "arguments": args if args is not None else {}}
            )
        stop = "toolUse" if calls else finished.stop_reason
        # Write-ahead: the intent of every side effect the reply asks for is committed with
        # the entry that asks for it (one transaction where the backend has them).
        intents = []
        for c in calls:
            found = self.runnable(c)
            if found is not None:
                intents.append(intent_record(self.conv.session_id, c.id, c.name, found[1]))
        eid = self.append(self.assistant(content, stop, finished.usage), ledger=intents)
        if not calls:
            self.result.reply, self.result.reply_entry_id = "".join(text), eid
        return content, calls, stop

    def retry_wait(self, exc: ProviderError, attempt: int) -> float | None:
        """Seconds to wait before retry ``attempt`` of a failed call, or ``None`` to fail it now."""
        reason = retry_reason(exc)
        if reason is None or attempt > self.profile.max_retries:
            return None
        wait = backoff_delay(attempt, self.profile.backoff, exc.retry_after)
        if wait is None:
            exc.args = (f"{exc} (it asked to retry after {exc.retry_after:g} s, longer than this profile waits)",)
            return None
        if self.on_retry is not None:
            self.on_retry(reason, wait)
        return wait

    async def run_tool(self, call: ToolCallReady) -> ToolOutput:
        args = _parse_args(call.arguments)
        if args is None:
            return ToolOutput(f"arguments for {call.name} are not a valid JSON object: {call.arguments[:200]!r}", True)
        tool = self.tools.get(call.name)
        if tool is None:
            return ToolOutput(f"unknown tool {call.name!r}; available: {', '.join(sorted(self.tools))}", True)
        if not self.settings.tools.permits(call.name):
            return ToolOutput(f"tool {call.name!r} is denied by this agent's tool policy", True)
        aid = action_id(self.conv.session_id, call.id)
        if tool.side_effecting and self.ledger.get(aid) is None:
            self.ledger.intent(self.conv.session_id, call.id, call.name, args)  # not planned with its entry
        self.control.phase = "tool"
        try:
            # In a thread: a slow tool must not stall other sessions. Shielded: an interrupt
            # waits for the tool rather than abandoning a half-run side effect.
            out = await asyncio.shield(asyncio.to_thread(tool.run, args, ToolContext(self.workspace, aid)))
        except ToolError as exc:
            out = ToolOutput(str(exc), True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool's own bug is the model's error result, not a crash
            out = ToolOutput(f"{call.name} failed: {type(exc).__name__}: {exc}", True)
        finally:
            self.control.phase = "write"
        if tool.side_effecting:
            # Committed with the tool result's entry, before the next model call sees it.
            self.outcomes[call.id] = outcome_record(
                aid, status="error" if out.is_error else "ok", result=out.text, settled_by="run"
            )
        return out


async def run_turn(
    conv: Conversation,
    inputs: list[dict[str, Any]],
    *,
    provider: Provider,
    profile: ModelProfile,
    settings: AgentSettings,
    tools: Mapping[str, Tool],
    ledger: Ledger,
    workspace: Path,
    listener: Listener | None = None,
    control: TurnControl | None = None,
    offload_sync: Callable[[], bool] | None = None,
    on_retry: RetryHook | None = None,
) -> TurnResult:
    """Run one turn (see the module docstring).

    Args:
        conv: the session, open for appending.
        inputs: ``{"message": <Pi user message>, "extra": {...}}`` items, appended in order.
        provider: the model's provider.
        profile: the model's profile.
        settings: the agent's settings (tool policy, pairing policy, compaction, limits).
        tools: tools by name.
        ledger: the agent's action-outcome ledger.
        workspace: the agent's workspace (system prompt, tool root).
        listener: told about entries and streamed text.
        control: steering and stopping from outside.
        offload_sync: asked at the end of the turn; when it says yes, the final ``fdatasync``
            runs in a worker thread so other sessions' turns go on meanwhile.
        on_retry: told of every retry of a failed model call (:mod:`kurahi.agent.retry`).

    Returns:
        How the turn ended. Errors of the model or of tools are recorded in the transcript
        and reported here; they are not raised.

    Raises:
        StoreError: an append or the final sync failed (the turn is not acknowledged).
    """
    t = _Turn(conv, provider, profile, settings, tools, ledger, workspace, listener, control or TurnControl())
    t.on_retry = on_retry
    driven = False
    try:
        await _drive(t, inputs)
        driven = True
    finally:
        t.control.phase = "idle"
        try:
            if offload_sync is not None and offload_sync():
                await asyncio.shield(asyncio.to_thread(conv.sync))
            else:
                conv.sync()
        except KurahiError:
            # A turn whose entries may not last is not acknowledged: the caller hears the
            # store's error (an error the turn itself raised goes out instead).
            if driven:
                raise
    return t.result


async def _drive(t: _Turn, inputs: list[dict[str, Any]]) -> None:
    conv, settings, profile = t.conv, t.settings, t.profile
    try:
        settle(conv, t.ledger, t.tools, t.workspace, policy=settings.pairing)
    except KurahiError as exc:
        t.result.status, t.result.error = "refused", str(exc)
        return
    for item in inputs:
        t.append(item["message"], item.get("extra"))
    while True:
        if t.control.stop_requested:
            t.result.status, t.result.error = "aborted", t.control.stop_reason
            return
        if t.result.steps >= settings.max_steps:
            t.result.status, t.result.error = "error", f"stopped after {settings.max_steps} model calls in one turn"
            return
        over = should_compact(conv.context_tokens(), profile.context_window, settings.compaction.reserve_tokens)
        if over and settings.compaction.enabled:
            await maybe_compact(conv, t.provider, profile, settings, t.listener)
        step = await t.model_call()
        if step is None:
            return
        _, calls, _ = step
        if not calls:
            if t.take_steered():
                continue
            return
        for i, call in enumerate(calls):
            if t.control.stop_requested:
                for rest in calls[i:]:
                    out = ToolOutput(f"not run: the turn was stopped before this call ({t.control.stop_reason})", True)
                    aid = action_id(conv.session_id, rest.id)
                    if t.ledger.get(aid) is not None:  # its intent was written: say it never ran
                        t.outcomes[rest.id] = outcome_record(
                            aid, status="error", result=out.text, settled_by="interrupt"
                        )
                    t.tool_result(rest.id, rest.name, out)
                break
            out = await t.run_tool(call)
            t.tool_result(call.id, call.name, out)
        conv.paired_upto = len(conv.path)
        t.take_steered()
