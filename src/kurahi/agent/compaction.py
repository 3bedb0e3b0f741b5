"""Compaction: when the context passes ``window - reserve``, summarize the older part.

The cut follows Pi's ``findCutPoint`` (keep roughly ``keepRecentTokens`` of the newest
messages, never cut before a tool result), the summary comes from the agent's own
provider (deterministic in tests), and the result is an ordinary ``compaction`` entry, so
Pi opens the compacted file with the same context Kurahi projects.
"""

from __future__ import annotations

from typing import Any

from kurahi.agent.config import AgentSettings, ModelProfile
from kurahi.agent.conversation import Conversation
from kurahi.agent.providers.base import Provider
from kurahi.agent.types import Finished, ModelRequest, TextDelta
from kurahi.context.budget import find_cut_point
from kurahi.context.llm import convert_to_llm
from kurahi.context.project import entry_message
from kurahi.errors import ProviderError
from kurahi.jsvalues import MISSING

__all__ = ["SUMMARY_PROMPT", "compact", "maybe_compact"]

SUMMARY_PROMPT = (
    "Summarize the conversation below for your own later use. Keep every decision, open task, "
    "file name, fact and identifier; drop pleasantries. Write it as notes."
)


async def compact(
    conv: Conversation,
    provider: Provider,
    profile: ModelProfile,
    keep_recent_tokens: int,
) -> str | None:
    """Compact ``conv`` now. Returns the compaction entry's id, or ``None`` when nothing can be cut.

    Raises:
        ProviderError: the summary could not be made (nothing is appended then).
    """
    path = conv.path
    entries = [p.data for p in path]
    start = 0
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            start = i + 1
            break
    cut = find_cut_point(entries, start, len(entries), keep_recent_tokens)
    if cut.first_kept_entry_index <= start or cut.first_kept_entry_index >= len(entries):
        return None
    first_kept = path[cut.first_kept_entry_index].id
    if not isinstance(first_kept, str):
        return None
    # The summary covers what the cut drops: the previous summary (if any) and every message
    # from there to the cut, the start of a split turn included.
    kept = sum(1 for p in path[cut.first_kept_entry_index :] if entry_message(p) is not MISSING)
    dropped = conv.context.messages[: len(conv.context.messages) - kept]
    request = ModelRequest(
        system=SUMMARY_PROMPT,
        messages=convert_to_llm(dropped),
        model=profile.model,
        max_tokens=min(profile.max_tokens, 8192),
        purpose="compaction",
        estimated_input_tokens=conv.size_tokens,
    )
    parts: list[str] = []
    finished = False
    async for event in provider.stream(request):
        if isinstance(event, TextDelta):
            parts.append(event.text)
        elif isinstance(event, Finished):
            finished = True
    summary = "".join(parts).strip()
    if not finished or not summary:
        raise ProviderError("the compaction summary came back empty", provider=provider.kind)
    details = {"kurahi": {"summarizedMessages": len(dropped), "provider": provider.kind, "model": profile.model}}
    return conv.append_compaction(summary, first_kept, conv.context_tokens(), details)


async def maybe_compact(
    conv: Conversation,
    provider: Provider,
    profile: ModelProfile,
    settings: AgentSettings,
    listener: Any = None,
) -> str | None:
    """Compact if it helps; a failed summary is reported to the listener and the turn goes on."""
    try:
        eid = await compact(conv, provider, profile, settings.compaction.keep_recent_tokens)
    except ProviderError as exc:
        if listener is not None:
            listener("warning", {"message": f"compaction failed: {exc}"})
        return None
    if eid is not None and listener is not None:
        listener("entry", {"id": eid, "type": "compaction"})
    return eid
