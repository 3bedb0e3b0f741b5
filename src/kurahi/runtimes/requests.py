"""What makes a Pi or OpenClaw session unusable: the check behind ``kurahi session doctor``.

Pure: it reads a :class:`~kurahi.pi.transcript.Transcript` and returns findings. The context
is projected exactly as Pi does (:mod:`kurahi.context.project`), converted as ``convertToLlm``
does (:mod:`kurahi.context.llm`) and as Pi's provider layer does for each family
(:mod:`kurahi.context.request_rules`), then checked against each provider's request rules.
File health (a torn tail, duplicate ids, a parent cycle, a path cut short) is checked on the
file itself.

Each :class:`Finding` names the entry, the rule, the families that refuse it, and the
runtimes that repair it themselves before sending (from reading and running their code: the
research is summarised in docs/session-doctor.md). A finding *fails* for a set of runtimes
when a family refuses it for certain and one of those runtimes would not repair it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from kurahi.context.llm import convert_to_llm
from kurahi.context.project import ProjectedEntry, SessionContext, project_from_leaf
from kurahi.context.request_rules import FAMILIES, Violation, check_family, is_same_model, transform
from kurahi.errors import UsageError
from kurahi.js.values import MISSING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from kurahi.pi.shapes import PathEntry
    from kurahi.pi.transcript import Transcript

__all__ = [
    "ANTHROPIC_BODY_LIMIT",
    "RUNTIMES",
    "UNMENDABLE",
    "CheckReport",
    "Finding",
    "check_context",
    "check_transcript",
    "honour_context_edit",
    "is_request_runtime",
    "none_refused",
    "runtime_names",
    "unmendable",
]

RUNTIMES: dict[str, str] = {
    "pi-1.6": "Pi 1.6.0 (honours context_edit and compaction)",
    "pi-0.73": "Pi 0.73.1 (ignores context_edit; honours compaction)",
    "openclaw-2026.5": "OpenClaw 2026.5 (JSONL transcripts; ignores context_edit; repairs tool pairing in memory)",
}
"""The runtimes Kurahi knows, by the name ``--runtime`` takes."""

UNMENDABLE: dict[str, str] = {
    "openclaw-2026.9": "OpenClaw 2026.9 keeps transcripts in SQLite, not in this file: stop its gateway and run "
    "`openclaw doctor --session-sqlite` instead",
}
"""Runtimes whose requests are not made from a session file, and what to do instead."""


_CONTEXT_EDIT = frozenset({"pi-1.6"})
"""The runtimes that honour a ``context_edit`` entry (the others ignore it and send what it hides)."""


def honour_context_edit(names: list[str]) -> bool:
    """Whether every one of ``names`` (at least one) honours a ``context_edit`` entry."""
    return bool(names) and all(name in _CONTEXT_EDIT for name in names)


def is_request_runtime(name: str) -> bool:
    """Whether ``name`` is a runtime whose next request is checked (a key of :data:`RUNTIMES`)."""
    return name in RUNTIMES


def unmendable(name: str) -> str | None:
    """Why a session file cannot be mended for ``name`` (``None``: it can, or ``name`` is unknown)."""
    return UNMENDABLE.get(name)


ANTHROPIC_BODY_LIMIT = 32 * 1024 * 1024
"""Anthropic's documented request size limit for Messages (HTTP 413 ``request_too_large`` above it)."""

_OPENCLAW = frozenset({"openclaw-2026.5"})
# Which runtimes mend a rule themselves before the request leaves (docs/session-doctor.md).
_REPAIRED_BY: dict[str, frozenset[str]] = {
    "result-without-call": _OPENCLAW,
    "result-after-content": _OPENCLAW,
    "call-without-result": _OPENCLAW,
    "duplicate-result": _OPENCLAW,
    "tool-id-pattern": _OPENCLAW,
    "tool-id-length": _OPENCLAW,
    "conversion-throws": frozenset(),
    "request-too-large": frozenset(),
    "context-window": frozenset({"pi-1.6", "pi-0.73", "openclaw-2026.5"}),
    "torn-tail": frozenset({"pi-1.6", "openclaw-2026.5"}),
    "parent-cycle": frozenset(),
    "duplicate-id": frozenset(),
    "path-cut-short": frozenset(),
}

