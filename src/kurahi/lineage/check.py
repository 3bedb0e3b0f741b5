"""What would really be projected from a transcript: two projections, markers, token pressure.

``check`` projects a file twice (the store's fast projection and the plain reference walk
in :mod:`kurahi.context.reference`), requires the same message count and content hash,
and reports the operative compaction, where each marker sits, and how much room the
context leaves for each reserve and each synthetic system-prompt load.

It reports the view of every runtime that may load the file (:mod:`kurahi.runtimes.sources`):
Pi's projection of the whole path (also OpenClaw 2026.5's), and OpenClaw 2026.9's, which
sends only what follows the last ``reset`` entry. The verdict is taken on the view of one
runtime: ``runtime``, by default the one the source belongs to.

Token pressure is estimated for that view. A recorded ``usage`` measured the context its
runtime sent at the time; it is trusted only when it is newer than a stitch (a header with a
``lineage`` field: the stitched history is longer than what any reply has seen) and, for Pi's
view of a path with a ``reset`` entry, never (OpenClaw measured only the part after the reset).
Otherwise every projected message is estimated, as Pi does when it distrusts a usage.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from kurahi._gc import paused
from kurahi.context.reference import ReferenceProjection, reference_projection
from kurahi.errors import KurahiError, UsageError
from kurahi.runtimes.views import reset_view, view, whole_path_views

if TYPE_CHECKING:
    from kurahi.context.files import FileContext
    from kurahi.runtimes.view import RuntimeView

# The fast projection's modules (the store, the context room) load where they are used, in
# _both_projections: importing this module for its report types does not need them.

__all__ = [
    "CheckReport",
    "MarkerHit",
    "OwnCheck",
    "check",
    "check_own",
    "message_text",
    "messages_sha256",
    "own_view_of",
]


def messages_sha256(messages: list[Any]) -> str:
    """The content hash both projections must agree on: sha256 of canonical JSON.

    That is ``json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))``
    in UTF-8 (lone surrogates passed through); activation packages record it. The C extension
    computes the same bytes' hash without writing the text (and a message kept as its stored
    bytes, from a projection with ``copy_stored``, without decoding it); what it does not
    take is written here.
    """
    from kurahi.pi.read.native import canonical_sha256, is_copied

    digest = canonical_sha256(messages)
    if digest is not None:
        return digest
    messages = [_decoded(m) if is_copied(m) else m for m in messages]  # a plain list, copied ones read
    try:
        data = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except RecursionError:  # a value nested deeper than json's encoder goes: the same text, iteratively
        from kurahi.js import deepjson

        data = deepjson.dumps(messages, sort_keys=True)
    import hashlib  # only here: the extension hashes the usual messages

    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def _decoded(copied: Any) -> Any:
    """A message kept as its stored bytes, as ``json.loads`` reads them (at any depth)."""
    text = bytes(copied)
    try:
        return json.loads(text)
    except RecursionError:
        from kurahi.js import deepjson

        return deepjson.loads(text.decode("utf-8"))


class MarkerHit(msgspec.Struct, frozen=True):
    """Where a marker was found in the effective context."""

    marker: str
    index: int | None
    """Message index, ``None`` when missing."""
    part: str | None
    """``summary``, ``retained`` or ``later``."""
    runtime_index: int | None = None
    """Index in OpenClaw 2026.9's view (after the last ``reset`` entry; the whole path without one)."""
    sent: bool = True
    """Whether the chosen runtime sends it under the window (:mod:`kurahi.runtimes.view`)."""


