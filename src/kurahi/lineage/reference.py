"""A deliberately simple second projection, to check the store's fast one against.

Nothing here is shared with :mod:`kurahi.context.project` or the store's scanners: every
line is parsed in full by msgspec (the few it refuses by the standard library), the whole
index is a plain dict, and Pi's ``buildSessionContext`` is followed step by step,
forwards, as written in ``PI-SEMANTICS.md`` §10. It is short and obvious, so when it
agrees with the fast path, the fast path's cleverness did not change the answer.

Parsing keeps only what the walk follows (``type``, ``id``, ``parentId``) and the line's
text; the entries on the path are decoded into full values afterwards. Building Python
objects for every value of every line was four fifths of ``kurahi lineage check``'s time
and told the walk nothing more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from kurahi.decoding import DECODE_ERRORS
from kurahi.errors import CheckError, NotASessionError, ParentCycleError
from kurahi.jsvalues import date_ms, js_number, js_whitespace_strip

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
    retained_count: int = 0
    """Messages kept raw from before the compaction (its retained suffix)."""
    later_count: int = 0
    """Messages after the compaction (all of them when there is none)."""
    reset_index: int | None = None
    """Position on the path of the last in-transcript ``reset`` entry (OpenClaw), if any."""
    runtime_messages: list[Any] | None = None
    """What OpenClaw's runtime sends: only what follows the last ``reset`` entry."""


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity; so do we


def _decode(line: str) -> Any:
    """One line in full.

    msgspec parses (it is several times faster than the standard library); the standard
    library has the last word on a line msgspec refuses (lone surrogates, huge numbers),
    exactly like JSON.parse would.

    Raises:
        ValueError: the line is not JSON, or nested too deeply for Python to decode (Node's
            JSON.parse goes deeper; the store skips such a line too, with a warning).
    """
    try:
        return msgspec.json.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    try:
        return json.loads(line, parse_constant=_not_json)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


class _Keys(msgspec.Struct, gc=False):
    """What the walk follows; ``None`` when absent, as ``dict.get`` gives."""

    type: Any = None
    id: Any = None
    parentId: Any = None


_read_keys = msgspec.json.Decoder(_Keys).decode
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
        """Line ``k`` as a dict (``{}`` for a JSON value that is not an object)."""
        if self.keys[k] is _NOT_AN_OBJECT:
            return {}
        if k not in self.full:
            self.full[k] = _decode(self.texts[k])
        return self.full[k]  # type: ignore[no-any-return]


def _lines_of(path: Path) -> list[str]:
    r"""Pi's ``content.trim().split("\n")``, the file decoded as Node decodes it.

    JavaScript's ``trim()`` (not Python's ``strip()``: a BOM goes, ``\x1f`` stays) on the
    whole text only shortens the first and last lines that are not all whitespace; the
    all-whitespace lines around them go. Done that way, the text is not copied again.
    """
    lines = path.read_bytes().decode("utf-8", "replace").split("\n")
    first, last = 0, len(lines) - 1
    while first <= last and not js_whitespace_strip(lines[first]):
        first += 1
    while last >= first and not js_whitespace_strip(lines[last]):
        last -= 1
    if first > last:
        return []
    lines[first] = js_whitespace_strip(lines[first], right=False)
    lines[last] = js_whitespace_strip(lines[last], left=False)
    return lines[first : last + 1]


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
        if not line or line.isspace():
            continue
        try:
            keys.append(_read_keys(line))  # checks the whole line, builds three values
        except DECODE_ERRORS:
            try:
                value = _decode(line)  # not an object, or a line msgspec refuses
            except ValueError:
                continue
            if isinstance(value, dict):
                keys.append(_Keys(value.get("type"), value.get("id"), value.get("parentId")))
                out.full[len(texts)] = value
            else:
                keys.append(_NOT_AN_OBJECT)
        texts.append(line)
    return out


def _message(entry: dict[str, Any]) -> Any:
    msg: dict[str, Any]
    kind = entry.get("type")
    if kind == "message":
        return entry.get("message", _ABSENT)
    if kind == "custom_message":
        msg = {"role": "custom"}
        for key in ("customType", "content", "display", "details"):
            if key in entry:
                msg[key] = entry[key]
        msg["timestamp"] = date_ms(entry["timestamp"]) if "timestamp" in entry else None
        return msg
    if kind == "branch_summary" and entry.get("summary"):
        msg = {"role": "branchSummary", "summary": entry["summary"]}
        if "fromId" in entry:
            msg["fromId"] = entry["fromId"]
        msg["timestamp"] = date_ms(entry["timestamp"]) if "timestamp" in entry else None
        return msg
    return _ABSENT


def _emit(entries: list[dict[str, Any]]) -> list[Any]:
    return [m for m in map(_message, entries) if m is not _ABSENT]


def reference_projection(path: str | Path) -> ReferenceProjection:
    """Project ``path`` the plain way (whole file parsed, leaf = last entry line)."""
    p = Path(path)
    lines = _parse(p)
    keys = lines.keys
    if not keys or keys[0] is _NOT_AN_OBJECT or keys[0].type != "session":
        raise NotASessionError("not a session", path=p)
    version = lines.value(0).get("version")
    number = js_number(1 if version is None else version)  # Pi: (version ?? 1) < 3
    if number is not None and number < 3:
        raise CheckError(
            f"a version-{version if version is not None else 1} session: Pi rewrites it to version 3 when "
            "it opens it, and the reference walk reads version 3 only (stitch output always is)",
            path=p,
        )
    entries = [k for k in range(1, len(keys)) if keys[k] is _NOT_AN_OBJECT or keys[k].type != "session"]
    out = ReferenceProjection()
    if not entries:
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
    chain = [lines.value(k) for k in reversed(walked)]

    compaction: dict[str, Any] | None = None
    for e in chain:
        kind = e.get("type")
        if kind == "thinking_level_change":
            out.thinking_level = e.get("thinkingLevel")
        elif kind == "model_change":
            out.model = {k: e[k] for k in ("provider", "modelId") if k in e}
        elif kind == "message" and isinstance(e.get("message"), dict) and e["message"].get("role") == "assistant":
            m = e["message"]
            out.model = {"provider": m["provider"]} if "provider" in m else {}
            if "model" in m:
                out.model["modelId"] = m["model"]
        elif kind == "compaction":
            compaction = e
    for i, e in enumerate(chain):
        if e.get("type") == "reset":
            out.reset_index = i

    if compaction is None:
        out.messages = _emit(chain)
        out.later_count = len(out.messages)
    else:
        at = next(
            i for i, e in enumerate(chain) if e.get("type") == "compaction" and e.get("id") == compaction.get("id")
        )
        summary: dict[str, Any] = {"role": "compactionSummary"}
        for key in ("summary", "tokensBefore"):
            if key in compaction:
                summary[key] = compaction[key]
        summary["timestamp"] = date_ms(compaction["timestamp"]) if "timestamp" in compaction else None
        kept_from = next(
            (i for i in range(at) if chain[i].get("id") == compaction.get("firstKeptEntryId", _ABSENT)), None
        )
        retained = _emit(chain[kept_from:at]) if kept_from is not None else []
        later = _emit(chain[at + 1 :])
        out.messages = [summary, *retained, *later]
        out.compaction_id = compaction.get("id")
        out.summary_count, out.retained_count, out.later_count = 1, len(retained), len(later)
    if out.reset_index is not None:
        out.runtime_messages = _emit(chain[out.reset_index + 1 :])
    return out