_RULE_TEXT = {
    "result-without-call": "every tool result answers a call in the message right before it",
    "result-after-content": "tool results come first in their turn",
    "call-without-result": "every tool call is answered in the next message",
    "duplicate-result": "one result per call",
    "tool-id-pattern": "tool call ids match ^[a-zA-Z0-9_-]+$",
    "tool-id-length": "tool call ids within the provider's length",
    "conversion-throws": "thinking signatures replayed to OpenAI Responses are JSON",
    "request-too-large": "the request body within the provider's size limit",
    "context-window": "the context within the model's window",
    "torn-tail": "the file ends with a whole line",
    "parent-cycle": "the leaf's path reaches the root",
    "duplicate-id": "entry ids are unique",
    "path-cut-short": "the leaf's path reaches the root",
}


def runtime_names() -> list[str]:
    """The names ``--runtime`` accepts."""
    return list(RUNTIMES)


class Finding(msgspec.Struct):
    """One thing that makes the next request fail (or might), tied to an entry.

    Attributes:
        code: the rule broken (a key of the rule table in docs/session-doctor.md).
        entry_id: the entry at fault (``None`` for a finding about the file).
        line: its line number (``None`` when unknown).
        message: what is wrong, in the provider's words where known.
        refused_by: the families whose request it breaks (empty for file health).
        repaired_by: the runtimes that mend it themselves before sending.
        certain: ``False`` for a rule not established against the live API (reported, never failing).
        role: the projected message's role, when the finding is about a message.
    """

    code: str
    entry_id: str | None
    line: int | None
    message: str
    refused_by: list[str] = msgspec.field(default_factory=list)
    repaired_by: list[str] = msgspec.field(default_factory=list)
    certain: bool = True
    role: str | None = None

    @property
    def rule(self) -> str:
        """The rule, in words."""
        return _RULE_TEXT.get(self.code, self.code)

    def fails_for(self, runtimes: Iterable[str]) -> bool:
        """Whether one of ``runtimes`` would send a request this finding gets refused."""
        return self.certain and any(r not in self.repaired_by for r in runtimes)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "code": self.code,
            "rule": self.rule,
            "entryId": self.entry_id,
            "line": self.line,
            "role": self.role,
            "message": self.message,
            "refusedBy": self.refused_by,
            "repairedBy": self.repaired_by,
            "certain": self.certain,
        }


class CheckReport(msgspec.Struct):
    """Everything the check found, with the projection it checked.

    Attributes:
        findings: in path order (file findings first).
        context: the projected context (``None`` when the path could not be walked).
        origins: the context entries, each with the messages it contributes.
        session_id: the header's id.
    """

    findings: list[Finding]
    context: SessionContext | None
    origins: list[ProjectedEntry]
    session_id: str

    @property
    def family(self) -> str | None:
        """The provider family the session's next request goes to (:func:`session_family`)."""
        return None if self.context is None else session_family(self.context.messages, self.context.model or {})

    def failing(self, runtimes: Iterable[str]) -> list[Finding]:
        """The findings that fail for ``runtimes``."""
        rs = list(runtimes)
        return [f for f in self.findings if f.fails_for(rs)]


def session_family(messages: Sequence[Any], model: dict[str, Any]) -> str | None:
    """The provider family the next request goes to.

    That is the ``api`` of the last assistant message of the session's current ``model``
    (``{"provider", "modelId"}``) when it is one of :data:`FAMILIES`; ``None`` when no such
    message names one.
    """
    api = next(
        (
            m.get("api")
            for m in reversed(messages)
            if isinstance(m, dict)
            and m.get("role") == "assistant"
            and m.get("provider") == model.get("provider")
            and m.get("model") == model.get("modelId")
        ),
        None,
    )
    return api if api in FAMILIES else None


def _id(entry: Any) -> str | None:
    i = entry.id
    return i if isinstance(i, str) else None


def check_context(
    projected: Sequence[ProjectedEntry], ctx: SessionContext, *, context_window: int = 200_000
) -> list[Finding]:
    """The request findings for a projection made with ``with_entries=True``.

    Args:
        projected: :attr:`SessionContext.entries`.
        ctx: the projection (its ``model`` names the target model).
        context_window: the model's window in tokens, for the size finding.
    """
    llm: list[Any] = []
    origins: list[ProjectedEntry] = []
    for p in projected:
        for m in convert_to_llm(p.messages):
            llm.append(m)
            origins.append(p)
    target_model = ctx.model or {}
    current_api = session_family(llm, target_model)
    by_key: dict[tuple[int, str], Finding] = {}
    order: list[tuple[int, str]] = []
    for family in FAMILIES:
        # The next request goes to the session's current model: same-model ids are sent as
        # stored. For any other family the model differs, and Pi normalises every call id.
        target = (
            {"provider": target_model.get("provider"), "api": family, "id": target_model.get("modelId")}
            if current_api == family
            else None
        )
        sent = transform(llm, family, target)
        for v in check_family(sent, family, target):
            _add(by_key, order, v, origins, llm)
    findings = [by_key[k] for k in sorted(order, key=lambda k: (k[0], k[1]))]
    findings.extend(_size_findings(llm, origins, context_window))
    return findings


