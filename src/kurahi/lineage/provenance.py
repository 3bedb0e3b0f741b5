"""Provenance of a reply's phrases: which observable source could have put them there.

Given an assistant reply and some phrases from it, look for each phrase in every source
the model could have seen or read, and name the most direct one:

1. ``cue``: the user message(s) the reply answers (the user messages after the previous
   assistant reply with text and ``stopReason`` ``stop``, up to the reply; steered and
   queued messages included);
2. ``tool``: a tool result between the cue and the reply (something the model read);
3. ``context-only``: the effective context of the reply's model call (Pi's projection of
   the path up to the reply's parent: compaction summary, retained raw suffix, later
   messages), and neither the cue nor a tool result;
4. ``workspace``: only the resident's workspace and memory files (not read in this turn);
5. ``elsewhere``: only other transcripts of the agent, or this transcript off the effective
   context (an abandoned branch, a region a compaction dropped, entries after the reply);
6. ``absent``: nowhere observable.

The first that applies wins. The order runs from the most direct source to the least: a
phrase the user just wrote needs no other explanation; one a tool returned in this turn was
fetched on purpose; one found only in the reconstructed history, with no read in between,
came from the context the runtime sent (the source-separation argument); a workspace hit
without a read is a weaker, indirect source; text outside the projection was never sent.
This is evidence about observable sources, not a causal proof: attention is not observed.

Matching is case- and whitespace-insensitive everywhere (``casefold`` and runs of
whitespace collapsed to one space) and is a substring match.

``context_edit`` entries (Pi 1.6.0) count as the model saw them: the context, the cue and
the tool results are read with every edit on the path before the reply applied. Text an
edit removed or replaced is never context (it is ``elsewhere``, region ``elided``, when it
is found nowhere else), and text that exists only in an edit's replacement is context.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from kurahi.context.origins import EffectivePath, Source, effective_path
from kurahi.errors import EntryNotFoundError, ProvenanceError, TranscriptReadError
from kurahi.js.decode import DECODE_ERRORS
from kurahi.js.values import MISSING
from kurahi.locations.memory_files import memory_files
from kurahi.pi.entry import Entry
from kurahi.pi.transcript import Transcript, read_transcript_file
from kurahi.pi.vocab import BRANCH_SUMMARY, COMPACTION, CONTEXT_EDIT, CUSTOM_MESSAGE, MESSAGE, SESSION

__all__ = [
    "VERDICTS",
    "Occurrence",
    "PhraseReport",
    "ProvenanceReport",
    "auto_phrases",
    "content_text",
    "entry_text",
    "message_text",
    "normalize",
    "provenance",
    "scan_workspace",
]

VERDICTS = ("cue", "tool", "context-only", "workspace", "elsewhere", "absent")
"""Verdicts in the order they are tried: the first that applies wins."""

MIN_PHRASE = 2
"""Shortest phrase accepted (after normalisation)."""

_MAX_LISTED = 50
"""Occurrences listed per phrase and source kind (all are counted)."""

_TOKEN = re.compile(r"[^\W_][\w\-]{3,}", re.UNICODE)


def normalize(text: str) -> str:
    """Casefold and collapse every run of whitespace to one space."""
    return " ".join(text.casefold().split())


def content_text(content: Any, *, text_only: bool = False) -> str:
    """The text of a message ``content`` (a string or a list of blocks).

    Text blocks always count; thinking blocks and tool calls (name and arguments) count
    unless ``text_only``, since they are sent back to the model in later calls.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for b in content:
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
        elif text_only:
            continue
        elif t == "thinking" and isinstance(b.get("thinking"), str):
            parts.append(b["thinking"])
        elif t == "toolCall":
            parts.append(f"{b.get('name', '')} {json.dumps(b.get('arguments'), ensure_ascii=False)}")
    return "\n".join(parts)


def message_text(msg: Any) -> str:
    """The searchable text of a projected or stored message."""
    if not isinstance(msg, dict):
        return ""
    if msg.get("role") in ("compactionSummary", "branchSummary"):
        s = msg.get("summary")
        return s if isinstance(s, str) else ""
    return content_text(msg.get("content"))


