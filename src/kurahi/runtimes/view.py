"""What a runtime really sends the model when a history is larger than the window.

A projection says what a transcript *holds*; a runtime sends less once the history is
longer than the model's window. :func:`runtime_view` models each runtime Kurahi knows, read
from their code and measured against real OpenClaw (``docs/lineage.md``, "What each runtime
sends"):

``openclaw-2026.9``
    Loads a byte-bounded tail of the session before it builds the context (the SQLite era's
    ``readSessionTranscriptBoundedActiveContextCore``, limits from
    ``resolveEmbeddedSessionContextLimits``): walking the path back from the leaf, every
    entry costs its stored JSON's UTF-8 bytes plus one, on top of the header's, and loading
    stops before the first entry that would pass ``min(64 MiB, max(1024, 8 x window))`` bytes
    or 10,000 entries. The newest compaction or reset is loaded as well when it fits. Only
    messages whose entries were loaded are sent, however many tokens they are; nothing is
    summarised first.
``openclaw-2026.5`` and ``pi``
    Load the whole path. When the estimate passes the prompt budget, they compact before the
    next request: the entries before Pi's cut point (``findCutPoint`` with 20,000 recent
    tokens) leave the context, and a summary the model writes stands for them. OpenClaw
    2026.5's budget is ``window - min(reserve, window - min(8000, window / 2))``; Pi's is
    ``window - reserve``. When even the kept part does not fit, OpenClaw 2026.5 sends nothing
    and answers "Context overflow".

Indices are into the runtime's whole view: Pi's projection, or for ``openclaw-2026.9`` on
a path with a ``reset`` entry, what follows the last one (``CheckReport``'s two views).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import UsageError

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "KEEP_RECENT_TOKENS",
    "MAX_BYTES",
    "MAX_EVENTS",
    "RuntimeView",
    "openclaw_context_window",
    "runtime_view",
    "sends_whole",
    "view_messages",
    "view_of",
    "whole_rule",
    "window_for",
]

DEFAULT_CONTEXT_WINDOW = 200_000
"""OpenClaw's ``DEFAULT_CONTEXT_TOKENS`` (and Kurahi's default window) when nothing configures one."""
MAX_BYTES = 64 * 1024 * 1024
"""OpenClaw 2026.9's ceiling on the bytes it loads for a context (``MAX_VISIBLE_MESSAGE_MAX_BYTES``)."""
MAX_EVENTS = 10_000
"""OpenClaw 2026.9's ceiling on the entries it loads for a context."""
BYTES_PER_TOKEN = 8
"""OpenClaw 2026.9 loads ``8 x window`` bytes of stored JSON (``resolveEmbeddedSessionContextLimits``)."""
KEEP_RECENT_TOKENS = 20_000
"""What a compaction keeps (Pi's and OpenClaw's default ``compaction.keepRecentTokens``)."""
RESERVE_TOKENS = 16_384
"""Pi's default ``compaction.reserveTokens``, which OpenClaw 2026.5 also requests."""
_MIN_PROMPT_BUDGET = 8_000
"""OpenClaw 2026.5 keeps at least ``min(8000, window / 2)`` tokens for the prompt whatever the reserve."""
_BOUNDARIES = frozenset({"compaction", "reset"})