_PLAIN_CALL_ID = re.compile(r"[A-Za-z0-9_-]{0,39}[A-Za-z0-9-]")
"""A tool-call id every family's normaliser leaves as it is: no other character, at most 40
(the shortest limit, Chat Completions'), and not ending in ``_`` (Responses strips that)."""

_LLM_ROLES = frozenset({"system", "user", "assistant", "toolResult"})
_ERRORED = frozenset({"error", "aborted"})


def none_refused(messages: Sequence[Any], model: dict[str, Any] | None, runtimes: Sequence[str]) -> bool:
    """Whether no finding of :func:`check_context` on ``messages`` could fail for ``runtimes``, proved quickly.

    ``True`` only when it is certain: a history the request rules cannot fault in any family,
    no larger than Anthropic's body limit, and a window finding that every one of ``runtimes``
    mends itself. ``False`` means "not proved here": the caller runs :func:`check_context`.

    The rules find nothing when, after ``convertToLlm``, every message is one of the four LLM
    roles and each tool call is answered at once: the results that follow an assistant which
    calls tools (and is not dropped for an error) each answer one of its calls, a different
    one each, before any other message; no result comes anywhere else; every call id is
    unique in the history and one no family's normaliser changes; an assistant dropped for
    its error calls nothing; no system message comes while calls are open; and, when the
    session talks to OpenAI Responses, every signature of its own model's thinking is JSON.
    ``transformMessages`` then only adds a made-up result for each call left open, just
    before the next user or assistant message (or at the end), so every call is answered in
    the very next turn, and Anthropic's turns, Chat Completions' tool messages and Responses'
    outputs all pair (``tests/runtimes/test_none_refused.py`` checks it against
    :func:`check_context` on many generated histories).
    """
    if any(r not in _REPAIRED_BY["context-window"] for r in runtimes):
        return False  # the window finding could fail: the full check says
    try:
        llm = convert_to_llm(messages)
    except UsageError:
        return False  # the full check raises, naming the message as it names it
    target_model = model or {}
    responses = session_family(llm, target_model) == "openai-responses"
    target = {"provider": target_model.get("provider"), "api": "openai-responses", "id": target_model.get("modelId")}
    seen: set[str] = set()
    expect: set[str] = set()
    plain = _PLAIN_CALL_ID.fullmatch
    for m in llm:
        if type(m) is not dict:
            return False
        role = m.get("role")
        if role not in _LLM_ROLES:
            return False
        if expect:
            if role == "toolResult":
                answer = m.get("toolCallId")
                if type(answer) is not str or answer not in expect:
                    return False
                expect.discard(answer)
                continue
            if role == "system":
                return False  # Pi's results for the open calls would come after it: the full check
            expect = set()  # Pi makes up a result for each open call before this message
        if role == "toolResult":
            return False
        if role != "assistant":
            continue
        content = m.get("content")
        if type(content) is not list:
            return False
        calls: list[str] = []
        for b in content:
            if type(b) is not dict:
                return False
            kind = b.get("type")
            if kind == "toolCall":
                cid = b.get("id")
                if type(cid) is not str or not plain(cid) or cid in seen:
                    return False
                seen.add(cid)
                calls.append(cid)
            elif responses and kind == "thinking" and b.get("thinkingSignature") and is_same_model(m, target):
                try:
                    json.loads(b["thinkingSignature"])
                except (TypeError, ValueError):
                    return False
        if m.get("stopReason") in _ERRORED:
            if calls:
                return False  # dropped with its calls, while its stored results stay
            continue
        expect = set(calls)
    return _body_size(llm) <= ANTHROPIC_BODY_LIMIT


def _add(
    by_key: dict[tuple[int, str], Finding],
    order: list[tuple[int, str]],
    v: Violation,
    origins: list[ProjectedEntry],
    llm: list[Any],
) -> None:
    key = (v.origin, v.rule)
    f = by_key.get(key)
    if f is None:
        src = origins[v.origin].source
        msg = llm[v.origin]
        f = Finding(
            code=v.rule,
            entry_id=_id(src),
            line=src.line,
            message=v.detail,
            repaired_by=sorted(_REPAIRED_BY.get(v.rule, frozenset())),
            certain=v.certain,
            role=msg.get("role") if isinstance(msg, dict) else None,
        )
        by_key[key] = f
        order.append(key)
    if v.family not in f.refused_by:
        f.refused_by.append(v.family)
    f.certain = f.certain or v.certain


