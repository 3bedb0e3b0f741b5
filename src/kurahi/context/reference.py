"""A deliberately simple second projection, to check the store's fast one against.

Nothing here is shared with :mod:`kurahi.context.project` or the store's scanners: every
line is parsed in full by msgspec (the few it refuses by the standard library), the whole
index is a plain dict, and Pi 1.6.0's ``buildSessionProjection`` is followed step by step,
forwards: the path from the last entry line to the root, the settings along it, the
compaction-aware context entries, the latest ``context_edit`` per target among them, and
what each contributes. It is short and obvious, so when it agrees with the fast path, the
fast path's cleverness (reading backwards, stopping early) did not change the answer.

Parsing keeps only what the walk follows (``type``, ``id``, ``parentId``) and the line's
text; the entries on the path are decoded into full values afterwards. Building Python
objects for every value of every line was four fifths of ``kurahi lineage check``'s time
and told the walk nothing more.

Ids are followed when they are strings (every file Pi or Kurahi writes); an entry whose
edit Pi would crash on (a ``context_edit`` without ``replacement``) is left out, as the
fast path leaves it out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import CheckError, NotASessionError, ParentCycleError
from kurahi.js import deepjson
from kurahi.js.decode import DECODE_ERRORS
from kurahi.js.values import date_ms, js_number, js_truthy, js_whitespace_strip
from kurahi.pi.transcript import read_transcript_file
from kurahi.pi.vocab import (
    BRANCH_SUMMARY,
    COMPACTION,
    CONTEXT_EDIT,
    CUSTOM_MESSAGE,
    FIRST_KEPT_ENTRY_ID,
    FROM_ID,
    MESSAGE,
    MODEL_CHANGE,
    RESET,
    SESSION,
    TARGET_ID,
    THINKING_LEVEL_CHANGE,
)

__all__ = ["ReferenceProjection", "reference_projection"]

_ABSENT = object()


class ReferenceProjection(msgspec.Struct):
    """The messages and how they divide around the operative compaction."""

    messages: list[Any] = msgspec.field(default_factory=list)
    thinking_level: Any = "off"
    model: Any = None
    compaction_id: Any = None
    """The operative compaction's ``id`` as the file has it (a string in any file Pi wrote)."""
    summary_count: int = 0
    """Messages the compaction itself contributes: its ``systemMessage`` and its summary (0 when edited away)."""
    retained_count: int = 0
    """Messages kept raw from before the compaction (its retained suffix)."""
    later_count: int = 0
    """Messages after the compaction (all of them when there is none)."""
    reset_index: int | None = None
    """Position on the path of the last in-transcript ``reset`` entry (OpenClaw), if any."""
    runtime_messages: list[Any] | None = None
    """What OpenClaw's runtime sends: only what follows the last ``reset`` entry."""
    sources: list[int] = msgspec.field(default_factory=list)
    """Per message of ``messages``, the position on the path of the entry that contributed it."""
    runtime_sources: list[int] | None = None
    """Per message of ``runtime_messages``, the position on the path of its entry."""
    chain: list[str] = msgspec.field(default_factory=list)
    """The path's entry lines as the file has them (root first): what a runtime that loads
    by bytes (:mod:`kurahi.runtimes.view`) counts."""
    chain_kinds: list[Any] = msgspec.field(default_factory=list)
    """Each path entry's ``type``."""
    entries: list[dict[str, Any]] = msgspec.field(default_factory=list)
    """The path's entries decoded (root first, ``{}`` for a value that is not an object),
    parallel to ``chain``: what a runtime that compacts (:mod:`kurahi.runtimes.view`)
    reads, so it need not parse the lines again."""
    header: str = ""
    """The header line."""


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity; so do we