def entry_text(data: dict[str, Any]) -> str:
    """The searchable text of a stored entry (messages, summaries, custom messages)."""
    t = data.get("type")
    if t == MESSAGE:
        return message_text(data.get("message"))
    if t in (COMPACTION, BRANCH_SUMMARY):
        s = data.get("summary")
        return s if isinstance(s, str) else ""
    if t == CUSTOM_MESSAGE:
        return content_text(data.get("content"))
    if t == CONTEXT_EDIT:
        rep = data.get("replacement")
        return content_text(rep.get("content")) if isinstance(rep, dict) else ""
    return ""


def _seen_message(src: Source) -> Any:
    """The message of a message entry as the model saw it (its edit's replacement applied)."""
    msg = src.entry.data.get("message")
    rep = src.edit.data.get("replacement") if src.edit is not None else None
    if (
        isinstance(rep, dict)
        and isinstance(msg, dict)
        and msg.get("role") in ("user", "assistant", "toolResult", "custom")
    ):
        return {**msg, "content": rep.get("content")}
    return msg


def _context_texts(view: EffectivePath) -> list[str]:
    """The searchable text of each projected message, in order, edits applied."""
    out: list[str] = []
    for src in view.sources:
        if not src.messages:
            continue
        e, d = src.entry, src.entry.data
        if e.type == COMPACTION:
            if src.messages == 2:
                out.append(message_text(d.get("systemMessage")))
            s = d.get("summary")
            out.append(s if isinstance(s, str) else "")
        elif e.type == MESSAGE:
            out.append(message_text(_seen_message(src)))
        elif e.type == CUSTOM_MESSAGE:
            rep = src.edit.data.get("replacement") if src.edit is not None else None
            out.append(content_text(rep.get("content") if isinstance(rep, dict) else d.get("content")))
        else:
            s = d.get("summary")
            out.append(s if isinstance(s, str) else "")
    return out


def _role(entry: Entry) -> Any:
    if entry.type != MESSAGE:
        return None
    msg = entry.data.get("message")
    return msg.get("role") if isinstance(msg, dict) else None


def _reply_text(entry: Entry) -> str:
    msg = entry.data.get("message")
    return content_text(msg.get("content"), text_only=True) if isinstance(msg, dict) else ""


def _is_stop_reply(entry: Entry) -> bool:
    if _role(entry) != "assistant":
        return False
    msg = entry.data["message"]
    return msg.get("stopReason") == "stop" and bool(_reply_text(entry).strip())


def auto_phrases(reply: str, cue: str, limit: int = 20) -> list[str]:
    """Distinctive tokens of ``reply`` that ``cue`` does not hold.

    A token is a word of 4+ characters (letters, digits, ``_``, ``-``) that is capitalised
    or holds a digit or a hyphen: names, ids, dates. Case-insensitive, first spelling kept.
    """
    cue_n = normalize(cue)
    seen: set[str] = set()
    out: list[str] = []
    for tok in _TOKEN.findall(reply):
        tok = tok.strip("-")
        if len(tok) < 4 or not (tok[0].isupper() or any(c.isdigit() or c == "-" for c in tok)):
            continue
        key = tok.casefold()
        if key in seen or key in cue_n:
            continue
        seen.add(key)
        out.append(tok)
        if len(out) >= limit:
            break
    return out


@dataclass(frozen=True)
class Occurrence:
    """Where a phrase occurs."""

    source: str
    """``cue``, ``tool``, ``context``, ``workspace``, ``memory``, ``transcript`` or ``other-transcript``."""
    where: dict[str, Any]
    """The location: entry id, message index and region, file and line, as fits the source."""

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"source": self.source, **self.where}


@dataclass
class PhraseReport:
    """One phrase: every occurrence found (up to a cap per source) and the verdict."""

    phrase: str
    occurrences: list[Occurrence] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    """Occurrences per source, all counted (the list is capped)."""
    verdict: str = "absent"
    reasons: list[str] = field(default_factory=list)

    def add(self, source: str, **where: Any) -> None:
        """Record one occurrence."""
        n = self.counts.get(source, 0)
        self.counts[source] = n + 1
        if n < _MAX_LISTED:
            self.occurrences.append(Occurrence(source, where))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "phrase": self.phrase,
            "verdict": self.verdict,
            "reasons": self.reasons,
            "counts": self.counts,
            "occurrences": [o.to_dict() for o in self.occurrences],
        }


