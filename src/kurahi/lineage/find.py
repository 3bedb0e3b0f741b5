"""Find every transcript in a session key's lineage, in time order, with its reset boundaries.

Works on a Kurahi home or an OpenClaw state directory of either era, and only reads:

- **JSON era** (and Kurahi): ``agents/<agent>/sessions/sessions.json`` plus ``<id>.jsonl``,
  ``<id>.jsonl.reset.<ts>`` and ``<id>.jsonl.deleted.<ts>`` files.
- **SQLite era** (OpenClaw 2026.8+): ``agents/<agent>/agent/openclaw-agent.sqlite``; a
  session there is named ``sqlite:<db>#<session id>``. When both exist, the SQLite store
  wins for a session id it holds and the JSON files add only the ids it lacks.

Each piece records the rules that linked it (``Piece.found_by``):

``catalog sessionFile`` / ``catalog sessionId`` / ``session_nodes current_session_id``
    the key's live session.
``session_windows session_key``
    another window of the same key in the SQLite store.
``catalog previousSessionId`` / ``session_windows previous_session_id`` / ``header parentSession``
    a session named by an entry or header already in the lineage (the chain is followed).
``archive of <id>``
    a ``.reset.<ts>`` / ``.deleted.<ts>`` file of a session id already in the lineage.
``reset time = next header time`` / ``reset time <n> s before next header``
    a heuristic, because in the JSON era nothing else links a reset's two sessions: a
    ``.reset.<ts>`` archive whose ``<ts>`` equals, or precedes by at most
    :data:`RESET_MATCH_WINDOW` seconds, the header timestamp of a piece already in the
    lineage (the closest one wins, and the archive's own header must be older). OpenClaw
    stamps the archive with the new session's start time, so the match is exact in practice.

Transcripts in the same folder that no rule linked and no catalog key points at (another
key's archives, or an idle rollover that left its old ``.jsonl`` referenced by nothing), and
SQLite sessions with events but no key, are listed in ``Lineage.unlinked``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, fields, is_dataclass, replace
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any

from kurahi.errors import KurahiError, TranscriptError, UsageError
from kurahi.jsvalues import MISSING, date_ms
from kurahi.lineage.openclaw_sqlite import (
    SQLITE_STORE_NAME,
    SqliteNode,
    export_session_jsonl,
    list_sqlite_nodes,
    list_sqlite_sessions,
    sqlite_key_sessions,
    sqlite_source,
)
from kurahi.store.catalog import CATALOG_NAME, Catalog, validate_agent_id
from kurahi.store.fsio import fsync_dir, write_all
from kurahi.store.listing import locate_transcript
from kurahi.store.openclaw_sqlite_snapshot import StoreSnapshot, open_store_snapshot
from kurahi.store.transcript import Transcript, read_transcript_file
from kurahi.store.vocab import COMPACTION, RESET

__all__ = ["RESET_MATCH_WINDOW", "Boundary", "Lineage", "Piece", "ResetEntry", "export_piece", "find_lineage", "iso"]

RESET_MATCH_WINDOW = 5.0
"""Seconds a ``.reset.<ts>`` stamp may precede the next piece's header time and still link."""

_NAME = re.compile(r"^(?P<sid>.+?)\.jsonl(?:\.(?P<what>reset|deleted)\.(?P<ts>[^/]+))?$")
_SAME = "same session id as a linked piece"
_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(\.\d+)?Z$")


@dataclass(frozen=True, slots=True)
class ResetEntry:
    """An in-transcript ``{"type": "reset"}`` entry (OpenClaw v4): a reset inside one session."""

    id: str
    line: int
    """1-based line in the transcript (for a SQLite piece, in its JSONL export: seq + 1)."""
    at_ms: int | None
    reason: str | None
    before_ms: int | None
    """Time of the entry just before it in the file."""
    after_ms: int | None
    """Time of the entry just after it in the file."""


@dataclass(frozen=True, slots=True)
class Piece:
    """One transcript of the lineage."""

    source: str
    """The file path, or ``sqlite:<db>#<session id>``."""
    session_id: str
    kind: str
    """``live``, ``reset-archive``, ``deleted-archive``, ``transcript`` or ``sqlite``."""
    found_by: tuple[str, ...]
    """Every rule that linked the piece, first one first (see the module docstring)."""
    header_ms: int | None
    archived_ms: int | None = None
    """The ``<ts>`` of a ``.reset.<ts>`` / ``.deleted.<ts>`` name."""
    first_ms: int | None = None
    last_ms: int | None = None
    entry_count: int = 0
    compaction_count: int = 0
    reset_entries: tuple[ResetEntry, ...] = ()
    warnings: int = 0
    """Lines the reader skipped or read leniently."""
    db_path: str | None = None
    """The SQLite store, for a SQLite piece."""

    @property
    def sort_ms(self) -> int:
        """The time the piece is ordered by: first entry, else header, else archive stamp."""
        for value in (self.first_ms, self.header_ms, self.archived_ms):
            if value is not None:
                return value
        return 0


