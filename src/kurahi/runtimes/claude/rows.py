r"""A Claude Code session file's bytes, read as its ``--resume`` reads them: one row per line, tolerantly.

Claude Code splits the file at ``\n`` and parses each line on its own (a ``\r`` or spaces around
it are whitespace); a line that does not parse (torn by a crash, zero-filled by one, cut by hand)
drops that row only, and bytes that are not UTF-8 read as U+FFFD as Node reads them. So does
:func:`parse_rows`, which keeps for every row only what the loader decides by (:class:`Row`:
its type, uuid, parent, flags, a ``last-prompt``'s leaf) and where its line is, so that a
row's message, time or metadata is decoded only when a loss or a view needs it. Unknown row
types and unknown fields are kept as they are (each release adds some); a field of an
unexpected type reads as JavaScript would judge it (``isSidechain: "yes"`` is true).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kurahi.js.ops import truthy

__all__ = ["ParsedRows", "Row", "decode_line", "encode_row", "parse_rows"]


def encode_row(row: dict[str, Any]) -> bytes:
    """A row as Claude Code writes one: compact JSON, one line (``JSON.stringify``)."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"


class Row(msgspec.Struct, rename="camel", kw_only=True, gc=False):
    """What the loader decides by, of one row (everything else stays in the file's bytes)."""

    type: str | None = None
    uuid: str | None = None
    parent_uuid: str | None = None
    is_sidechain: bool = False
    """A subagent's row (kept in the main file by some releases)."""
    is_compact_summary: bool = False
    """The ``user`` row holding ``/compact``'s summary."""
    is_meta: bool = False
    """A row the CLI wrote itself (a caveat, a command's output), not something the user said."""
    subtype: str | None = None
    """A ``system`` row's kind (``compact_boundary``, ``stop_hook_summary``, ...)."""
    leaf_uuid: str | None = None
    """A ``last-prompt`` row's leaf."""


_DECODE_ROW = msgspec.json.Decoder(Row)
_DECODE_ANY = msgspec.json.Decoder()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _row_of(obj: dict[str, Any]) -> Row:
    """A :class:`Row` from a row whose fields are not all of the usual types, judged as JavaScript would."""
    return Row(
        type=_text(obj.get("type")),
        uuid=_text(obj.get("uuid")),
        parent_uuid=_text(obj.get("parentUuid")),
        is_sidechain=truthy(obj.get("isSidechain")),
        is_compact_summary=truthy(obj.get("isCompactSummary")),
        is_meta=truthy(obj.get("isMeta")),
        subtype=_text(obj.get("subtype")),
        leaf_uuid=_text(obj.get("leafUuid")),
    )


def decode_line(line: bytes | memoryview) -> Any:
    """A line's JSON value as Node's ``JSON.parse`` of the UTF-8-decoded text gives it.

    Raises:
        msgspec.DecodeError: the line is not JSON (torn, zero-filled, cut).
    """
    try:
        return _DECODE_ANY.decode(line)
    except msgspec.DecodeError:
        text = bytes(line).decode("utf-8", "replace")  # Node reads invalid UTF-8 as U+FFFD
        return _DECODE_ANY.decode(text.encode("utf-8"))


@dataclass
class ParsedRows:
    """Every row of a session file that parsed, in file order, and what did not."""

    data: bytes
    """The file's bytes (a row's other fields are decoded from them on demand)."""
    rows: list[Row] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    """Where ``rows[i]``'s line starts in :attr:`data`."""
    invalid: list[tuple[int, str]] = field(default_factory=list)
    """``(line, why)`` of every line dropped: not JSON, or JSON but not an object."""
    torn_tail: bool = False
    """The last line has no ``\\n`` and does not parse: a write the crash cut (or one under way)."""
    line_count: int = 0
    _lines: list[int] | None = None

    @property
    def lines(self) -> list[int]:
        """The 1-based line of each row (counted once, when first asked: most sessions never need it)."""
        if self._lines is None:
            out: list[int] = []
            count = self.data.count
            line, at = 1, 0
            for start in self.starts:
                line += count(b"\n", at, start)
                at = start
                out.append(line)
            self._lines = out
        return self._lines

    def line_of(self, i: int) -> int:
        """The 1-based line of ``rows[i]`` (counted up to it alone when the lines were not counted yet)."""
        if self._lines is not None:
            return self._lines[i]
        return self.data.count(b"\n", 0, self.starts[i]) + 1

    def line(self, i: int) -> memoryview:
        """The bytes of ``rows[i]``'s line."""
        start = self.starts[i]
        end = self.data.find(b"\n", start)
        return memoryview(self.data)[start : end if end >= 0 else len(self.data)]

    def value(self, i: int) -> dict[str, Any]:
        """``rows[i]``'s whole JSON object (decoded now; a row that parsed once parses again)."""
        obj = decode_line(self.line(i))
        return obj if isinstance(obj, dict) else {}

    def get(self, i: int, name: str) -> Any:
        """One top-level field of ``rows[i]`` (``None`` when absent)."""
        return self.value(i).get(name)


def _why(chunk: memoryview, exc: msgspec.DecodeError) -> str:
    nul = bytes(chunk).count(0)
    if nul:
        return f"{nul} NUL byte(s), not JSON (a zero-filled block a crash leaves)"
    return f"not JSON ({exc})"


def _slow(out: ParsedRows, chunk: memoryview, number: int, last: bool, exc: Exception) -> Row | None:
    """A line the fast decoder refused: a row after all (odd field types, bad UTF-8), or a dropped line."""
    if isinstance(exc, msgspec.DecodeError):
        if not bytes(chunk).strip():
            return None  # an empty line: nothing to read, nothing lost
        try:
            value = decode_line(chunk)
        except msgspec.DecodeError:
            out.torn_tail = out.torn_tail or last
            out.invalid.append((number, _why(chunk, exc)))
            return None
    else:
        value = decode_line(chunk)  # JSON, but a field of an unexpected type, or not an object at all
    if not isinstance(value, dict):
        out.invalid.append((number, f"a JSON {type(value).__name__}, not a row"))
        return None
    return _row_of(value)


def parse_rows(data: bytes) -> ParsedRows:
    """Every line of a session file read as a row, tolerantly (see the module docstring).

    The loop is the reader's hot path (a config dir of 2,000 sessions is a million lines): it
    keeps only each row and where its line starts; line numbers are counted when asked.
    """
    out = ParsedRows(data)
    view = memoryview(data)
    add_row, add_start = out.rows.append, out.starts.append
    decode, find = _DECODE_ROW.decode, data.find
    size = len(data)
    pos = 0
    number = 0
    while pos < size:
        end = find(b"\n", pos)
        if end < 0:
            end = size
        number += 1
        try:
            add_row(decode(view[pos:end]))
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            row = _slow(out, view[pos:end], number, end == size, exc)
            if row is not None:
                add_row(row)
                add_start(pos)
        else:
            add_start(pos)
        pos = end + 1
    out.line_count = number
    return out