class CheckReport(msgspec.Struct):
    """The answer to "what would the runtime send, and does it hold what it should"."""

    file: str
    messages: int
    fast_sha256: str
    reference_sha256: str
    reference_messages: int
    compaction_id: str | None
    summary: int
    retained: int
    later: int
    tokens: int | float
    window: int
    markers: list[MarkerHit] = msgspec.field(default_factory=list)
    routes: list[dict[str, Any]] = msgspec.field(default_factory=list)
    runtime_messages: int | None = None
    """Messages OpenClaw 2026.9 sends when the path has a ``reset`` entry (``None`` without one)."""
    warnings: list[str] = msgspec.field(default_factory=list)
    runtime: str = "pi"
    """The runtime whose view decides the verdict."""
    runtime_reason: str = "a plain file"
    """Why that runtime: ``--runtime``, or what the source is."""
    tokens_from: str = "content"
    """``usage`` (the last reply's recorded usage plus estimates after it) or ``content``."""
    pi_view: list[Any] | None = None
    """Pi's messages (not serialised)."""
    runtime_view: list[Any] | None = None
    """OpenClaw 2026.9's messages when the path has a reset (not serialised)."""
    stitched_ms: int | float | None = None
    """When the file was stitched (its header's ``timestamp`` when it has ``lineage``)."""
    view: RuntimeView | None = None
    """What the chosen runtime sends under the window."""
    window_from: str = "the default"
    """Where the window came from (``--context-window``, an OpenClaw config field, the default)."""
    refused: list[dict[str, Any]] = msgspec.field(default_factory=list)
    """What makes a provider refuse the chosen runtime's next request (``kurahi session doctor``'s
    failing findings, :meth:`~kurahi.runtimes.requests.Finding.to_dict` each): those the
    session's own provider family refuses (its last assistant message's ``api``), or any family's
    when the session names none."""

    @property
    def projections_agree(self) -> bool:
        """Both projections gave the same messages."""
        return self.messages == self.reference_messages and self.fast_sha256 == self.reference_sha256

    def view_index(self, hit: MarkerHit) -> int | None:
        """The marker's message index in the chosen runtime's view."""
        if view(self.runtime).after_last_reset:
            return hit.runtime_index
        return hit.index

    @property
    def view_messages(self) -> int:
        """Messages the chosen runtime sends."""
        if view(self.runtime).after_last_reset and self.runtime_messages is not None:
            return self.runtime_messages
        return self.messages

    @property
    def ok(self) -> bool:
        """Projections agree, every marker is in what the chosen runtime sends, and no provider refuses it."""
        return (
            self.projections_agree
            and not self.refused
            and all(self.view_index(m) is not None and m.sent for m in self.markers)
        )

    def not_sent(self, hit: MarkerHit) -> str | None:
        """Why a marker the runtime's view holds is not sent (``None`` when it is, or is not in the view)."""
        if self.view_index(hit) is None or hit.sent or self.view is None:
            return None
        what = "summarized by a compaction, not sent verbatim" if self.view.summarized else "not sent"
        return f"in the history but {what}: past the {self.window:,}-token window"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        whole = whole_path_views()
        return {
            "file": self.file,
            "ok": self.ok,
            "projectionsAgree": self.projections_agree,
            "messages": self.messages,
            "referenceMessages": self.reference_messages,
            "sha256": self.fast_sha256,
            "referenceSha256": self.reference_sha256,
            "compaction": {
                "id": self.compaction_id,
                "summary": self.summary,
                "retained": self.retained,
                "later": self.later,
            },
            "runtime": self.runtime,
            "runtimeReason": self.runtime_reason,
            "views": [
                {"runtime": whole[0], "alsoFor": whole[1:], "messages": self.messages},
                {
                    "runtime": reset_view(),
                    "messages": self.messages if self.runtime_messages is None else self.runtime_messages,
                    "afterReset": self.runtime_messages is not None,
                },
            ],
            "tokens": self.tokens,
            "tokensFrom": self.tokens_from,
            "window": self.window,
            "windowFrom": self.window_from,
            "sent": self.view.to_dict() if self.view is not None else None,
            "markers": [
                {
                    "marker": m.marker,
                    "found": self.view_index(m) is not None,
                    "sent": self.view_index(m) is not None and m.sent,
                    "index": m.index,
                    "part": m.part,
                    "runtimeIndex": m.runtime_index,
                    "why": self.not_sent(m),
                }
                for m in self.markers
            ],
            "routes": self.routes,
            "refused": self.refused,
            "runtimeMessages": self.runtime_messages,
            "warnings": self.warnings,
        }


def _find(messages: list[Any], marker: str) -> int | None:
    for i, m in enumerate(messages):
        if marker in message_text(m):
            return i
    return None


def message_text(message: Any) -> str:
    """The message as ``json.dumps`` writes it, at any depth (what a marker is searched in)."""
    try:
        return json.dumps(message, ensure_ascii=False)
    except RecursionError:
        from kurahi.js import deepjson

        return deepjson.dumps(message, separators=(", ", ": "))


