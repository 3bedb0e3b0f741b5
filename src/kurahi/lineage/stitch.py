"""Stitching A + B → C: one history from the pieces of a session reset, nothing rewritten.

C gets a new header (new session id, ``parentSession`` naming the last source, and a
``lineage`` field listing every source and every stitch edge), then A's canonical path
copied line for line, then each later source's whole tree copied line for line. The one
change is the stitch edge: the root of each later source's path is re-parented onto the
previous source's reset-time leaf, and only its ``parentId`` changes. The report proves it
line by line with hashes, so anyone can re-check C against its sources.

OpenClaw 2026.9 keeps a reset inside one session: a ``{"type": "reset"}`` entry after which
its runtime sends nothing older. Stitch bypasses every ``reset`` entry it would copy: the
reset's line is left out and the entry that followed it is re-parented onto the entry before
it (another stitch edge, with ``bypassed`` naming the reset). So one source is enough when it
holds a reset (``stitch S --out C``): C is S's canonical path without its resets, under a new
session id. A source without a reset still needs a BEFORE and an AFTER.

Pi 1.6.0's ``context_edit`` entries are copied byte for byte like every other line. One
thing changes meaning, and the report says so: an edit in a later source that names an
entry of an earlier one does nothing in its own file (the target is not there) but applies
in C, where the stitch edge makes that entry its ancestor.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from kurahi import __version__
from kurahi.errors import KurahiError, StitchError
from kurahi.fs import durable as fsio
from kurahi.js.stringify import js_json
from kurahi.js.values import MISSING, date_ms
from kurahi.lineage.path import canonical_path
from kurahi.pi.ids import entry_id, iso_now, session_id
from kurahi.pi.read.native import line_digests
from kurahi.pi.read.scan import decode_line
from kurahi.pi.transcript import Transcript
from kurahi.pi.vocab import CONTEXT_EDIT, ID_FIELDS, LEAF_ID, RESET, SESSION, TARGET_ID

__all__ = ["StitchReport", "stitch"]

# A line stitch has to re-encode is written as Pi's JSON.stringify would write it: a lone
# surrogate from the source as its escape (msgspec refuses it), numbers as JavaScript's.
_encode = js_json


class SourceReport(msgspec.Struct):
    """What was taken from one source."""

    path: str
    sha256: str
    session_id: str
    role: str
    """``before`` (only its canonical path is copied) or ``after`` (its whole tree)."""
    leaf_id: str | None
    """The reset-time leaf (the next source attaches here)."""
    entries: int
    copied: int
    not_copied: int
    first_entry_at: Any = None
    last_entry_at: Any = None
    lines: list[list[Any]] = msgspec.field(default_factory=list)
    """``[output line, source line, sha256 of the source line, change]`` per copied line."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "path": self.path,
            "sha256": self.sha256,
            "sessionId": self.session_id,
            "role": self.role,
            "leafId": self.leaf_id,
            "entries": self.entries,
            "copied": self.copied,
            "notCopied": self.not_copied,
            "firstEntryAt": self.first_entry_at,
            "lastEntryAt": self.last_entry_at,
            "lines": self.lines,
        }