def _body_size(llm: list[Any]) -> int:
    """The bytes of the messages' JSON (0 when they cannot be written)."""
    import msgspec

    try:
        return len(msgspec.json.encode(llm))
    except RecursionError:
        # A line nested deeper than msgspec encodes: the project's own encoder, as
        # `session context --json` writes it, handles any depth.
        from kurahi.js.stringify import js_json

        return len(js_json(llm))
    except (TypeError, ValueError, OverflowError):
        return 0


def _size_findings(llm: list[Any], origins: list[ProjectedEntry], window: int) -> list[Finding]:
    from kurahi.context.tokens import estimate_context_tokens
    from kurahi.errors import KurahiError

    out: list[Finding] = []
    size = _body_size(llm)
    if size > ANTHROPIC_BODY_LIMIT:
        out.append(
            Finding(
                "request-too-large",
                None,
                None,
                f"the messages alone are {size} bytes; Anthropic refuses a body over {ANTHROPIC_BODY_LIMIT} "
                "bytes with 413 request_too_large, and Pi does not recover from it",
                refused_by=["anthropic-messages"],
                repaired_by=[],
            )
        )
    try:
        tokens = estimate_context_tokens(llm).tokens
    except KurahiError:
        return out
    if tokens > window:
        out.append(
            Finding(
                "context-window",
                None,
                None,
                f"about {tokens} tokens against a {window}-token window; the runtimes compact on the "
                "overflow error and retry",
                refused_by=list(FAMILIES),
                repaired_by=sorted(_REPAIRED_BY["context-window"]),
            )
        )
    return out


def _health(t: Transcript) -> tuple[list[Finding], list[int] | None]:
    """File findings, and the leaf's path (indices, root first) unless it loops."""
    import msgspec

    out: list[Finding] = []
    torn = t.torn_tail
    if torn is not None:
        out.append(
            Finding(
                "torn-tail",
                None,
                torn[0],
                f"line {torn[0]} is cut off (a write that never finished); Pi 0.73.1 glues its next entry "
                "onto it and loses that entry on the next open",
                repaired_by=sorted(_REPAIRED_BY["torn-tail"]),
            )
        )
    elif len(t) and not t.ends_with_newline:
        out.append(
            Finding(
                "torn-tail",
                None,
                t.line_of(len(t) - 1),
                "the last line has no newline; Pi 0.73.1 glues its next entry onto it and loses both",
                repaired_by=sorted(_REPAIRED_BY["torn-tail"]),
            )
        )
    _, ids, parents = t.columns()
    seen: set[str] = set()
    dups: list[int] = []
    for i, x in enumerate(ids):
        if type(x) is str:
            if x in seen:
                dups.append(i)
            seen.add(x)
    for i in dups[:20]:
        out.append(
            Finding(
                "duplicate-id",
                str(ids[i]),
                t.line_of(i),
                f"entry id {ids[i]!r} is used again here; Pi reads this later line for it",
                certain=False,
            )
        )
    if not len(t):
        return out, []
    from kurahi.errors import ParentCycleError

    try:
        path = t.path_indices(len(t) - 1)
    except ParentCycleError as exc:
        out.append(
            Finding(
                "parent-cycle",
                exc.cycle[0] if exc.cycle else None,
                None,
                f"{exc}: Pi 1.6.0 throws (RangeError) and Pi 0.73.1 hangs on every open",
                refused_by=[],
                repaired_by=[],
            )
        )
        return out, None
    root_parent = parents[path[0]]
    if root_parent is not None and root_parent is not msgspec.UNSET and root_parent != "":
        out.append(
            Finding(
                "path-cut-short",
                _id(t.entry_at(path[0])),
                t.line_of(path[0]),
                f"the leaf's path stops here: its parent {root_parent!r} is not in the file, so everything "
                "above is silently out of the context",
                certain=False,
            )
        )
    return out, path


def check_transcript(t: Transcript, *, context_window: int = 200_000) -> CheckReport:
    """Check a transcript as Pi would open it (leaf = the last entry line).

    Args:
        t: the transcript.
        context_window: the model's window in tokens, for the size finding.
    """
    findings, path = _health(t)
    if path is None:
        return CheckReport(findings, None, [], t.session_id)
    entries: Iterable[PathEntry] = reversed(t.path_entries(path))
    leaf = t.leaf_id if len(t) else None
    ctx = project_from_leaf(entries, leaf if leaf is not MISSING else MISSING, with_entries=True)
    projected = ctx.entries or []
    findings.extend(check_context(projected, ctx, context_window=context_window))
    return CheckReport(findings, ctx, projected, t.session_id)