class RuntimeView(msgspec.Struct):
    """What one runtime sends of a transcript under one window."""

    runtime: str
    window: int
    """The context window the view was taken under (tokens)."""
    window_from: str
    """Where the window came from: ``--context-window``, an OpenClaw config field, or the default."""
    messages: int
    """Messages in the runtime's whole view (what it would send with an endless window)."""
    sent: list[int]
    """Indices of the whole view's messages that are sent."""
    tokens: int
    """Estimated tokens of the whole view (content estimate, Pi's ``chars / 4``)."""
    sent_tokens: int
    """Estimated tokens of what is sent."""
    fits: bool
    """The whole view is sent."""
    rule: str
    """The limit that applied, in words."""
    summarized: bool = False
    """What is left out is replaced by a compaction summary the model writes (not by nothing)."""
    loaded_bytes: int | None = None
    """``openclaw-2026.9``: the bytes of stored JSON it loads, of ``max_bytes``."""
    max_bytes: int | None = None
    """``openclaw-2026.9``: its byte limit for this window."""

    @property
    def left_out(self) -> list[int]:
        """Indices of the whole view's messages that are not sent."""
        sent = set(self.sent)
        return [i for i in range(self.messages) if i not in sent]

    def is_sent(self, index: int | None) -> bool:
        """Whether message ``index`` of the whole view is sent (``None``: not in the view at all)."""
        return index is not None and index in set(self.sent)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; ``sent`` and ``leftOut`` as ``[first, last]`` ranges of indices."""
        return {
            "runtime": self.runtime,
            "window": self.window,
            "windowFrom": self.window_from,
            "fits": self.fits,
            "messages": self.messages,
            "sentMessages": len(self.sent),
            "sent": _ranges(self.sent),
            "leftOut": _ranges(self.left_out),
            "tokens": self.tokens,
            "sentTokens": self.sent_tokens,
            "summarized": self.summarized,
            "rule": self.rule,
            "loadedBytes": self.loaded_bytes,
            "maxBytes": self.max_bytes,
        }


def _ranges(indices: Sequence[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for i in indices:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


def runtime_view(
    path: str | os.PathLike[str],
    runtime: str,
    *,
    context_window: int | None = None,
    window_from: str = "--context-window",
    system_prompt_tokens: int = 0,
    reserve_tokens: int = RESERVE_TOKENS,
) -> RuntimeView:
    """What ``runtime`` sends of the transcript at ``path`` (a file or ``sqlite:<db>#<id>``).

    Args:
        path: the transcript.
        runtime: one of :data:`~kurahi.runtimes.sources.RUNTIMES`.
        context_window: the model's window; by default the OpenClaw config's when ``path``
            lives in a state dir (:func:`openclaw_context_window`), else
            :data:`DEFAULT_CONTEXT_WINDOW`.
        window_from: how ``context_window`` was chosen, for the report.
        system_prompt_tokens: the runtime's own system prompt and tools, counted against the
            budget of ``pi`` and ``openclaw-2026.5`` (OpenClaw's is about 9,000 tokens).
        reserve_tokens: the compaction reserve those two request.

    Raises:
        UsageError: an unknown runtime or a non-positive window.
        NotASessionError, TranscriptReadError, ParentCycleError, CheckError: see :func:`~kurahi.lineage.check.check`.
    """
    from kurahi.context.reference import reference_projection
    from kurahi.runtimes.sources import RUNTIMES, materialize

    if runtime not in RUNTIMES:
        raise UsageError(f"runtime {runtime!r}: not a runtime Kurahi knows (choose from {', '.join(RUNTIMES)})")
    if context_window is None:
        context_window, window_from = window_for(path)
    with materialize(path) as p:
        ref = reference_projection(p)
    return view_of(
        ref,
        runtime,
        context_window=context_window,
        window_from=window_from,
        system_prompt_tokens=system_prompt_tokens,
        reserve_tokens=reserve_tokens,
    )


def view_of(
    ref: Any,
    runtime: str,
    *,
    context_window: int,
    window_from: str,
    system_prompt_tokens: int = 0,
    reserve_tokens: int = RESERVE_TOKENS,
    each: Sequence[int | None] | None = None,
) -> RuntimeView:
    """:func:`runtime_view` of a :class:`~kurahi.context.reference.ReferenceProjection` already made.

    ``each``: the view's messages estimated already (:func:`~kurahi.context.tokens.estimate_each`
    of :func:`view_messages`), which ``check`` reuses for its own token count.
    """
    if not isinstance(context_window, int) or isinstance(context_window, bool) or context_window <= 0:
        raise UsageError(f"context window must be a positive integer, not {context_window!r}")
    from kurahi.context.tokens import estimate_each

    messages = view_messages(ref, runtime)
    sources = ref.runtime_sources if messages is ref.runtime_messages else ref.sources
    # A message Pi would crash on counts 0 here; check reports it itself.
    per = [t or 0 for t in (each if each is not None else estimate_each(messages))]
    base = RuntimeView(runtime, context_window, window_from, len(messages), [], sum(per), 0, True, "")
    if runtime == "openclaw-2026.9":
        return _bounded_by_bytes(ref, base, sources, per)
    return _compacted(ref, base, sources, per, runtime, system_prompt_tokens, reserve_tokens)


def view_messages(ref: Any, runtime: str) -> list[Any]:
    """The messages of ``runtime``'s whole view: what follows the last reset for OpenClaw 2026.9."""
    after_reset = runtime == "openclaw-2026.9" and ref.runtime_messages is not None
    return ref.runtime_messages if after_reset else ref.messages  # type: ignore[no-any-return]


def _eligible(entry: dict[str, Any]) -> bool:
    # OpenClaw 2026.9 leaves out of the context (and of the byte count) only a message marked so.
    message = entry.get("message")
    return not (isinstance(message, dict) and message.get("excludeFromContext") is True)


def _bounded_by_bytes(ref: Any, view: RuntimeView, sources: list[int], per: list[int]) -> RuntimeView:
    max_bytes = min(MAX_BYTES, max(1024, view.window * BYTES_PER_TOKEN))
    used = len(ref.header.encode("utf-8", "surrogatepass")) + 1
    view.max_bytes = max_bytes
    if used > max_bytes:
        view.loaded_bytes, view.fits = 0, view.messages == 0
        view.rule = f"the header alone is over the {max_bytes:,}-byte load limit: OpenClaw 2026.9 refuses the session"
        return view
    loaded: set[int] = set()
    truncated = False
    for i in range(len(ref.chain) - 1, -1, -1):
        line = ref.chain[i]
        if not _eligible(ref.entries[i]):
            continue
        size = len(line.encode("utf-8", "surrogatepass")) + 1
        if len(loaded) >= MAX_EVENTS or used + size > max_bytes:
            truncated = True
            break
        loaded.add(i)
        used += size
    boundary = next((i for i in range(len(ref.chain) - 1, -1, -1) if ref.chain_kinds[i] in _BOUNDARIES), None)
    if boundary is not None and boundary not in loaded:
        size = len(ref.chain[boundary].encode("utf-8", "surrogatepass")) + 1
        if used + size <= max_bytes:
            loaded.add(boundary)
            used += size
    view.sent = [k for k, source in enumerate(sources) if source in loaded]
    view.sent_tokens = sum(per[k] for k in view.sent)
    view.loaded_bytes = used
    view.fits = len(view.sent) == view.messages
    window = f"{view.window:,}-token window"
    view.rule = f"OpenClaw 2026.9 loads at most {max_bytes:,} bytes of the session (8 per token of the {window})" + (
        f"; {used:,} bytes, the newest {len(loaded)} entries, were loaded" if truncated else "; all of it fits"
    )
    return view


def sends_whole(runtime: str, window: int, *, tokens: int, size: int, entries: int) -> bool:
    """Whether ``runtime`` sends a history of this size whole under ``window``, by the rules above.

    For a quick answer before any candidate exists (``kurahi rescue``'s "fits back"): OpenClaw
    2026.9 by the stored bytes and entries it loads, OpenClaw 2026.5 and Pi by the estimated
    tokens against the window less what they keep free. :func:`runtime_view` is the exact one.
    """
    if runtime == "openclaw-2026.9":
        return entries <= MAX_EVENTS and size + entries <= min(MAX_BYTES, max(1024, window * BYTES_PER_TOKEN))
    return tokens <= _budget(runtime, window, RESERVE_TOKENS)


def whole_rule(runtime: str, window: int, *, tokens: int, size: int, entries: int) -> tuple[str, str]:
    """The rule :func:`sends_whole` decides by: its figures (``14,785 > 14,400 bytes``) and a sentence.

    OpenClaw 2026.9 bounds the stored bytes (and the entries) it loads, whatever their tokens;
    OpenClaw 2026.5 and Pi bound the estimated tokens by the window less what they keep free.
    """
    if runtime == "openclaw-2026.9":
        if entries > MAX_EVENTS:
            return (
                f"{entries:,} > {MAX_EVENTS:,} entries",
                f"{entries:,} entries, and OpenClaw 2026.9 loads at most {MAX_EVENTS:,}",
            )
        limit = min(MAX_BYTES, max(1024, window * BYTES_PER_TOKEN))
        return (
            f"{size + entries:,} {'>' if size + entries > limit else '<='} {limit:,} bytes",
            f"{size + entries:,} bytes stored, and OpenClaw 2026.9 loads at most {limit:,}: "
            f"{BYTES_PER_TOKEN} bytes per token of the {window:,}-token window, whatever the tokens",
        )
    who = "Pi" if runtime == "pi" else "OpenClaw 2026.5"
    budget = _budget(runtime, window, RESERVE_TOKENS)
    return (
        f"{tokens:,} {'>' if tokens > budget else '<='} {budget:,} tokens",
        f"~{tokens:,} tokens, and {who}'s prompt budget is {budget:,} tokens of the {window:,}-token window",
    )


def _budget(runtime: str, window: int, reserve: int) -> int:
    if runtime == "pi":
        return window - reserve
    keep = min(_MIN_PROMPT_BUDGET, max(1, window // 2))
    return max(1, window - min(reserve, max(0, window - keep)))


def _compacted(
    ref: Any, view: RuntimeView, sources: list[int], per: list[int], runtime: str, system: int, reserve: int
) -> RuntimeView:
    from kurahi.context.budget import find_cut_point

    budget = _budget(runtime, view.window, reserve)
    who = "Pi" if runtime == "pi" else "OpenClaw 2026.5"
    if view.tokens + system <= budget:
        view.sent = list(range(view.messages))
        view.sent_tokens = view.tokens
        view.rule = f"{who}'s prompt budget is {budget:,} tokens of the {view.window:,}-token window; it all fits"
        return view
    entries = ref.entries
    start = next((i + 1 for i in range(len(entries) - 1, -1, -1) if ref.chain_kinds[i] == "compaction"), 0)
    try:
        cut = find_cut_point(entries, start, len(entries), KEEP_RECENT_TOKENS).first_kept_entry_index
    except UsageError:
        cut = len(entries)  # Pi throws on such an entry: nothing can be kept verbatim
    kept = [k for k, source in enumerate(sources) if source >= cut and ref.chain_kinds[source] != "compaction"]
    kept_tokens = sum(per[k] for k in kept)
    view.fits, view.summarized = False, True
    if kept_tokens + system > budget and runtime != "pi":
        view.rule = (
            f"over {who}'s {budget:,}-token prompt budget even after compacting to the newest "
            f"{KEEP_RECENT_TOKENS:,} tokens: it sends nothing and answers 'Context overflow'"
        )
        return view
    view.sent, view.sent_tokens = kept, kept_tokens
    view.rule = (
        f"over {who}'s {budget:,}-token prompt budget ({view.window:,}-token window): it compacts first and "
        f"sends a summary of the older part and the newest {kept_tokens:,} tokens verbatim"
    )
    return view


# -- the window -------------------------------------------------------------------------------------


def window_for(source: str | os.PathLike[str]) -> tuple[int, str]:
    """The window for ``source``: its OpenClaw state dir's config, else :data:`DEFAULT_CONTEXT_WINDOW`.

    A source in a state dir is a SQLite session of ``agents/<id>/agent/openclaw-agent.sqlite``
    or a file in ``agents/<id>/sessions/``.

    Raises:
        UsageError: the state dir's ``openclaw.json`` cannot be read or is not a JSON object.
    """
    from kurahi.runtimes.sources import parse_sqlite_source

    parsed = parse_sqlite_source(source)
    path = (parsed[0] if parsed is not None else Path(source)).absolute()
    folder = path.parent
    if folder.name in ("agent", "sessions") and folder.parent.parent.name == "agents":
        state_dir, agent = folder.parent.parent.parent, folder.parent.name
        if (state_dir / "openclaw.json").is_file():
            try:
                found = openclaw_context_window(state_dir, agent)
            except UsageError as exc:
                raise UsageError(f"{exc}; give --context-window to check without it") from exc
            if found is not None:
                return found
            return DEFAULT_CONTEXT_WINDOW, f"OpenClaw's default: {state_dir / 'openclaw.json'} sets no window"
    return DEFAULT_CONTEXT_WINDOW, "the default, OpenClaw's when nothing sets one"


def openclaw_context_window(state_dir: str | os.PathLike[str], agent: str = "main") -> tuple[int, str] | None:
    """The context window OpenClaw gives ``agent``'s primary model, read from ``openclaw.json``.

    OpenClaw (``resolveContextWindowInfo``, ``resolveConfiguredContextTokenLimits``) takes the
    model's entry in ``models.providers.<provider>.models``: its ``contextTokens`` (capped by
    its ``contextWindow``), else its ``contextWindow``; else the built-in model catalog's
    window, else 200,000. The primary model is the agent's ``model`` in ``agents.list``, else
    ``agents.defaults.model`` (a ``provider/model`` string, or ``{"primary": ...}``).

    Returns:
        ``(tokens, where)``, ``where`` naming the config field; ``None`` when the config names
        no window for the model (OpenClaw then uses its catalog's, which Kurahi does not know).

    Raises:
        UsageError: not a state dir, or an ``openclaw.json`` that is not a JSON object.
    """
    from kurahi.runtimes.openclaw.config import open_state

    state = open_state(state_dir, agent)
    chosen = state.model()
    provider, model = chosen.get("provider"), chosen.get("model")
    models = state.config.get("models")
    providers = models.get("providers") if isinstance(models, dict) else None
    entry = providers.get(provider) if isinstance(providers, dict) and isinstance(provider, str) else None
    listed = entry.get("models") if isinstance(entry, dict) else None
    for i, m in enumerate(listed if isinstance(listed, list) else []):
        if not isinstance(m, dict) or m.get("id") != model:
            continue
        where = f"{state.root / 'openclaw.json'}: models.providers.{provider}.models[{i}]"
        window, tokens = _positive(m.get("contextWindow")), _positive(m.get("contextTokens"))
        if tokens is not None:
            capped = min(tokens, window) if window is not None else tokens
            return capped, f"{where}.contextTokens" + (" (capped by contextWindow)" if capped != tokens else "")
        if window is not None:
            return window, f"{where}.contextWindow"
    return None


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 1:
        return None
    return int(value) if value != float("inf") else None