def _decode(line: str) -> Any:
    """One line in full.

    msgspec parses (it is several times faster than the standard library); the standard
    library has the last word on a line msgspec refuses (lone surrogates, huge numbers),
    exactly like JSON.parse would, and a line nested deeper than either goes from this stack
    is read by :mod:`kurahi.js.deepjson`, as JSON.parse reads it at any depth.

    Raises:
        ValueError: the line is not JSON.
    """
    try:
        return _read_value(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    except RecursionError:
        return deepjson.loads(line)
    try:
        return json.loads(line, parse_constant=_not_json)
    except RecursionError:
        return deepjson.loads(line)


class _Keys(msgspec.Struct, gc=False):
    """What the walk follows; ``None`` when absent, as ``dict.get`` gives."""

    type: Any = None
    id: Any = msgspec.UNSET
    """``UNSET`` when absent: Pi's leaf is then the last entry, while an explicit null is no leaf."""
    parentId: Any = None


_read_keys = msgspec.json.Decoder(_Keys).decode
_read_value = msgspec.json.Decoder().decode
"""A decoder made once: ``msgspec.json.decode`` sets one up per call (more than a quarter of a short line's cost)."""
_NOT_AN_OBJECT = _Keys()
"""Stands for a line whose JSON value is not an object (it reads as ``{}``)."""


class _Lines(msgspec.Struct):
    """The parsed lines, in file order: the keys of each now, whole values on request.

    Parallel lists rather than one object per line: 20k small objects cost more than
    parsing the lines they describe.
    """

    keys: list[_Keys] = msgspec.field(default_factory=list)
    texts: list[str] = msgspec.field(default_factory=list)
    full: dict[int, Any] = msgspec.field(default_factory=dict)
    """Lines already decoded in full (those msgspec could not read keys-only)."""

    def value(self, k: int) -> dict[str, Any]:
        """Line ``k`` as a dict (``{}`` for a JSON value that is not an object).

        Decoded on each call, not kept: the walk asks once per path line (and once for the
        header), so a cache would only be a second dict of every value.
        """
        if self.keys[k] is _NOT_AN_OBJECT:
            return {}
        got = self.full.get(k)
        return got if got is not None else _decode(self.texts[k])  # type: ignore[no-any-return]


def _lines_of(path: Path) -> list[str]:
    r"""The file's lines as Pi 1.6.0's ``loadEntriesFromFile`` sees them.

    The bytes decoded as Node decodes them (invalid UTF-8 as U+FFFD), split on ``\n`` with
    nothing trimmed; lines that are blank in JavaScript's sense (``trim()``: a BOM or a
    no-break space counts as blank, ``\x1f`` does not) are left out. Every other line goes
    to the decoder as it is, so a BOM or a Unicode space around the JSON spoils the line.
    """
    lines = read_transcript_file(path).decode("utf-8", "replace").split("\n")
    return [line for line in lines if js_whitespace_strip(line)]


def _parse(path: Path) -> _Lines:
    # Every line in full.
    lines = _lines_of(path)
    try:
        # The usual file: every line an object msgspec reads, so one C-level pass does it.
        return _Lines(list(map(_read_keys, lines)), lines)
    except DECODE_ERRORS:
        pass  # a blank, damaged or unusual line somewhere: line by line, as follows
    out = _Lines()
    keys, texts = out.keys, out.texts
    for line in lines:
        try:
            keys.append(_read_keys(line))  # checks the whole line, builds three values
        except DECODE_ERRORS:
            try:
                value = _decode(line)  # not an object, or a line msgspec refuses
            except ValueError:
                continue
            if isinstance(value, dict):
                keys.append(_Keys(value.get("type"), value.get("id", msgspec.UNSET), value.get("parentId")))
                out.full[len(texts)] = value
            elif not js_truthy(value):
                continue  # Pi 1.6.0 keeps a parsed line only when its value is truthy
            else:
                keys.append(_NOT_AN_OBJECT)
        texts.append(line)
    return out


_EDITABLE = ("user", "assistant", "toolResult", "custom")


def _stamp(entry: dict[str, Any]) -> Any:
    return date_ms(entry["timestamp"]) if "timestamp" in entry else None  # new Date(undefined) is NaN


def _contributes(entry: dict[str, Any]) -> list[Any]:
    """``sessionEntryToContextMessages``: what one entry puts in the context, before edits."""
    kind = entry.get("type")
    if kind == MESSAGE:
        msg = entry.get("message")
        if msg is None:
            return []  # Pi throws reading its role; the store leaves it out with a warning
        if isinstance(msg, dict) and msg.get("content") is None:
            if msg.get("role") == "system":
                return [{**msg, "content": ""}]
            if msg.get("role") in ("user", "assistant", "toolResult"):
                return [{**msg, "content": []}]
        return [msg]
    if kind == CUSTOM_MESSAGE:
        out: dict[str, Any] = {"role": "custom"}
        if "customType" in entry:
            out["customType"] = entry["customType"]
        content = entry.get("content")
        out["content"] = [] if content is None else content
        for key in ("display", "details"):
            if key in entry:
                out[key] = entry[key]
        out["timestamp"] = _stamp(entry)
        return [out]
    if kind == BRANCH_SUMMARY and entry.get("summary"):
        out = {"role": "branchSummary", "summary": entry["summary"]}
        if FROM_ID in entry:
            out[FROM_ID] = entry[FROM_ID]
        out["timestamp"] = _stamp(entry)
        return [out]
    if kind == COMPACTION:
        out = {"role": "compactionSummary"}
        for key in ("summary", "tokensBefore"):
            if key in entry:
                out[key] = entry[key]
        out["timestamp"] = _stamp(entry)
        system = entry.get("systemMessage")
        return [system, out] if system not in (None, False, 0, "") else [out]
    return []


def _edited(messages: list[Any], edit: dict[str, Any]) -> list[Any]:
    """``projectContextEntry`` with an edit."""
    if "replacement" not in edit:
        # Pi throws at the first message it would change; the store leaves the entry out then.
        changes = any(isinstance(m, dict) and m.get("role") in _EDITABLE for m in messages)
        return [] if changes else messages
    replacement = edit["replacement"]
    if replacement is None:
        return []
    content = replacement.get("content", _ABSENT) if isinstance(replacement, dict) else _ABSENT
    out = []
    for m in messages:
        if not (isinstance(m, dict) and m.get("role") in _EDITABLE):
            out.append(m)
            continue
        new = {k: v for k, v in m.items() if k != "content"} if content is _ABSENT else dict(m)
        if content is not _ABSENT:
            block = isinstance(content, str) and m["role"] in ("assistant", "toolResult")
            new["content"] = [{"type": "text", "text": content}] if block else content
        out.append(new)
    return out


def _is_system(entry: dict[str, Any]) -> bool:
    msg = entry.get("message")
    return entry.get("type") == MESSAGE and isinstance(msg, dict) and msg.get("role") == "system"


def _emit(entries: list[dict[str, Any]], start: int) -> tuple[list[Any], list[int]]:
    """What ``entries`` (path positions ``start`` on) contribute, compactions aside, and from where."""
    out: list[Any] = []
    sources: list[int] = []
    for i, e in enumerate(entries, start):
        if e.get("type") != COMPACTION:
            contributed = _contributes(e)
            out += contributed
            sources += [i] * len(contributed)
    return out, sources


def reference_projection(path: str | Path) -> ReferenceProjection:
    """Project ``path`` the plain way (whole file parsed, leaf = last entry line)."""
    p = Path(path)
    lines = _parse(p)
    keys = lines.keys
    if not keys or keys[0] is _NOT_AN_OBJECT or keys[0].type != SESSION or not isinstance(keys[0].id, str):
        raise NotASessionError("not a session", path=p)
    version = lines.value(0).get("version")
    number = js_number(1 if version is None else version)  # Pi: (version ?? 1) < 3
    if number is not None and number < 3:
        raise CheckError(
            f"a version-{version if version is not None else 1} session: Pi rewrites it to version 3 when "
            "it opens it, and the reference walk reads version 3 only (stitch output always is)",
            path=p,
        )
    entries = [k for k in range(1, len(keys)) if keys[k] is _NOT_AN_OBJECT or keys[k].type != SESSION]
    out = ReferenceProjection()
    if not entries or keys[entries[-1]].id is None:  # no entries, or Pi's leaf is null: empty
        return out
    by_id = {keys[k].id: k for k in entries if isinstance(keys[k].id, str)}  # the last line with an id wins
    walked: list[int] = []
    seen: set[int] = set()
    current: int | None = entries[-1]
    while current is not None:
        if current in seen:
            raise ParentCycleError("parentId cycle", cycle=[str(keys[current].id)], path=p)
        seen.add(current)
        walked.append(current)
        parent = keys[current].parentId
        current = by_id.get(parent) if isinstance(parent, str) and parent else None
    walked.reverse()
    chain = out.entries = [lines.value(k) for k in walked]
    out.chain = [lines.texts[k] for k in walked]
    out.chain_kinds = [keys[k].type for k in walked]
    out.header = lines.texts[0]

    kinds = out.chain_kinds  # each entry's "type", as the keys were read

    # The settings: the last thinking level, the last model (a model_change or an assistant
    # message), the last compaction and the last reset on the path, found from its end.
    for i in range(len(chain) - 1, -1, -1):
        if kinds[i] == THINKING_LEVEL_CHANGE:
            out.thinking_level = chain[i].get("thinkingLevel")
            break
    for i in range(len(chain) - 1, -1, -1):
        e = chain[i]
        if kinds[i] == MODEL_CHANGE:
            out.model = {k: e[k] for k in ("provider", "modelId") if k in e}
            break
        if kinds[i] == MESSAGE and isinstance(e.get("message"), dict) and e["message"].get("role") == "assistant":
            m = e["message"]
            out.model = {"provider": m["provider"]} if "provider" in m else {}
            if "model" in m:
                out.model["modelId"] = m["model"]
            break
    compaction: dict[str, Any] | None = None
    for i in range(len(chain) - 1, -1, -1):
        if kinds[i] == COMPACTION:
            compaction = chain[i]
            break
    for i in range(len(chain) - 1, -1, -1):
        if kinds[i] == RESET:
            out.reset_index = i
            break

    # The context entries, by their position on the path: the summary (the compaction), the
    # retained ones and the later ones, in that order.
    where: list[int]
    if compaction is None:
        where = list(range(len(chain)))
        summary_end = retained_end = 0
    else:
        # Found again by id alone, the first entry on the path with that id.
        at = next(
            i for i, e in enumerate(chain) if e is compaction or e.get("id", _ABSENT) == compaction.get("id", _ABSENT)
        )
        want = compaction.get(FIRST_KEPT_ENTRY_ID, _ABSENT)
        kept_from = next((i for i in range(at) if chain[i].get("id", _ABSENT) == want), at)
        retained = [i for i in range(kept_from, at) if not _is_system(chain[i])]
        where = [at, *retained, *range(at + 1, len(chain))]
        summary_end, retained_end = 1, 1 + len(retained)
        out.compaction_id = compaction.get("id")
    edits = {}  # the latest edit per target among the context entries
    for i in where[summary_end:]:  # the summary is the compaction itself: never an edit
        if kinds[i] == CONTEXT_EDIT and isinstance(chain[i].get(TARGET_ID), str):
            edits[chain[i][TARGET_ID]] = chain[i]
    counts = {"summary": 0, "retained": 0, "later": 0}
    messages, sources = out.messages, out.sources
    for index, i in enumerate(where):
        e = chain[i] if compaction is None or index >= summary_end else compaction
        if index > 0 and kinds[i] == COMPACTION:
            continue  # an older compaction in the retained range contributes nothing
        contributed = _contributes(e)
        if edits:
            ident = e.get("id")
            edit = edits.get(ident) if isinstance(ident, str) else None
            if edit is not None:
                contributed = _edited(contributed, edit)
        if len(contributed) == 1:
            messages.append(contributed[0])
            sources.append(i)
        else:
            messages.extend(contributed)
            sources.extend([i] * len(contributed))
        counts["summary" if index < summary_end else "retained" if index < retained_end else "later"] += len(
            contributed
        )
    out.summary_count, out.retained_count, out.later_count = counts["summary"], counts["retained"], counts["later"]
    if out.reset_index is not None:
        out.runtime_messages, out.runtime_sources = _emit(chain[out.reset_index + 1 :], out.reset_index + 1)
    return out