def _both_projections(path: Path) -> tuple[FileContext, ReferenceProjection]:
    """The fast projection and the reference one.

    One after the other, in this process (fork() is not safe in a process with threads). The
    fast one keeps each message Pi reads unchanged as a reference to its stored bytes
    (``copy_stored``): its hash is computed from those bytes, and nothing of it is decoded
    into Python values. The reference parses every line in full, as it always has; its
    values are what the rest of the check reads once the two agree.
    """
    from kurahi.context.files import project_file

    return project_file(path, copy_stored=True), reference_projection(path)


def check(
    path: str | os.PathLike[str],
    *,
    markers: Sequence[str] = (),
    window: int | None = None,
    reserves: Sequence[int] | None = None,
    system_prompt_tokens: Sequence[int] = (0,),
    runtime: str | None = None,
    one_shot: bool = False,
) -> CheckReport:
    """Check what a transcript projects; see the module docstring.

    ``path`` is a file or a SQLite source ``sqlite:<db>#<session id>`` (as ``lineage find``
    prints it). ``runtime`` is one of :data:`~kurahi.runtimes.sources.RUNTIMES`; by default
    the one the source belongs to (:func:`~kurahi.runtimes.sources.runtime_of`).
    ``window`` is the model's context window; by default the OpenClaw config's when the
    source lives in a state dir, else 200,000 (:func:`~kurahi.runtimes.view.window_for`).
    A marker counts only when the runtime sends it under that window
    (:func:`~kurahi.runtimes.view.runtime_view`).
    ``reserves`` defaults to Pi's own reserve (:data:`kurahi.context.budget.DEFAULT_RESERVE_TOKENS`).
    ``one_shot`` says the process runs this one check and then leaves without teardown (the
    CLI's fast path): the decoded history is then left for the exit to free (freeing 20,000
    entries one by one cost a check of them an eighth of its time). A server's process, or
    any caller that goes on, leaves it unset.

    Raises:
        CheckError: a version-1/2 session, which Pi rewrites to version 3 when it opens it;
            the reference walk reads version 3 only (stitch output always is).
        NotASessionError, TranscriptReadError, ParentCycleError: the file cannot be projected.
        UsageError: an unknown runtime, or a malformed SQLite source.
    """
    from kurahi.runtimes.sources import RUNTIMES, materialize
    from kurahi.runtimes.view import window_for

    if runtime is not None and runtime not in RUNTIMES:
        raise UsageError(f"--runtime {runtime!r}: not a runtime Kurahi knows (choose from {', '.join(RUNTIMES)})")
    window, window_from = (window, "--context-window") if window is not None else window_for(path)
    with paused(), materialize(path) as p:
        return _checked(path, p, runtime, markers, window, window_from, reserves, system_prompt_tokens, one_shot)


def _checked(
    path: str | os.PathLike[str],
    p: Path,
    runtime: str | None,
    markers: Sequence[str],
    window: int,
    window_from: str,
    reserves: Sequence[int] | None,
    system_prompt_tokens: Sequence[int],
    one_shot: bool,
) -> CheckReport:
    """:func:`check` of the file ``p`` that ``path`` names (collection paused by the caller)."""
    from kurahi.context.tokens import estimate_each
    from kurahi.runtimes.sources import runtime_of
    from kurahi.runtimes.view import view_messages, view_of

    report, fast, ref = _check(p, markers, window)
    has_reset = ref.runtime_messages is not None
    chosen, reason = (runtime, "--runtime") if runtime is not None else runtime_of(path, has_reset=has_reset)
    report.refused = _refused(p, chosen, report.pi_view if report.projections_agree else None, fast.context.model)
    report.file = os.fspath(path)
    report.runtime, report.runtime_reason, report.window_from = chosen, reason, window_from
    load = max(system_prompt_tokens or [0])
    shown = view_messages(ref, chosen)
    each = estimate_each(shown)
    report.view = view_of(
        ref, chosen, context_window=window, window_from=window_from, system_prompt_tokens=load, each=each
    )
    sent = set(report.view.sent)
    report.markers = [
        msgspec.structs.replace(m, sent=(i := report.view_index(m)) is not None and i in sent) for m in report.markers
    ]
    after_reset = view(chosen).after_last_reset
    counted = report.runtime_view if report.runtime_messages is not None and after_reset else None
    counted = counted if counted is not None else report.pi_view
    # The view's estimates serve when they are of these very messages (or of equal ones).
    known = each if counted is shown or report.projections_agree else None
    _estimate(report, counted, window, reserves, system_prompt_tokens, trust_usage=report.stitched_ms, each=known)
    if one_shot:
        _LEFT_FOR_EXIT.append((fast, ref))
    return report