class StitchReport(msgspec.Struct):
    """Everything needed to re-verify a stitch."""

    out: str
    out_sha256: str = ""
    header: dict[str, Any] = msgspec.field(default_factory=dict)
    sources: list[SourceReport] = msgspec.field(default_factory=list)
    edges: list[dict[str, Any]] = msgspec.field(default_factory=list)
    renamed: dict[str, str] = msgspec.field(default_factory=dict)
    warnings: list[str] = msgspec.field(default_factory=list)

    @property
    def identical_lines(self) -> int:
        """Copied lines that are byte-identical to their source line."""
        return sum(1 for s in self.sources for row in s.lines if row[3] is None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``--report`` file)."""
        return {
            "tool": f"kurahi {__version__}",
            "out": self.out,
            "outSha256": self.out_sha256,
            "header": self.header,
            "sources": [s.to_dict() for s in self.sources],
            "edges": self.edges,
            "renamed": self.renamed,
            "identicalLines": (same := self.identical_lines),
            "changedLines": sum(len(s.lines) for s in self.sources) - same,
            "warnings": self.warnings,
        }


def _reparent(raw: bytes, parent: str) -> tuple[bytes, str]:
    """Give a line a new parent, changing nothing else in its bytes when possible."""
    value, _ = decode_line(raw)
    want = {**value, "parentId": parent}
    old = value.get("parentId")
    needle = b'"parentId":' + (json.dumps(old, ensure_ascii=False).encode() if isinstance(old, str) else b"null")
    if raw.count(needle) == 1:
        candidate = raw.replace(needle, b'"parentId":' + json.dumps(parent).encode())
        got, _ = decode_line(candidate)
        if got == want:
            return candidate, "parentId"
    return _encode(want), "parentId (re-encoded)"


def _rename(data: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    out = dict(data)
    for key in ID_FIELDS:
        v = out.get(key)
        if isinstance(v, str) and v in mapping:
            out[key] = mapping[v]
    payload = out.get("data")
    if isinstance(payload, dict) and isinstance(payload.get(LEAF_ID), str) and payload[LEAF_ID] in mapping:
        out["data"] = {**payload, LEAF_ID: mapping[payload[LEAF_ID]]}
    return out


def _check_sources(paths: Sequence[Path], out: Path) -> None:
    if not paths:
        raise StitchError("stitch needs a BEFORE and at least one AFTER transcript")
    for i, a in enumerate(paths):
        for b in paths[i + 1 :]:
            with contextlib.suppress(OSError):
                if a.resolve() == b.resolve() or os.path.samefile(a, b):
                    raise StitchError(f"{a} and {b} are the same file")
    if out.exists() or out.is_symlink():
        raise StitchError(f"{out}: already exists; stitch never overwrites a file")
    if not out.parent.is_dir():
        raise StitchError(f"{out.parent}: no such directory")
    for p in paths:
        with contextlib.suppress(OSError):
            if out.resolve() == p.resolve():
                raise StitchError(f"{out} is one of the sources")


def stitch(
    sources: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    leaf_id: str | None = None,
    rename_colliding: bool = False,
    force: bool = False,
    keep_resets: Collection[str] = (),
) -> StitchReport:
    """Write C from BEFORE and one or more AFTER transcripts; see the module docstring.

    Args:
        sources: BEFORE first, then each AFTER in time order.
        out: the new transcript (must not exist; written atomically).
        leaf_id: BEFORE's reset-time leaf (default: the leaf Pi would open, or a leaf marker's target).
        rename_colliding: give colliding ids in later sources new ids (consistently) instead of failing.
        force: proceed when a later source starts before the previous one ends (a warning remains).
        keep_resets: ids of ``reset`` entries copied as they are instead of bypassed: a rescue of one
            loss keeps the resets before it, so what they ended stays out of OpenClaw 2026.9's view.

    Raises:
        StitchError: same file twice, output exists, id collisions, a later source whose
            root already has a parent, a later source older than the one before it.
        NotASessionError, TranscriptReadError, ParentCycleError: a source cannot be read.
    """
    from kurahi.runtimes.sources import materialize

    names = [os.fspath(p) for p in sources]
    out_path = Path(out)
    report = StitchReport(out=str(out_path))
    transcripts: list[Transcript] = []
    with contextlib.ExitStack() as stack:
        paths = [stack.enter_context(materialize(n)) for n in names]
        _check_sources(paths, out_path)
        try:
            transcripts.extend(Transcript.open(p) for p in paths)
            return _stitch_open(
                paths, names, transcripts, out_path, report, leaf_id, rename_colliding, force, frozenset(keep_resets)
            )
        finally:
            for t in transcripts:
                t.close()
    raise AssertionError("unreachable")  # pragma: no cover


def _stitch_open(
    paths: list[Path],
    names: list[str],
    transcripts: list[Transcript],
    out_path: Path,
    report: StitchReport,
    leaf_id: str | None,
    rename_colliding: bool,
    force: bool,
    keep: frozenset[str] = frozenset(),
) -> StitchReport:
    hashes: _Hashes | None = None
    try:
        for p, t in zip(paths, transcripts, strict=True):
            if t.migrated_from is not None or t.version is MISSING:
                raise StitchError(
                    f"{p}: a version-1/2 session; stitch copies lines verbatim, so it must be v3 or later"
                )
        # The sources' sha256 (for the report) is computed on a second thread from here on:
        # the scans above had both cores, and what follows is mostly one thread's work.
        # A lone source must hold a reset to bypass. (Its path only: the tree's branches, which
        # need every entry's children, cost a 200k-entry BEFORE 0.3-0.7 s and said nothing here.)
        if len(paths) == 1 and not any(
            e.type == RESET and e.id not in keep
            for e in canonical_path(transcripts[0], leaf_id, branches=False).entries
        ):
            raise StitchError(
                f"{names[0]}: no reset entry on its path, so one transcript has nothing to stitch: stitch needs "
                "a BEFORE and at least one AFTER transcript (the pieces `lineage find` lists)"
            )
        hashes = _Hashes(transcripts)
        return _stitch(paths, names, transcripts, out_path, report, leaf_id, rename_colliding, force, hashes, keep)
    finally:
        if hashes is not None:
            hashes.wait()


class _Hashes:
    """:meth:`Transcript.content_sha256` of each source, on a thread started at once."""

    def __init__(self, transcripts: list[Transcript]) -> None:
        self._results: list[str | KurahiError] = []
        self._thread = threading.Thread(target=self._run, args=(transcripts,), name="kurahi-stitch-sha256", daemon=True)
        self._thread.start()

    def _run(self, transcripts: list[Transcript]) -> None:
        for t in transcripts:
            try:
                self._results.append(t.content_sha256())
            except KurahiError as exc:  # raised on the main thread, by get()
                self._results.append(exc)

    def wait(self) -> None:
        """Let the thread finish (it only reads)."""
        self._thread.join()

    def get(self, k: int) -> str:
        """The sha256 of source ``k``.

        Raises:
            TranscriptReadError: the source could not be read back.
        """
        self._thread.join()
        got = self._results[k]
        if isinstance(got, KurahiError):
            raise got
        return got


class _Piece(msgspec.Struct):
    """One source's share of C, planned before anything is written."""

    k: int
    indices: list[int]
    """Entry positions to copy, in output order."""
    reparent: dict[int, str] = msgspec.field(default_factory=dict)
    """Entry position -> new parent id (the stitch edge)."""
    mapping: dict[str, str] = msgspec.field(default_factory=dict)
    """Renamed ids (``--rename-colliding``)."""
    leaf: str | None = None
    """Where the next source attaches (after renaming)."""
    bypassed: dict[int, str] = msgspec.field(default_factory=dict)
    """Entry position -> id of the ``reset`` entry its new parent edge skips."""


