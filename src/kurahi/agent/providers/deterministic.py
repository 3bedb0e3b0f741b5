"""The deterministic provider: no network, the same answer for the same context.

It stands in for a real model in tests, demos and the continuity suite. Its replies
carry the identity marker found in the system prompt (a ``marker: VALUE`` line in
IDENTITY.md) and the profile name, so a probe can tell which resident and which model
answered. Directives in the latest user message script its behaviour:

* ``[[tool:NAME {json args}]]``: call tool NAME; several directives are called one per
  model call, in order, then a final text reply sums up the results;
* ``[[slow:MS]]``: take MS milliseconds to answer (for jobs that must still be running
  when a disruption hits);
* ``[[fail:timeout]]`` / ``[[fail:error]]``: fail the call;
* ``[[badargs:NAME]]``: call tool NAME with arguments that are not valid JSON;
* ``[[recall:WORD]]``: quote every context line that contains WORD.

Compaction requests get a deterministic summary of the messages they are given: a bounded
digest, plus every line that begins ``Remember:`` kept whole through later summaries.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator
from typing import Any

from kurahi.agent.providers.base import Provider
from kurahi.agent.types import Finished, ModelRequest, StreamEvent, TextDelta, ToolCallReady, Usage
from kurahi.context.text import message_text
from kurahi.errors import ProviderError, ProviderTimeoutError

__all__ = ["DeterministicProvider", "identity_marker", "message_text"]

_MARKER = re.compile(r"(?im)^[\s>*_#-]*(?:identity[ _-]?)?marker[\s*_]*[:=]\s*[`*_]*([^\s`*_]+)")
_DIRECTIVE = re.compile(r"\[\[(tool|slow|fail|badargs|recall):\s*([^\]\s]+)\s*(\{.*?\})?\s*\]\]", re.S)


def identity_marker(system: str) -> str:
    """The value of the first ``marker: VALUE`` line of a system prompt (``no-marker`` without one)."""
    m = _MARKER.search(system)
    return m.group(1) if m else "no-marker"


class DeterministicProvider(Provider):
    """A scripted, repeatable model (see the module docstring).

    Args:
        profile: the profile name, quoted in every reply.
        model: the model id.
        delay_ms: time each call takes (spread over the streamed pieces).
    """

    kind = "deterministic"
    api = "kurahi-deterministic"

    def __init__(self, profile: str = "alpha", model: str | None = None, *, delay_ms: int = 0) -> None:
        self.profile = profile
        self.model = model or profile
        self.provider_name = "deterministic"
        self.delay_ms = delay_ms

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Answer from the request alone (see the module docstring)."""
        if request.purpose == "compaction":
            text = _summary(request.messages)
            yield TextDelta(text)
            yield Finished("stop", Usage(input=request.estimated_input_tokens, output=len(text) // 4 + 1))
            return
        last_user, after = _turn_view(request.messages)
        directives = _DIRECTIVE.findall(message_text(last_user)) if last_user is not None else []
        delay = self.delay_ms
        for kind, arg, _ in directives:
            if kind == "slow":
                delay += _int(arg)
            elif kind == "fail":
                await asyncio.sleep(delay / 1000)
                if arg == "timeout":
                    raise ProviderTimeoutError("scripted timeout", provider=self.kind)
                raise ProviderError("scripted failure", provider=self.kind, status=500)
        calls = [(k, a, j) for k, a, j in directives if k in ("tool", "badargs")]
        step = sum(1 for m in after if m.get("role") == "assistant")
        usage = Usage(input=request.estimated_input_tokens)
        if step < len(calls):
            kind, name, args = calls[step]
            if delay:
                await asyncio.sleep(delay / 1000)
            seed = f"{len(request.messages)}:{step}:{message_text(last_user)}"
            call_id = "call_" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            raw = "{not json" if kind == "badargs" else (args or "{}")
            yield ToolCallReady(call_id, name, raw)
            usage.output = len(raw) // 4 + 1
            yield Finished("toolUse", usage)
            return
        text = self._reply(request, last_user, after, directives)
        pieces = _split(text, 3 if delay else 1)
        for piece in pieces:
            if delay:
                await asyncio.sleep(delay / 1000 / len(pieces))
            yield TextDelta(piece)
        usage.output = len(text) // 4 + 1
        yield Finished("stop", usage)

    def _reply(self, request: ModelRequest, last_user: Any, after: list[Any], directives: list[Any]) -> str:
        head = f"[{identity_marker(request.system)}] ({self.profile})"
        said = " ".join(_DIRECTIVE.sub("", message_text(last_user)).split()) if last_user is not None else ""
        parts = [f"{head} You said: {said[:200]}" if said else f"{head} Ready."]
        for m in after:
            if m.get("role") == "toolResult":
                status = "error" if m.get("isError") else "ok"
                first = message_text(m).splitlines()[0] if message_text(m) else ""
                parts.append(f"{m.get('toolName')} {status}: {first[:120]}")
        for kind, word, _ in directives:
            if kind == "recall":
                hits = [
                    line.strip()
                    for m in request.messages[:-1]
                    for line in message_text(m).splitlines()
                    if word.lower() in line.lower() and "[[recall:" not in line
                ]
                parts.append(f"recall {word}: " + (" | ".join(hits[-5:]) if hits else "nothing found"))
        return "\n".join(parts)


def _turn_view(messages: list[Any]) -> tuple[Any, list[Any]]:
    """The latest user message and what followed it (this turn's assistant steps and results)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user":
            return m, messages[i + 1 :]
    return None, list(messages)


def _summary(messages: list[Any]) -> str:
    """A bounded digest: the last 40 messages, 80 characters each, then every fact to keep.

    A line that begins ``Remember:`` is a fact; it is kept whole, as ``Kept: ...``, in this
    summary and in every later summary of it (a real summarizer is asked to keep every fact),
    so a fact survives any number of compactions while the digest stays bounded.
    """
    lines = []
    kept: list[str] = []
    for m in messages:
        full = message_text(m)
        for raw in full.splitlines():
            line = raw.strip()
            fact = line[len("Kept: ") :] if line.startswith("Kept: ") else line if _FACT.match(line) else None
            if fact and fact not in kept:
                kept.append(fact)
        text = " ".join(full.split())
        if text:
            lines.append(f"- {m.get('role')}: {text[:80]}")
    out = f"Summary of {len(messages)} earlier messages:\n" + "\n".join(lines[-40:])
    return out + "".join(f"\nKept: {fact}" for fact in kept)


_FACT = re.compile(r"(?i)remember:")


def _split(text: str, n: int) -> list[str]:
    if n <= 1 or len(text) < n:
        return [text]
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _int(value: str) -> int:
    try:
        return max(0, int(value))
    except ValueError:
        return 0