_LEFT_FOR_EXIT: list[tuple[FileContext, ReferenceProjection]] = []
"""A one-shot check's projections, kept from being freed one object at a time before the exit."""


def _refused(p: Path, runtime: str, messages: list[Any] | None, model: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``session doctor``'s failing findings for ``runtime`` (file findings left to the store's checks).

    A finding counts when the family the session sends to refuses it: the runtime sends the next
    request to the session's provider, so a body only Anthropic would refuse does not stop a
    session that talks to an OpenAI-compatible one. A session that names no family is held to all.

    ``messages`` (the projection both ways agreed on) and ``model`` first go through
    :func:`~kurahi.runtimes.requests.none_refused`: when it proves that nothing can fail, the
    answer is none; otherwise (or without them) the transcript is checked in full.
    """
    from kurahi.pi.transcript import Transcript
    from kurahi.runtimes.requests import check_transcript, none_refused

    runtimes = list(view(runtime).request_runtimes)
    if messages is not None and none_refused(messages, model, runtimes):
        return []
    with Transcript.open(p) as t:
        report = check_transcript(t)
    family = report.family
    failing = report.failing(runtimes)
    return [f.to_dict() for f in failing if f.refused_by and (family is None or family in f.refused_by)]


def _check(p: Path, markers: Sequence[str], window: int) -> tuple[CheckReport, FileContext, ReferenceProjection]:
    """Both projections and the report's part of them: what both found, where each marker sits."""
    from kurahi.pi.read.native import is_copied

    fast, ref = _both_projections(p)
    fast_sha256 = messages_sha256(fast.context.messages)
    ref_sha256 = messages_sha256(ref.messages)
    if len(fast.context.messages) == len(ref.messages) and fast_sha256 == ref_sha256:
        msgs = ref.messages  # the same JSON values, so the same answers to everything below
    else:
        msgs = [_decoded(m) if is_copied(m) else m for m in fast.context.messages]
    # The compaction speaks once, or twice with a systemMessage (Pi 1.6.0): what the
    # retained and later parts do not account for.
    summary = max(0, len(msgs) - ref.retained_count - ref.later_count) if fast.context.compaction_id is not None else 0
    report = CheckReport(
        file=str(p),
        messages=len(msgs),
        fast_sha256=fast_sha256,
        reference_sha256=ref_sha256,
        reference_messages=len(ref.messages),
        compaction_id=fast.context.compaction_id,
        summary=summary,
        retained=ref.retained_count,
        later=ref.later_count,
        tokens=0,
        window=window,
        runtime_messages=len(ref.runtime_messages) if ref.runtime_messages is not None else None,
    )
    report.warnings = [f"line {w.line}: {w.message}" for w in fast.warnings]
    for marker in markers:
        idx = _find(msgs, marker)
        part = None
        if idx is not None:
            part = "summary" if idx < summary else "retained" if idx < summary + ref.retained_count else "later"
        runtime = _find(ref.runtime_messages, marker) if ref.runtime_messages is not None else idx
        report.markers.append(MarkerHit(marker, idx, part, runtime))
    report.pi_view = msgs
    report.runtime_view = ref.runtime_messages
    report.stitched_ms = _stitched_ms(p)
    return report, fast, ref


def _stitched_ms(path: Path) -> int | float | None:
    """The time of the stitch that made this file (a header ``lineage`` field), else ``None``."""
    from kurahi.errors import TranscriptReadError
    from kurahi.js.values import date_ms
    from kurahi.pi.transcript import read_first_line

    try:
        header = json.loads(read_first_line(path) or b"null")
    except (TranscriptReadError, ValueError):
        return None
    if not isinstance(header, dict) or not isinstance(header.get("lineage"), dict):
        return None
    return date_ms(header.get("timestamp")) or 0