def _bypass_resets(t: Transcript, piece: _Piece, attach: str | None, keep: frozenset[str]) -> None:
    """Leave the piece's ``reset`` entries out (not those in ``keep``); re-parent what followed each.

    What followed a bypassed reset goes onto what preceded it.
    """
    types = t.types()
    resets = {i for i in piece.indices if types[i] == RESET and t.entry_at(i).id not in keep}
    if not resets:
        return
    kept = [i for i in piece.indices if i not in resets]

    def resolved(index: int) -> str | None:
        """The nearest ancestor of a reset that is not itself a reset (``attach`` above a root)."""
        entry = t.entry_at(index)
        while entry.type == RESET and entry.id not in keep:
            parent = entry.parent_id
            if not isinstance(parent, str):
                return attach
            at = t.index_of(parent)
            if at is None:
                return parent
            entry = t.entry_at(at)
        return str(entry.id)

    for i in kept:
        parent = t.entry_at(i).parent_id
        at = t.index_of(parent) if isinstance(parent, str) else None
        if at is not None and at in resets:
            new = resolved(at)
            if new is None:
                raise StitchError(f"reset entry {parent} is a root with nothing before it to attach line {i} to")
            piece.reparent[i] = new
            piece.bypassed[i] = str(parent)
    piece.indices = kept
    if piece.leaf is not None:
        leaf_at = t.index_of(piece.leaf)
        if leaf_at is not None and leaf_at in resets:
            piece.leaf = resolved(leaf_at)