@dataclass
class ProvenanceReport:
    """The answer for one reply."""

    transcript: str
    reply_id: str
    reply_text: str
    cue_ids: list[str]
    tool_calls: int
    reads: int
    tool_result_ids: list[str]
    context_messages: int
    compaction_id: str | None
    workspace: str | None
    skipped_files: list[str]
    other_transcripts: list[str]
    phrases: list[PhraseReport]

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (camelCase keys)."""
        return {
            "transcript": self.transcript,
            "replyId": self.reply_id,
            "replyText": self.reply_text,
            "cueEntryIds": self.cue_ids,
            "toolCalls": self.tool_calls,
            "reads": self.reads,
            "toolResultIds": self.tool_result_ids,
            "contextMessages": self.context_messages,
            "compactionId": self.compaction_id,
            "workspace": self.workspace,
            "skippedFiles": self.skipped_files,
            "otherTranscripts": self.other_transcripts,
            "verdictOrder": list(VERDICTS),
            "phrases": [p.to_dict() for p in self.phrases],
        }


# -- the reply and its window -------------------------------------------------------------


def _find_reply(t: Transcript, reply_id: str | None) -> list[Entry]:
    """The path from the root to the reply (the reply last)."""
    if reply_id is not None:
        try:
            entry = t.entry(reply_id)
        except EntryNotFoundError as exc:
            raise ProvenanceError(f"no entry with id {reply_id!r}", kind="not-found", path=t.name) from exc
        if _role(entry) != "assistant":
            what = entry.type if entry.type != MESSAGE else f"a {_role(entry)} message"
            raise ProvenanceError(
                f"entry {reply_id!r} (line {entry.line}) is {what}, not an assistant message", path=t.name
            )
        return t.path(reply_id)
    path = t.path()
    for i in range(len(path) - 1, -1, -1):
        if _role(path[i]) == "assistant" and _reply_text(path[i]).strip():
            return path[: i + 1]
    raise ProvenanceError("no assistant reply with text on the current path", kind="invalid", path=t.name)


# -- searching files ---------------------------------------------------------------------


def _prefilter(phrase_n: str) -> bytes | None:
    """A lowercase ASCII token every raw JSON line holding the phrase must hold, if one is safe."""
    token = max(phrase_n.split(" "), key=len)
    if not token.isascii() or any(c in token for c in '"\\') or any(ord(c) < 32 for c in token):
        return None
    return token.encode()


def _scan_lines(data: bytes, phrases: Sequence[str]) -> Iterable[tuple[int, int, dict[str, Any]]]:
    """``(phrase index, line number, entry)`` for every JSONL line whose text holds a phrase."""
    low = data.lower()
    candidates: dict[int, set[int]] = {}  # line start -> phrase indices
    for k, p in enumerate(phrases):
        token = _prefilter(p)
        if token is None:
            pos = 0
            while pos < len(data):
                end = data.find(b"\n", pos)
                end = len(data) if end < 0 else end
                candidates.setdefault(pos, set()).add(k)
                pos = end + 1
            continue
        at = low.find(token)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            candidates.setdefault(start, set()).add(k)
            end = data.find(b"\n", at)
            if end < 0:
                break
            at = low.find(token, end)
    line, counted_to = 1, 0
    for start in sorted(candidates):
        line += data.count(b"\n", counted_to, start)
        counted_to = start
        end = data.find(b"\n", start)
        raw = data[start : end if end >= 0 else len(data)]
        try:
            value = msgspec.json.decode(raw)
        except DECODE_ERRORS:
            continue
        if not isinstance(value, dict) or value.get("type") == SESSION:
            continue
        text = normalize(entry_text(value))
        for k in sorted(candidates[start]):
            if phrases[k] in text:
                yield k, line, value


def _read_text(path: Path) -> str | None:
    """A file's text, or ``None`` when it is binary (a NUL byte, or not UTF-8)."""
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def scan_workspace(workspace: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """Every text file under ``workspace`` as ``(relative path, normalised text)``, and those skipped.

    Binary files, unreadable files and symlinks that leave the workspace are skipped and
    listed; symlinked directories are not followed.
    """
    root = workspace.resolve()
    texts: list[tuple[str, str]] = []
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(workspace):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(workspace).as_posix()
            try:
                if p.is_symlink() and root not in p.resolve().parents:
                    skipped.append(f"{rel} (symlink out of the workspace)")
                    continue
                if not p.is_file():
                    continue
                text = _read_text(p)
            except OSError as exc:
                skipped.append(f"{rel} (unreadable: {exc.strerror})")
                continue
            if text is None:
                skipped.append(f"{rel} (binary)")
                continue
            texts.append((rel, normalize(text)))
    return texts, skipped


# -- the whole question --------------------------------------------------------------------


def provenance(
    transcript: str | os.PathLike[str],
    *,
    reply_id: str | None = None,
    phrases: Sequence[str] = (),
    auto: bool = False,
    workspace: str | os.PathLike[str] | None = None,
    other_transcripts: Sequence[str | os.PathLike[str]] = (),
) -> ProvenanceReport:
    """Where each phrase of a reply occurs, and the most direct observable source.

    Reads only; nothing is written anywhere.

    Args:
        transcript: the transcript holding the reply.
        reply_id: the assistant message to explain (default: the latest assistant reply with
            text on the transcript's current path).
        phrases: phrases to look for (each at least two characters once normalised).
        auto: also look for the reply's distinctive tokens that the cue does not hold.
        workspace: the resident's workspace directory (every text file is searched).
        other_transcripts: other transcripts of the agent to search.

    Raises:
        ProvenanceError: the reply is not an assistant message, a phrase is too short, no
            phrase was given, or the workspace does not exist.
        TranscriptReadError: the transcript cannot be read.
        NotASessionError: it is not a transcript.
    """
    for p in phrases:
        if len(normalize(p)) < MIN_PHRASE:
            raise ProvenanceError(f"phrase {p!r} is shorter than {MIN_PHRASE} characters once normalised")
    if not phrases and not auto:
        raise ProvenanceError("give at least one phrase, or ask for automatic phrases")
    ws: Path | None = None
    if workspace is not None:
        ws = Path(workspace)
        if not ws.is_dir():
            raise ProvenanceError("the workspace does not exist or is not a directory", kind="not-found", path=ws)
    tpath = Path(transcript)
    with Transcript.open(tpath) as t:
        path = _find_reply(t, reply_id)
        reply = path[-1]
        before = path[:-1]

        # The window: back from the reply to the previous finished reply with text.
        start = 0
        for i in range(len(before) - 1, -1, -1):
            if _is_stop_reply(before[i]):
                start = i + 1
                break
        cue: list[Entry] = []
        results: list[Entry] = []
        tool_calls = reads = 0
        for e in before[start:]:
            role = _role(e)
            if role == "user":
                cue.append(e)
            elif role == "toolResult":
                results.append(e)
            elif role == "assistant":
                content = e.data["message"].get("content")
                for b in content if isinstance(content, list) else ():
                    if isinstance(b, dict) and b.get("type") == "toolCall":
                        tool_calls += 1
                        reads += b.get("name") == "read"
        reply_text = _reply_text(reply)

        # What the reply's model call was sent: the path before it, its edits applied.
        view = effective_path(before)
        sources = {e.id: src for src in view.sources if isinstance((e := src.entry).id, str)}
        edited_ids = {i for i, src in sources.items() if src.edit is not None}
        applied_edits = {src.edit.id for src in view.sources if src.edit is not None and not src.removed}

        def seen(e: Entry) -> str:
            src = sources.get(e.id)
            if src is None:
                return normalize(message_text(e.data["message"]))
            return "" if src.removed else normalize(message_text(_seen_message(src)))

        cue_texts = [(e.id, seen(e)) for e in cue]
        tool_texts = [(e.id, seen(e)) for e in results]
        attributed: list[Any] = [src.entry.id for src in view.message_sources()]
        parts = [src.part for src in view.message_sources()]
        context_ids = {i for i in attributed if isinstance(i, str)}
        window_ids = {e.id for e in cue} | {e.id for e in results}
        compaction_id = view.sources[0].entry.id if view.compaction_position is not None else None

        def region(idx: int) -> str:
            return parts[idx]

        context_texts = [normalize(t) for t in _context_texts(view)]

        wanted = list(phrases)
        if auto:
            cue_raw = "\n".join(message_text(e.data["message"]) for e in cue)
            known = {normalize(p) for p in wanted}
            wanted += [p for p in auto_phrases(reply_text, cue_raw) if normalize(p) not in known]
        norm = [normalize(p) for p in wanted]
        reports = [PhraseReport(p) for p in wanted]

        for k, pn in enumerate(norm):
            r = reports[k]
            for eid, text in cue_texts:
                if pn in text:
                    r.add("cue", entryId=eid)
            for eid, text in tool_texts:
                if pn in text:
                    r.add("tool", entryId=eid)
            for idx, text in enumerate(context_texts):
                if pn in text:
                    eid = attributed[idx]
                    r.add("context", index=idx, region=region(idx), entryId=eid, inWindow=eid in window_ids)

        # This transcript off the effective context: other branches, compacted regions, later turns.
        reply_path_ids = {e.id for e in path}
        leaf_path_ids = set(t.ids_of(t.path_indices(len(t) - 1))) if len(t) else set()
        data = read_transcript_file(tpath)
        for k, line, value in _scan_lines(data, norm):
            eid = value.get("id")
            if eid == reply.id:
                continue
            if eid in edited_ids:
                where = "elided"  # the original text of an entry an edit removed or replaced
            elif eid in applied_edits or eid in context_ids:
                continue  # its text is in the context, counted there
            elif eid in reply_path_ids and value.get("type") == CONTEXT_EDIT:
                where = "unused-edit"
            elif eid in reply_path_ids:
                where = "compacted-away" if value.get("type") != COMPACTION else "older-compaction"
            elif eid in leaf_path_ids:
                where = "after-reply"
            else:
                where = "other-branch"
            reports[k].add("transcript", entryId=eid, line=line, region=where)

        others: list[str] = []
        for other in other_transcripts:
            op = Path(other)
            if op.resolve() == tpath.resolve():
                continue
            others.append(str(op))
            try:
                odata = read_transcript_file(op)
            except TranscriptReadError:
                continue
            for k, line, value in _scan_lines(odata, norm):
                reports[k].add("other-transcript", file=op.name, line=line, entryId=value.get("id"))

        skipped: list[str] = []
        if ws is not None:
            texts, skipped = scan_workspace(ws)
            memory = {p.relative_to(ws).as_posix() for p in memory_files(ws)}
            for rel, text in texts:
                for k, pn in enumerate(norm):
                    n = text.count(pn)
                    for _ in range(n):
                        reports[k].add("memory" if rel in memory else "workspace", file=rel)

    for r in reports:
        _decide(r)
    return ProvenanceReport(
        transcript=str(tpath),
        reply_id=str(reply.id),
        reply_text=reply_text,
        cue_ids=[str(e.id) for e in cue],
        tool_calls=tool_calls,
        reads=reads,
        tool_result_ids=[str(e.id) for e in results],
        context_messages=view.message_count,
        compaction_id=None if compaction_id in (None, MISSING) else str(compaction_id),
        workspace=str(ws) if ws is not None else None,
        skipped_files=skipped,
        other_transcripts=others,
        phrases=reports,
    )


def _decide(r: PhraseReport) -> None:
    """Set the verdict and reasons of one phrase from its occurrences (first rule that applies)."""
    c = r.counts
    outside = [o for o in r.occurrences if o.source == "context" and not o.where.get("inWindow")]
    ws = c.get("workspace", 0) + c.get("memory", 0)
    if c.get("cue"):
        r.verdict = "cue"
        r.reasons.append(f"in {c['cue']} place(s) of the user message(s) the reply answers")
    elif c.get("tool"):
        r.verdict = "tool"
        r.reasons.append(f"in {c['tool']} tool result(s) between the cue and the reply")
    elif outside:
        r.verdict = "context-only"
        regions = sorted({str(o.where["region"]) for o in outside})
        r.reasons.append(f"in the effective context ({', '.join(regions)}), not in the cue nor a tool result")
        if ws:
            r.reasons.append(f"also in {ws} workspace/memory place(s), but nothing was read in this turn")
    elif ws:
        r.verdict = "workspace"
        r.reasons.append(f"only in workspace/memory files ({ws} place(s)), not in the context the model saw")
    elif c.get("transcript") or c.get("other-transcript"):
        r.verdict = "elsewhere"
        for o in r.occurrences:
            if o.source == "transcript":
                r.reasons.append(
                    f"in this transcript off the effective context: {o.where['region']} (line {o.where['line']})"
                )
            elif o.source == "other-transcript":
                r.reasons.append(f"in another transcript: {o.where['file']} line {o.where['line']}")
        r.reasons[:] = list(dict.fromkeys(r.reasons))
    else:
        r.verdict = "absent"
        r.reasons.append("in no observable source")
    if r.verdict != "elsewhere" and (c.get("transcript") or c.get("other-transcript")):
        n = c.get("transcript", 0) + c.get("other-transcript", 0)
        r.reasons.append(f"also in {n} place(s) outside the effective context (not sent to the model)")