def _estimate(
    report: CheckReport,
    msgs: list[Any] | None,
    window: int,
    reserves: Sequence[int] | None,
    system_prompt_tokens: Sequence[int],
    *,
    trust_usage: int | float | None,
    each: Sequence[int | None] | None = None,
) -> None:
    """Token pressure of the chosen view; see the module docstring for when usage is trusted."""
    from kurahi.context.budget import DEFAULT_RESERVE_TOKENS, route
    from kurahi.context.tokens import estimate_content_tokens, estimate_context_tokens

    msgs = msgs if msgs is not None else []
    try:
        est = estimate_context_tokens(msgs)
        usable = est.last_usage_index is not None
        if usable and trust_usage is not None:
            at = msgs[est.last_usage_index].get("timestamp") if est.last_usage_index is not None else None
            usable = isinstance(at, (int, float)) and at > trust_usage
        if usable and not view(report.runtime).after_last_reset and report.runtime_messages is not None:
            usable = False  # the usage measured OpenClaw's view after the reset, not this whole path
        tokens = est.tokens if usable else estimate_content_tokens(msgs, each)
    except KurahiError as exc:
        report.warnings.append(f"token estimate unavailable: {exc}")
        return
    report.tokens, report.tokens_from = tokens, "usage" if usable else "content"
    for load in system_prompt_tokens:
        for reserve in reserves if reserves is not None else [DEFAULT_RESERVE_TOKENS]:
            r = route(tokens + load, window, reserve)
            report.routes.append({"systemPromptTokens": load, **r.to_dict()})


# -- a runtime that reads its own session files (Claude Code) ------------------------------


class OwnCheck(msgspec.Struct, kw_only=True):
    """``lineage check`` of a runtime's own session file: what its loader sends next, and each marker in it."""

    file: str
    runtime: str
    runtime_reason: str
    session_id: str | None
    leaf: str | None
    leaf_from: str
    resume: str
    messages: int
    tokens: int
    markers: list[dict[str, Any]]
    notes: list[str]

    @property
    def ok(self) -> bool:
        """Every marker is in what the runtime sends next."""
        return all(m["sent"] for m in self.markers)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON (``lineage check --json``)."""
        return {
            "file": self.file,
            "runtime": self.runtime,
            "runtimeReason": self.runtime_reason,
            "sessionId": self.session_id,
            "leafId": self.leaf,
            "leafFrom": self.leaf_from,
            "resume": self.resume,
            "messages": self.messages,
            "tokens": self.tokens,
            "markers": self.markers,
            "notes": self.notes,
            "ok": self.ok,
        }


def own_view_of(source: str | os.PathLike[str], runtime: str | None) -> Any:
    """The next request of a runtime's own session file (``None``: a transcript or SQLite session, read as usual).

    ``runtime`` that names one of the transcript views (``pi``, the OpenClaw views) keeps the usual check.

    Raises:
        UsageError: ``runtime`` names nothing Kurahi knows.
    """
    from kurahi.runtimes.own_files import starts_as_transcript
    from kurahi.runtimes.sources import RUNTIMES, parse_sqlite_source

    if parse_sqlite_source(source) is not None or (runtime is not None and runtime in RUNTIMES):
        return None
    if runtime is None and starts_as_transcript(source):
        return None
    from kurahi.runtimes.registry import RUNTIMES as REGISTERED
    from kurahi.runtimes.registry import own_file_view

    if runtime is not None and runtime not in {r.name for r in REGISTERED}:
        raise UsageError(
            f"--runtime {runtime!r}: not a runtime Kurahi knows (choose from "
            f"{', '.join([*RUNTIMES, *(r.name for r in REGISTERED if not r.pi_transcripts)])})"
        )
    return own_file_view(source, runtime)


def check_own(own: Any, markers: Sequence[str], reason: str) -> OwnCheck:
    """Each marker of ``markers`` in ``own`` (a :class:`~kurahi.runtimes.own_files.SentView`)."""
    from kurahi.runtimes.own_files import marker_index

    hits = []
    for m in markers:
        index = marker_index(own, m)
        hits.append(
            {
                "marker": m,
                "index": index,
                "role": own.messages[index]["role"] if index is not None else None,
                "sent": index is not None,
            }
        )
    return OwnCheck(
        file=own.file,
        runtime=own.runtime,
        runtime_reason=reason,
        session_id=own.session_id,
        leaf=own.leaf,
        leaf_from=own.leaf_from,
        resume=own.resume,
        messages=len(own.messages),
        tokens=sum(own.tokens),
        markers=hits,
        notes=list(own.notes),
    )
