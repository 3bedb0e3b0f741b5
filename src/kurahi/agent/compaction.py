"""Compaction: when the context passes ``window - reserve``, summarize the older part.

The cut follows Pi 1.6.0's ``prepareCompaction``: over the projection (what each context
entry contributes after its edits), from after the compaction now in force, keep roughly
``keepRecentTokens`` of the newest messages and never cut before a tool result
(``findProjectedCutPoint``). The summary comes from the agent's own provider
(deterministic in tests) and covers the previous summary and every message the cut drops
(system messages are prompt state, not conversation, and are not summarized). The result is
an ordinary ``compaction`` entry carrying what 1.6.0's ``appendCompaction`` carries:
``tokensBefore`` from ``estimateProjectedContextTokens`` and, when the path holds system
messages, their replay as ``systemMessage`` (the compaction leaves the system messages
before it out of the retained window). Pi opens the compacted file with the same context
Kurahi projects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kurahi.agent.config import AgentSettings, ModelProfile
from kurahi.agent.conversation import Conversation
from kurahi.agent.providers.base import Provider
from kurahi.agent.types import Finished, ModelRequest, TextDelta
from kurahi.context.budget import find_projected_cut_point
from kurahi.context.llm import convert_to_llm
from kurahi.context.project import ProjectedEntry, build_context
from kurahi.context.tokens import estimate_projected_context_tokens
from kurahi.errors import ProviderError
from kurahi.pi.system import current_system_message
from kurahi.pi.vocab import COMPACTION

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
    if not path or path[-1].type == COMPACTION:
        return None
    projection = build_context(path, conv.leaf_id, with_entries=True)
    projected = projection.entries or []
    # The compaction in force opens the projection; the retained tail after it may be cut again.
    previous = next((i for i, e in enumerate(projected) if e.source.type == COMPACTION and e.messages), -1)
    start = previous + 1
    cut = find_projected_cut_point(projected, start, len(projected), keep_recent_tokens)
    if cut.first_kept_entry_index >= len(projected):
        return None
    first_kept = projected[cut.first_kept_entry_index].source.id
    if not isinstance(first_kept, str):
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    dropped = _conversation(projected[start:history_end])
    if cut.is_split_turn:
        dropped += _conversation(projected[cut.turn_start_index : cut.first_kept_entry_index])
    if not dropped:
        return None
    if previous >= 0:
        dropped = _conversation(projected[previous : previous + 1], summaries=True) + dropped
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
    tokens_before = int(estimate_projected_context_tokens(projection, path).tokens)
    # The context's system messages, folded as Pi 1.6.0 folds them into the compaction's
    # systemMessage (the session stamps it with the compaction's time).
    system = current_system_message(projection.messages)
    return conv.append_compaction(summary, first_kept, tokens_before, details, system_message=system)


def _conversation(entries: Sequence[ProjectedEntry], *, summaries: bool = False) -> list[Any]:
    """The messages of projected entries that a summary covers: no system messages, no compactions."""
    return [
        m
        for e in entries
        if summaries or e.source.type != COMPACTION
        for m in e.messages
        if not (isinstance(m, dict) and m.get("role") == "system")
    ]


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
        listener("entry", {"id": eid, "type": COMPACTION})
    return eid