def _stitch(
    paths: list[Path],
    names: list[str],
    ts: list[Transcript],
    out: Path,
    report: StitchReport,
    leaf_id: str | None,
    rename_colliding: bool,
    force: bool,
    hashes: _Hashes,
    keep: frozenset[str],
) -> StitchReport:
    used: set[str] = set()
    pieces: list[_Piece] = []
    prev_last_ms: Any = None
    for k, (p, t) in enumerate(zip(paths, ts, strict=True)):
        report.warnings.extend(_skipped_lines(names[k], t, out))
        if k == 0:
            cp = canonical_path(t, leaf_id, branches=False)
            if not cp.entries:
                raise StitchError(f"{p}: BEFORE has no entries to continue from")
            if cp.leaf_id is None:
                raise StitchError(
                    f"{p}: BEFORE's leaf (line {cp.entries[-1].line}) has no id for AFTER to attach to; "
                    "--leaf chooses another entry"
                )
            piece = _Piece(k, [e.index for e in cp.entries], leaf=cp.leaf_id)
            _bypass_resets(t, piece, None, keep)
        else:
            if not len(t):
                raise StitchError(f"{p}: AFTER has no entries")
            cp = canonical_path(t, branches=False)
            root = cp.entries[0] if cp.entries else t.entry_at(0)
            if root.parent_id is not None:
                raise StitchError(
                    f"{p}: the root of its path ({root.id}, line {root.line}) already has a parent "
                    f"({root.parent_id!r}); was it stitched before?"
                )
            attach = pieces[-1].leaf
            if attach is None:  # a middle source whose leaf has no id (BEFORE's is checked above)
                raise StitchError(f"{paths[k - 1]}: its leaf has no id for {p} to attach to")
            piece = _Piece(k, list(range(len(t))), {root.index: attach}, leaf=cp.leaf_id)
            if root.type == RESET:
                del piece.reparent[root.index]
            _bypass_resets(t, piece, attach, keep)
            first_ms = date_ms(t.entry_at(0).data.get("timestamp", MISSING))
            if isinstance(first_ms, int) and isinstance(prev_last_ms, int) and first_ms < prev_last_ms:
                msg = f"{p} starts ({t.entry_at(0).data.get('timestamp')}) before {paths[k - 1]} ends"
                if not force:
                    raise StitchError(msg + "; is the order right? --force to stitch anyway")
                report.warnings.append(msg)
        ids_here = [i if type(i) is str else str(i) for i in t.ids_of(piece.indices)]
        collide = sorted(used.intersection(ids_here))
        if collide:
            if not rename_colliding:
                raise StitchError(
                    f"{p}: {len(collide)} entry ids also occur in earlier sources ({', '.join(collide[:5])}); "
                    "--rename-colliding gives them new ids and records the mapping"
                )
            taken = used | set(ids_here)
            for old in collide:
                piece.mapping[old] = new = entry_id(taken)
                taken.add(new)
            report.renamed.update(piece.mapping)
        used.update(ids_here if not piece.mapping else (piece.mapping.get(i, i) for i in ids_here))
        if piece.leaf is not None:
            piece.leaf = piece.mapping.get(piece.leaf, piece.leaf)
        for index, parent in piece.reparent.items():
            child = str(t.entry_at(index).id)
            edge = {"child": piece.mapping.get(child, child), "parent": parent, "source": names[k]}
            if index in piece.bypassed:
                edge["bypassed"] = piece.bypassed[index]
            report.edges.append(edge)
        if k > 0:
            _edits_across(t, p, piece, pieces, ts, report)
        pieces.append(piece)
        prev_last_ms = date_ms(t.entry_at(len(t) - 1).data.get("timestamp", MISSING))
    _write(names, ts, out, report, pieces, hashes)
    return report


def _skipped_lines(name: str, t: Transcript, out: Path) -> list[str]:
    """What a source's reading left out or read leniently, named by line (Pi leaves the same out).

    A stitch never drops a line without a word: a torn last line (a crash mid-write) and any
    line Pi skips are named in the output and the report, with the way to deal with them.
    """
    torn = t.torn_tail
    out_lines: list[str] = []
    for w in t.warnings:
        if torn is not None and w.line == torn[0]:
            out_lines.append(
                f"{name} line {w.line}: torn last line ({t.size - torn[1]} bytes, no newline, not JSON: a crash "
                f"mid-write): not copied into {out}, as Pi leaves it out too; `kurahi session repair {name}` "
                "moves it into a sidecar file"
            )
        else:
            out_lines.append(f"{name} line {w.line}: {w.message}")
    return out_lines


def _edits_across(
    t: Transcript, p: Path, piece: _Piece, earlier: list[_Piece], ts: list[Transcript], report: StitchReport
) -> None:
    """Warn about edits in this source that name an entry copied from an earlier one."""
    types = t.types()
    edits = [i for i in piece.indices if types[i] == CONTEXT_EDIT]
    copied: dict[int, set[int]] = {}
    for i in edits:
        e = t.entry_at(i)
        target = e.data.get(TARGET_ID)
        if not isinstance(target, str) or target in t:
            continue
        for prev in earlier:
            src = ts[prev.k]
            at = src.index_of(prev.mapping.get(target, target))
            if at is not None and at in copied.setdefault(prev.k, set(prev.indices)):
                what = "removes" if e.data.get("replacement") is None else "replaces the content of"
                report.warnings.append(
                    f"{p} line {e.line}: context_edit {e.id} {what} {target}, an entry of {src.name}: inert in its "
                    "own file, it applies in the stitched one (the stitch edge makes that entry its ancestor)"
                )
                break