@dataclass(frozen=True, slots=True)
class Boundary:
    """A candidate reset boundary: between two pieces, or a ``reset`` entry inside one."""

    kind: str
    """``between-pieces`` or ``reset-entry``."""
    before: str
    after: str
    from_ms: int | None
    to_ms: int | None
    entry_id: str | None = None
    reason: str | None = None

    @property
    def gap_seconds(self) -> float | None:
        """Seconds from ``from_ms`` to ``to_ms`` (negative when the pieces overlap)."""
        if self.from_ms is None or self.to_ms is None:
            return None
        return (self.to_ms - self.from_ms) / 1000


@dataclass(frozen=True, slots=True)
class Lineage:
    """Every transcript of one session key, in time order, and the boundaries between them."""

    state_dir: str
    layout: str
    """``json``, ``sqlite`` or ``json+sqlite``."""
    agent: str
    key: str
    current_session_id: str | None
    pieces: tuple[Piece, ...]
    boundaries: tuple[Boundary, ...]
    unlinked: tuple[str, ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return the lineage as a JSON-ready dict (camelCase names, ISO-8601 UTC times)."""
        result: dict[str, Any] = _to_json(self)
        return result


def iso(ms: int | None) -> str | None:
    """Format epoch milliseconds as ISO-8601 UTC with milliseconds (``None`` stays ``None``)."""
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


_JSON_NAMES = {"first_ms": "firstEntryAt", "last_ms": "lastEntryAt", "from_ms": "from", "to_ms": "to", "at_ms": "at"}


def _to_json(value: Any) -> Any:
    """Dataclasses as camelCase dicts, ``*_ms`` fields as ISO times (``header_ms`` -> ``headerAt``)."""
    if isinstance(value, (tuple, list)):
        return [_to_json(v) for v in value]
    if not is_dataclass(value):
        return value
    out: dict[str, Any] = {}
    for f in fields(value):
        item = getattr(value, f.name)
        name = _JSON_NAMES.get(f.name) or re.sub(r"_(\w)", lambda m: m[1].upper(), f.name.removesuffix("_ms"))
        if f.name.endswith("_ms"):
            out[name if f.name in _JSON_NAMES else name + "At"] = iso(item)
        else:
            out[name] = _to_json(item)
    if isinstance(value, Boundary):
        out["gapSeconds"] = value.gap_seconds
    return out


def _ms(value: Any) -> int | None:
    ms = date_ms(value)
    return int(ms) if ms is not None else None


def _stamp_ms(stamp: str) -> int | None:
    """``2026-11-30T08-24-46.695Z`` (an archive suffix) as epoch milliseconds."""
    m = _STAMP.match(stamp)
    return _ms(f"{m[1]}T{m[2]}:{m[3]}:{m[4]}{m[5] or ''}Z") if m else None


def _measure(t: Transcript, source: str, session_id: str, kind: str, rules: list[str], **extra: Any) -> Piece:
    times: list[int | None] = []
    compactions = 0
    resets: list[tuple[int, Any]] = []
    for entry in t.entries():
        stamp = t.timestamp_ms(entry.index)
        times.append(int(stamp) if stamp is not None else None)
        if entry.type == COMPACTION:
            compactions += 1
        elif entry.type == RESET:
            resets.append((entry.index, entry))
    valid = [x for x in times if x is not None]
    reset_entries = tuple(
        ResetEntry(
            id=str(e.id),
            line=e.line,
            at_ms=times[i],
            reason=e.data.get("reason") if isinstance(e.data.get("reason"), str) else None,
            before_ms=times[i - 1] if i > 0 else None,
            after_ms=times[i + 1] if i + 1 < len(times) else None,
        )
        for i, e in resets
    )
    return Piece(
        source=source,
        session_id=session_id,
        kind=kind,
        found_by=tuple(rules),
        header_ms=_ms(t.header.get("timestamp", MISSING)),
        first_ms=min(valid) if valid else None,
        last_ms=max(valid) if valid else None,
        entry_count=len(t),
        compaction_count=compactions,
        reset_entries=reset_entries,
        warnings=len(t.warnings),
        **extra,
    )


class _Files:
    """The transcripts of one sessions folder, by session id."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.by_sid: dict[str, list[tuple[Path, str, int | None]]] = {}
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            m = _NAME.match(path.name)
            if m is None or not path.is_file():
                continue
            what = m["what"]
            kind = f"{what}-archive" if what else "transcript"
            stamp = _stamp_ms(m["ts"]) if m["ts"] else None
            self.by_sid.setdefault(m["sid"], []).append((path, kind, stamp))

    def all(self) -> Iterable[tuple[str, Path, str, int | None]]:
        for sid, files in self.by_sid.items():
            for path, kind, stamp in files:
                yield sid, path, kind, stamp


def _json_pieces(folder: Path, key: str, entry: dict[str, Any], anchors: list[Piece], notes: list[str]) -> list[Piece]:
    """The key's file pieces; ``anchors`` are pieces already found elsewhere (the SQLite store).

    A session id an anchor has is not read again from a file, but reset archives are matched
    against the anchors' header times too: after OpenClaw 2026.9's doctor imports a 2026.5
    directory, the pre-reset ``.reset.<ts>`` archive stays in ``sessions/`` while the session
    that followed it lives in the store.
    """
    skip = {p.session_id for p in anchors}
    files = _Files(folder)
    found: dict[Path, list[str]] = {}
    queue: list[tuple[str, str]] = []
    live, exists = locate_transcript(folder, entry)
    if live is not None and exists:
        written = entry.get("sessionFile")
        named = isinstance(written, str) and PurePath(written).name == live.name
        found[live] = ["catalog sessionFile" if named else "catalog sessionId"]
    elif live is not None:
        notes.append(f"{key}: the catalog names {live}, which does not exist")
    for field, rule in (("sessionId", "catalog sessionId"), ("previousSessionId", "catalog previousSessionId")):
        if isinstance(entry.get(field), str):
            queue.append((entry[field], rule))
    pieces: dict[Path, Piece] = {}
    checked: set[str] = set()
    while True:
        while queue:
            sid, rule = queue.pop(0)
            for path, kind, _ in files.by_sid.get(sid, []) if sid not in skip else []:
                if rule == _SAME and path in found:
                    continue  # a piece is not linked to itself
                why = rule if kind == "transcript" else f"archive of {sid}"
                if why not in found.setdefault(path, []):
                    found[path].append(why)
        for path in [p for p in found if p not in pieces]:
            opened = _open_file(path, found[path], files, live, notes)
            if opened is None:
                continue
            pieces[path], parent = opened
            queue.append((pieces[path].session_id, _SAME))
            if parent:
                queue.append((parent, "header parentSession"))
        if not queue and not _match_reset_archives(files, [*pieces.values(), *anchors], found, checked):
            break
    return [replace(p, found_by=tuple(found[path])) for path, p in pieces.items() if p.session_id not in skip]


def _open_file(
    path: Path, rules: list[str], files: _Files, live: Path | None, notes: list[str]
) -> tuple[Piece, str | None] | None:
    """Measure one file; also return the session id its header's ``parentSession`` names."""
    kind = "live" if path == live else next((k for _, p, k, _ in files.all() if p == path), "transcript")
    m = _NAME.match(path.name)
    stamp = _stamp_ms(m["ts"]) if m and m["ts"] else None
    try:
        with Transcript.open(path) as t:
            piece = _measure(t, str(path), t.session_id, kind, rules, archived_ms=stamp)
            parent = t.header.get("parentSession")
    except TranscriptError as exc:
        notes.append(f"skipped {path}: {exc.detail}")
        return None
    if not isinstance(parent, str) or not parent or "\0" in parent:
        return piece, None
    # Pi writes the parent's file path; a bare session id is accepted too.
    name = PurePath(parent).name
    named = _NAME.match(name)
    return piece, named["sid"] if named else name


def _match_reset_archives(files: _Files, pieces: list[Piece], found: dict[Path, list[str]], checked: set[str]) -> bool:
    """Apply the reset-time heuristic to each piece not yet checked; whether it linked one."""
    added = False
    for piece in pieces:
        if piece.source in checked or piece.header_ms is None:
            continue
        checked.add(piece.source)
        best: tuple[int, Path] | None = None
        for _, cand, kind, stamp in files.all():
            if kind != "reset-archive" or stamp is None or cand in found:
                continue
            lag = piece.header_ms - stamp
            if 0 <= lag <= RESET_MATCH_WINDOW * 1000 and (best is None or stamp > best[0]):
                best = (stamp, cand)
        if best is not None:
            lag = piece.header_ms - best[0]
            found[best[1]] = [
                "reset time = next header time" if lag == 0 else f"reset time {lag / 1000:g} s before next header"
            ]
            added = True
    return added


def _sqlite_pieces(
    snap: StoreSnapshot, nodes: dict[str, SqliteNode], key: str, agent: str, notes: list[str]
) -> tuple[list[Piece], list[str]]:
    db = snap.source
    sessions = list_sqlite_sessions(snap)
    counts = {s.session_id: s.event_count for s in sessions}
    found, orphans = sqlite_key_sessions(nodes.get(key), sessions, key)
    if key == f"agent:{agent}:main":
        # OpenClaw 2026.9's doctor moves a 2026.5 transcript no catalog entry named (the session
        # an idle or daily rollover left behind) to its own key: its original key is not
        # recorded, and such orphans come from the agent's main conversation.
        prefix = f"agent:{agent}:recovered:"
        for other, node in nodes.items():
            if other.startswith(prefix):
                rule = f"recovered key {other} (orphan imported by OpenClaw's doctor)"
                for sid in (node.current_session_id, *(s.session_id for s in sessions if s.session_key == other)):
                    if rule not in found.setdefault(sid, []):
                        found[sid].append(rule)
    order = list(found)  # header parentSession links are appended as they are read
    pieces: dict[str, Piece] = {}
    for sid in order:
        source = sqlite_source(db, sid)
        if not counts.get(sid):
            notes.append(f"{source}: no transcript events stored")
            continue
        try:
            t = Transcript.from_bytes(export_session_jsonl(snap, sid), name=source)
        except TranscriptError as exc:
            notes.append(f"skipped {source}: {exc.detail}")
            continue
        parent = t.header.get("parentSession")
        if isinstance(parent, str) and parent in counts:
            if parent not in found:
                order.append(parent)
            if "header parentSession" not in found.setdefault(parent, []):
                found[parent].append("header parentSession")
        pieces[sid] = _measure(t, source, sid, "sqlite", [], db_path=str(db))
    return [replace(p, found_by=tuple(found[sid])) for sid, p in pieces.items()], [
        sqlite_source(db, o) for o in orphans
    ]


def _agents(root: Path) -> dict[str, tuple[Path | None, Path | None]]:
    """Agents with a sessions folder and/or a SQLite store: ``{id: (sessions dir, db)}``."""
    out: dict[str, tuple[Path | None, Path | None]] = {}
    agents = root / "agents"
    for child in sorted(agents.iterdir()) if agents.is_dir() else []:
        try:
            validate_agent_id(child.name)
        except UsageError:
            continue
        sessions, db = child / "sessions", child / "agent" / SQLITE_STORE_NAME
        pair = (sessions if sessions.is_dir() else None, db if db.exists() else None)
        if pair != (None, None):
            out[child.name] = pair
    return out


def find_lineage(state_dir: str | os.PathLike[str], *, agent: str | None = None, key: str | None = None) -> Lineage:
    """Find every transcript in a session key's lineage, in time order; never writes.

    Args:
        state_dir: a Kurahi home or an OpenClaw state directory (JSON or SQLite era).
        agent: the agent id; default the only agent present.
        key: the session key; default ``agent:<agent>:main`` when present, else the only key.

    Raises:
        UsageError: the directory is missing or neither layout; the agent or key is unknown
            or ambiguous (the message lists the choices).
        TranscriptReadError: the SQLite store is unreadable, corrupt or locked.
        CatalogError: ``sessions.json`` does not parse or cannot be read.
    """
    root = Path(state_dir)
    if not root.is_dir():
        raise UsageError(
            f"{root}: {'not a directory' if root.exists() else 'no such directory'} (expected a state directory)"
        )
    agents = _agents(root)
    if not agents:
        raise UsageError(
            f"{root}: neither a Kurahi home nor an OpenClaw state directory "
            f"(no agents/<id>/sessions/ and no agents/<id>/agent/{SQLITE_STORE_NAME})"
        )
    if agent is None:
        if len(agents) > 1:
            raise UsageError(f"{root}: several agents, pick one with --agent: {', '.join(agents)}")
        agent = next(iter(agents))
    if agent not in agents:
        raise UsageError(f"{root}: no agent {agent!r}; agents present: {', '.join(agents)}")
    folder, db = agents[agent]
    catalog = dict(Catalog(folder / CATALOG_NAME).items()) if folder else {}
    with contextlib.ExitStack() as stack:
        snap = stack.enter_context(open_store_snapshot(db)) if db is not None else None
        return _find(root, agent, key, folder, catalog, snap)


def _find(
    root: Path, agent: str, key: str | None, folder: Path | None, catalog: dict[str, Any], snap: StoreSnapshot | None
) -> Lineage:
    nodes = {n.session_key: n for n in list_sqlite_nodes(snap)} if snap is not None else {}
    keys = sorted({*catalog, *nodes})
    if key is None:
        main = f"agent:{agent}:main"
        if main not in keys and len(keys) != 1:
            raise UsageError(
                f"{root}: agent {agent!r} has {len(keys)} keys and no {main!r}; pick one with --key: {', '.join(keys)}"
            )
        key = main if main in keys else keys[0]
    if key not in keys:
        raise UsageError(f"{root}: agent {agent!r} has no session key {key!r}; keys: {', '.join(keys) or '(none)'}")
    notes: list[str] = []
    pieces: list[Piece] = []
    unlinked: list[str] = []
    current: str | None = None
    if snap is not None:
        pieces, unlinked = _sqlite_pieces(snap, nodes, key, agent, notes)
        current = nodes[key].current_session_id if key in nodes else None
    if folder is not None:
        entry = catalog.get(key, {})
        json_pieces = _json_pieces(folder, key, entry, pieces, notes)
        if current is None and isinstance(entry.get("sessionId"), str):
            current = entry["sessionId"]
        pieces += json_pieces
        referenced = {e.get("sessionId") for e in catalog.values()}
        linked = {p.source for p in pieces}
        unlinked += [str(p) for sid, p, _, _ in _Files(folder).all() if str(p) not in linked and sid not in referenced]
    pieces.sort(key=lambda p: (p.sort_ms, p.source))
    return Lineage(
        state_dir=str(root),
        layout="+".join(name for name, there in (("json", folder), ("sqlite", snap)) if there is not None),
        agent=agent,
        key=key,
        current_session_id=current,
        pieces=tuple(pieces),
        boundaries=tuple(_boundaries(pieces)),
        unlinked=tuple(unlinked),
        notes=tuple(notes),
    )


def _boundaries(pieces: list[Piece]) -> list[Boundary]:
    out = [Boundary("between-pieces", a.source, b.source, a.last_ms, b.first_ms) for a, b in itertools.pairwise(pieces)]
    for p in pieces:
        for r in p.reset_entries:
            out.append(Boundary("reset-entry", p.source, p.source, r.before_ms, r.after_ms, r.id, r.reason))
    out.sort(key=lambda b: b.to_ms if b.to_ms is not None else b.from_ms or 0)
    return out


def export_piece(piece: Piece, out_path: str | os.PathLike[str]) -> Path:
    """Write a piece as a JSONL transcript at ``out_path``, atomically; never overwrites.

    A SQLite piece is exported from its store (:func:`export_session_jsonl`); a file piece
    is copied byte for byte. The target must not exist and must not be inside the state
    directory the piece came from (``<state>/agents/<id>/{sessions,agent}/...``).

    Returns:
        The path written.

    Raises:
        UsageError: ``out_path`` exists, its folder is missing, or it lies in the state directory.
        TranscriptReadError: the source cannot be read.
    """
    target = Path(out_path)
    parents = Path(piece.db_path or piece.source).absolute().parents
    origin = parents[3] if len(parents) > 3 and parents[2].name == "agents" else parents[0]
    if target.absolute().parent.resolve().is_relative_to(origin.resolve()):
        raise UsageError(f"{target}: refusing to write into the state directory {origin}")
    if piece.db_path is not None:
        data = export_session_jsonl(piece.db_path, piece.session_id)
    else:
        with Transcript.open(piece.source):
            pass  # the same clear errors as everywhere else for a missing or broken source
        data = read_transcript_file(piece.source)
    if not target.parent.is_dir():
        raise UsageError(f"{target}: the folder {target.parent} does not exist")
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        # link() fails when the target exists, so a file that appears meanwhile is not replaced.
        os.link(tmp, target)
    except FileExistsError as exc:
        raise UsageError(f"{target}: already exists; refusing to overwrite") from exc
    except OSError as exc:
        raise KurahiError(f"{target}: cannot write: {exc.strerror or exc}") from exc
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync_dir(target.parent)
    return target