def _header(paths: list[str], ts: list[Transcript], report: StitchReport) -> dict[str, Any]:
    versions = [t.version for t in ts if isinstance(t.version, int) and not isinstance(t.version, bool)]
    return {
        "type": SESSION,
        "version": max([3, *versions]),
        "id": session_id(),
        "timestamp": iso_now(),
        "cwd": ts[-1].header.get("cwd", ts[0].header.get("cwd", "")),
        "parentSession": str(paths[-1]),
        "lineage": {
            "tool": f"kurahi {__version__}",
            "sources": [{"path": str(p), "sessionId": t.session_id} for p, t in zip(paths, ts, strict=True)],
            "edges": report.edges,
        },
    }


_BATCH = 4096
"""Lines copied per write (and per read of the source's chunks)."""


def _copied(t: Transcript, piece: _Piece, out_line: int) -> Iterator[tuple[bytes, list[list[Any]]]]:
    """The output bytes of one piece (lines joined by newlines) and their report rows, a batch at a time.

    A row is ``[output line, source line, sha256 of the source line, change]``; ``out_line``
    is the output line before the piece.
    """
    for start in range(0, len(piece.indices), _BATCH):
        indices = piece.indices[start : start + _BATCH]
        line_nos, source = t.raw_joined(indices)
        changes: list[str | None] = [None] * len(line_nos)
        lines: list[bytes] = []  # split only when a line of the batch changes
        if piece.mapping:
            lines = source.split(b"\n")
            for k, i in enumerate(indices):
                e = t.entry_at(i)
                renamed = _rename(e.data, piece.mapping)
                if renamed != e.data:
                    lines[k], changes[k] = _encode(renamed), "renamed"
        where = dict(zip(indices, range(len(indices)), strict=True)) if piece.reparent else {}
        for i, parent in piece.reparent.items():
            at = where.get(i)
            if at is not None:
                lines = lines or source.split(b"\n")
                lines[at], how = _reparent(lines[at], parent)
                changes[at] = how if changes[at] is None else f"{changes[at]}+{how}"
        first = out_line + start + 1
        numbers = range(first, first + len(line_nos))
        rows = list(map(list, zip(numbers, line_nos, line_digests(source), changes, strict=True)))
        yield (b"\n".join(lines) if lines else source), rows


def _write(
    paths: list[str], ts: list[Transcript], out: Path, report: StitchReport, pieces: list[_Piece], hashes: _Hashes
) -> None:
    header = _header(paths, ts, report)
    report.header = header
    tmp = out.with_name(f".{out.name}.{os.getpid()}.stitch.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    out_hash = hashlib.sha256()
    buf: list[bytes] = []

    def flush() -> None:
        data = b"".join(buf)
        out_hash.update(data)
        fsio.write_all(fd, data)
        buf.clear()

    try:
        buf += (_encode(header), b"\n")
        out_line = 1  # the header
        for piece in pieces:
            t = ts[piece.k]
            src = SourceReport(
                path=str(paths[piece.k]),
                sha256="",  # filled in below, once the hashing thread is done
                session_id=t.session_id,
                role="before" if piece.k == 0 else "after",
                leaf_id=piece.leaf,
                entries=len(t),
                copied=len(piece.indices),
                not_copied=len(t) - len(piece.indices),
                first_entry_at=t.entry_at(piece.indices[0]).data.get("timestamp"),
                last_entry_at=t.entry_at(piece.indices[-1]).data.get("timestamp"),
            )
            for data, rows in _copied(t, piece, out_line):
                src.lines += rows
                out_line += len(rows)
                buf += (data, b"\n")
                flush()
            report.sources.append(src)
        flush()
        fsio.ops.fsync(fd)
        # Asked for last, the sources' hashes have had the whole write to finish on their thread.
        for src, piece in zip(report.sources, pieces, strict=True):
            src.sha256 = hashes.get(piece.k)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.link(tmp, out)  # atomic, and refuses to replace a file that appeared meanwhile
    except FileExistsError as exc:
        raise StitchError(f"{out}: already exists; stitch never overwrites a file") from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    fsio.fsync_dir(out.parent)
    report.out_sha256 = out_hash.hexdigest()
