"""OpenClaw's state dir as an :class:`~kurahi.runtimes.base.Agent` per agent: a key's pieces, linked.

Every transcript in a session key's lineage, in time order, with its reset boundaries. Works on
an OpenClaw state directory of either era and on a Kurahi home (which shares the JSON era's
layout), and only reads:

- **JSON era** (and Kurahi): ``agents/<agent>/sessions/sessions.json`` plus ``<id>.jsonl``,
  ``<id>.jsonl.reset.<ts>`` and ``<id>.jsonl.deleted.<ts>`` files.
- **SQLite era** (OpenClaw 2026.8+): ``agents/<agent>/agent/openclaw-agent.sqlite``; a
  session there is named ``sqlite:<db>#<session id>``. A session OpenClaw's cold storage moved
  out of the store is read from its archive (``sessions/cold/``), once verified, as kind
  ``sqlite-cold``; one that is missing or does not match is skipped with a note naming it.
  When both exist, the SQLite store wins for a session id it holds and the JSON files add only the ids it lacks.

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
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kurahi.errors import KurahiError, TranscriptError, UsageError
from kurahi.fs.durable import fsync_dir, write_all
from kurahi.fs.os_errors import os_error
from kurahi.js.values import MISSING, date_ms
from kurahi.pi.transcript import Transcript, read_transcript_file
from kurahi.pi.vocab import COMPACTION, RESET
from kurahi.runtimes.base import Boundary as RecordedBoundary
from kurahi.runtimes.base import ResetPolicy, View
from kurahi.runtimes.openclaw import layout, records
from kurahi.runtimes.openclaw.json_links import (
    RESET_MATCH_WINDOW,
    FolderIndex,
    Owner,
    assign_owners,
    imported_trajectories,
    moved_session_file,
    read_trajectory_key,
)
from kurahi.runtimes.openclaw.sqlite.read import (
    SqliteNode,
    SqliteSession,
    export_session_jsonl,
    header_times,
    list_sqlite_nodes,
    list_sqlite_sessions,
    sqlite_key_sessions,
    sqlite_source,
)
from kurahi.runtimes.openclaw.sqlite.snapshot import StoreSnapshot, open_store_snapshot
from kurahi.runtimes.pieces import Boundary, Lineage, Piece, ResetEntry, boundaries, iso
from kurahi.store.catalog import CATALOG_NAME, Catalog, validate_agent_id

__all__ = [
    "RESET_MATCH_WINDOW",
    "AgentState",
    "Boundary",
    "Lineage",
    "Piece",
    "ResetEntry",
    "export_piece",
    "iso",
    "list_agents",
    "open_agent",
]


def _ms(value: Any) -> int | None:
    ms = date_ms(value)
    return int(ms) if ms is not None else None


_EDGE_SCAN = 1000
"""Entries looked at from each end of a file for its first and last time (a file without times is not read whole)."""


def _ts(t: Transcript, index: int) -> int | None:
    stamp = t.timestamp_ms(index)
    return int(stamp) if stamp is not None else None


def _edge_ms(t: Transcript, indices: Iterable[int]) -> int | None:
    """The first valid time among ``indices`` (at most :data:`_EDGE_SCAN` of them)."""
    return next((ms for i in itertools.islice(indices, _EDGE_SCAN) if (ms := _ts(t, i)) is not None), None)


class _Notes(list[str]):
    """A lineage's notes, and the sources among them that could not be read at all."""

    def __init__(self) -> None:
        super().__init__()
        self.unread: list[str] = []

    def skip(self, source: str, detail: str) -> None:
        """Note that ``source`` was left out because it could not be read, and why."""
        self.append(f"skipped {source}: {detail}")
        self.unread.append(source)


def _measure(t: Transcript, source: str, session_id: str, kind: str, rules: list[str], **extra: Any) -> Piece:
    """A piece's facts from the file's columns: only the entries at its ends and its resets are decoded.

    ``first_ms`` and ``last_ms`` are the times of the first and last entries in file order
    (OpenClaw appends in time order; a file whose times disagree is measured as written).
    """
    types = t.types()
    n = len(types)
    resets = [i for i, kind_ in enumerate(types) if kind_ == RESET]
    reset_entries = []
    for i in resets:
        e = t.entry_at(i)
        reason = e.data.get("reason")
        reset_entries.append(
            ResetEntry(
                id=str(e.id),
                line=e.line,
                at_ms=_ts(t, i),
                reason=reason if isinstance(reason, str) else None,
                before_ms=_ts(t, i - 1) if i > 0 else None,
                after_ms=_ts(t, i + 1) if i + 1 < n else None,
            )
        )
    return Piece(
        source=source,
        session_id=session_id,
        kind=kind,
        found_by=tuple(rules),
        header_ms=_ms(t.header.get("timestamp", MISSING)),
        first_ms=_edge_ms(t, range(n)),
        last_ms=_edge_ms(t, range(n - 1, -1, -1)),
        entry_count=n,
        compaction_count=sum(1 for kind_ in types if kind_ == COMPACTION),
        reset_entries=tuple(reset_entries),
        warnings=len(t.warnings),
        **extra,
    )


def _json_pieces(
    state: AgentState,
    index: FolderIndex,
    owners: dict[Path, Owner],
    live: dict[str, Path],
    key: str,
    skip: set[str],
    notes: _Notes,
) -> list[Piece]:
    """The key's file pieces (:mod:`kurahi.runtimes.openclaw.json_links` decided whose each file is).

    A session id in ``skip`` (the SQLite store has it: an upgraded dir) is not read again from
    a file.
    """
    paths = [path for path, owner in owners.items() if owner.key == key]
    if key in live and live[key] not in paths:
        paths.append(live[key])  # a transcript several keys share is still each one's live session
    pieces = []
    for path in paths:
        info = next(f for f in index.files if f.path == path)
        if info.sid in skip:
            continue
        owner = owners.get(path)
        rules = owner.rules if owner is not None and owner.key == key else ["catalog sessionFile"]
        confidence = owner.confidence if owner is not None and owner.key == key else "recorded"
        kind = "live" if path == live.get(key) else info.kind
        try:
            with state.open_file(path) as t:
                piece = _measure(t, str(path), t.session_id, kind, rules, archived_ms=info.stamp_ms)
        except TranscriptError as exc:
            notes.skip(str(path), exc.detail)
            continue
        pieces.append(replace(piece, confidence=confidence))
    return pieces


def _import_archive_pieces(
    state: AgentState, nodes: dict[str, SqliteNode], key: str, notes: _Notes
) -> tuple[list[Piece], list[str]]:
    """Originals OpenClaw's doctor kept in ``session-sqlite-import-archive/`` whose session the store lacks.

    The doctor names each ``<key with : as _>.<session id>.jsonl.imported-<ms>``: the key is
    recorded (when exactly one key of the store has that spelling). One the store holds was
    imported, and is not a piece of its own.
    """
    folder = state.root / "agents" / state.agent / IMPORT_ARCHIVE
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.is_file(follow_symlinks=False))
    except OSError:
        return [], []
    have = {s.session_id for s in state.sessions() if s.event_count}
    spelled: dict[str, list[str]] = {}
    for k in nodes:
        spelled.setdefault(k.replace(":", "_"), []).append(k)
    pieces: list[Piece] = []
    strays: list[str] = []
    for name in names:
        m = _IMPORTED.match(name)
        if m is None or m["sid"] in have:
            continue
        owners = spelled.get(m["key"], [])
        path = folder / name
        if len(owners) != 1:
            strays.append(str(path))
            continue
        if owners[0] != key:
            continue
        rule = f"{IMPORT_ARCHIVE} file named for {key}, a session the store lacks"
        try:
            with state.open_file(path) as t:
                pieces.append(_measure(t, str(path), t.session_id, "import-archive", [rule]))
        except TranscriptError as exc:
            notes.skip(str(path), exc.detail)
    return pieces, strays


def _sqlite_pieces(
    state: AgentState, nodes: dict[str, SqliteNode], key: str, agent: str, notes: _Notes
) -> tuple[list[Piece], list[str]]:
    snap = state.snap
    assert snap is not None
    db = snap.source
    sessions = state.sessions()
    counts = {s.session_id: s.event_count for s in sessions}
    cold = {s.session_id for s in sessions if s.cold_archive is not None}
    found, orphans = sqlite_key_sessions(nodes.get(key), sessions, key)
    for other, (owner, rule, _) in state.recovered_owners(nodes).items():
        if owner != key:
            continue
        for sid in (nodes[other].current_session_id, *(s.session_id for s in sessions if s.session_key == other)):
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
            with state.open_session(sid) as t:
                parent = t.header.get("parentSession")
                kind = "sqlite-cold" if sid in cold else "sqlite"  # its events from OpenClaw's cold archive
                pieces[sid] = _measure(t, source, sid, kind, [], db_path=str(db))
        except TranscriptError as exc:
            notes.skip(source, exc.detail)
            continue
        if isinstance(parent, str) and parent in counts:
            if parent not in found:
                order.append(parent)
            if "header parentSession" not in found.setdefault(parent, []):
                found[parent].append("header parentSession")

    levels = {rule: conf for _, rule, conf in state.recovered_owners(nodes).values()}

    def confidence(rules: list[str]) -> str:
        # A recovered orphan is as sure as what tied it to this key; any other rule is recorded.
        if all(r in levels for r in rules):
            return min((levels[r] for r in rules), key=["recorded", "matched", "guess"].index)
        return "recorded"

    return [replace(p, found_by=tuple(found[sid]), confidence=confidence(found[sid])) for sid, p in pieces.items()], [
        sqlite_source(db, o) for o in orphans
    ]


def agents_of(root: Path) -> dict[str, tuple[Path | None, Path | None]]:
    """Agents with a sessions folder and/or a SQLite store: ``{id: (sessions dir, db)}``."""
    out: dict[str, tuple[Path | None, Path | None]] = {}
    agents = root / "agents"
    for child in sorted(agents.iterdir()) if agents.is_dir() else []:
        try:
            validate_agent_id(child.name)
        except UsageError:
            continue
        sessions, db = layout.sessions_dir(root, child.name), layout.store_path(root, child.name)
        pair = (sessions if sessions.is_dir() else None, db if db.exists() else None)
        if pair != (None, None):
            out[child.name] = pair
    return out


def _root(state_dir: str | os.PathLike[str]) -> tuple[Path, dict[str, tuple[Path | None, Path | None]]]:
    # Absolute, so a file reached through the catalog and through a listing is one path
    # (a relative --state-dir listed the live transcript twice); links are not resolved.
    root = Path(os.path.abspath(state_dir))
    if not root.is_dir():
        raise UsageError(
            f"{root}: {'not a directory' if root.exists() else 'no such directory'} (expected a state directory)"
        )
    agents = agents_of(root)
    if not agents:
        raise UsageError(
            f"{root}: neither a Kurahi home nor an OpenClaw state directory "
            f"(no agents/<id>/sessions/ and no {layout.store_relative('<id>')})"
        )
    return root, agents


def list_agents(state_dir: str | os.PathLike[str]) -> list[str]:
    """The agents of a state directory that have sessions (a folder or a SQLite store).

    Raises:
        UsageError: the directory is missing or neither layout.
    """
    return list(_root(state_dir)[1])


IMPORT_ARCHIVE = layout.IMPORT_ARCHIVE

_IMPORTED = re.compile(r"^(?P<key>.+)\.(?P<sid>[0-9a-fA-F-]{36})\.jsonl\.imported-\d+$")

_KEEP_OPEN = 8
"""Transcripts an :class:`AgentState` keeps open at once."""


@dataclass
class AgentState:
    """One agent of a state directory, read once: its catalog, sessions folder and store snapshot."""

    root: Path
    agent: str
    folder: Path | None
    catalog: dict[str, Any]
    snap: StoreSnapshot | None
    scratch: Path | None = None
    """A private folder for exported SQLite sessions (removed when :func:`open_agent` ends)."""
    _json: tuple[FolderIndex, dict[Path, Owner], dict[str, Path], list[str]] | None = None
    _sessions: list[SqliteSession] | None = None
    _exported: dict[str, Path] = field(default_factory=dict)
    _recovered: dict[str, tuple[str, str, str]] | None = None
    _open: dict[str, Transcript] = field(default_factory=dict)
    """The transcripts read last, kept open (a file is scanned once for its lineage and its losses)."""

    @property
    def keys(self) -> list[str]:
        """Every session key of the agent (catalog and store)."""
        nodes = list_sqlite_nodes(self.snap) if self.snap is not None else []
        return sorted({*self.catalog, *(n.session_key for n in nodes)})

    def json_links(self) -> tuple[FolderIndex, dict[Path, Owner], dict[str, Path], list[str]]:
        """The sessions folder and whose each file is (computed once for every key)."""
        if self._json is None:
            assert self.folder is not None
            index = FolderIndex(self.folder)
            anchors = self.store_starts()
            notes: list[str] = []
            owners, live = assign_owners(index, self.catalog, anchors, notes)
            self._json = (index, owners, live, notes)
        return self._json

    def lineage(self, key: str | None = None) -> Lineage:
        """The lineage of ``key`` (default ``agent:<agent>:main`` when present, else the only key)."""
        return _find(self, key)

    def recovered_owners(self, nodes: dict[str, SqliteNode]) -> dict[str, tuple[str, str, str]]:
        """Each ``agent:<id>:recovered:<sid>`` key OpenClaw's doctor made: ``(owner key, rule, confidence)``.

        The doctor files a 2026.5 transcript no catalog entry named (an idle or daily rollover's
        leftover) under such a key, without its original key. The session's trajectory (in
        ``sessions/`` or the doctor's ``session-sqlite-import-archive/``) records it; else, when
        the agent has no key but ``agent:<id>:main``, it is main's (matched); else it is no one's.
        """
        if self._recovered is None:
            prefix = f"agent:{self.agent}:recovered:"
            real = sorted(k for k in nodes if not k.startswith(prefix))
            out: dict[str, tuple[str, str, str]] = {}
            for other in nodes:
                if not other.startswith(prefix):
                    continue
                sid = other[len(prefix) :]
                traced, where = self.trajectory_key(sid) or (None, "")
                if traced is not None and traced in nodes:
                    rule = f"recovered key {other}, whose trajectory ({where}) names {traced}"
                    out[other] = (traced, rule, "recorded")
                elif real == [f"agent:{self.agent}:main"]:
                    rule = f"recovered key {other} (orphan imported by OpenClaw's doctor; main is the only key)"
                    out[other] = (real[0], rule, "matched")
            self._recovered = out
        return self._recovered

    def trajectory_key(self, sid: str) -> tuple[str, str] | None:
        """The session key OpenClaw recorded in the session's trajectory, wherever the doctor left it, and where.

        In ``sessions/`` as ``<sid>.trajectory.jsonl``, else in the doctor's import archive by the
        name it gives (``<key slug>.<sid>.trajectory.jsonl.imported-<ms>``).
        """
        base = self.root / "agents" / self.agent
        key = read_trajectory_key(base / "sessions" / f"{sid}.trajectory.jsonl", sid)
        if key is not None:
            return key, f"sessions/{sid}.trajectory.jsonl"
        found = imported_trajectories(base / IMPORT_ARCHIVE).get(sid)
        return None if found is None else (found[1], f"{IMPORT_ARCHIVE}/{found[0].name}")

    def store_starts(self) -> list[tuple[str, int | None]]:
        """``(key, start ms)`` of every store session, as its header says it started.

        Under the key it belongs to (a doctor's ``recovered`` key counts as its owner's). A
        reset archive left in ``sessions/`` is matched against these: the window's
        ``created_at`` is the import time for what the doctor imported, not the session's start.
        """
        if self.snap is None:
            return []
        nodes = {n.session_key: n for n in list_sqlite_nodes(self.snap)}
        owners = {k: owner for k, (owner, _, _) in self.recovered_owners(nodes).items()}
        headers = header_times(self.snap)
        out: list[tuple[str, int | None]] = []
        for sess in self.sessions():
            if sess.session_key:
                key = owners.get(sess.session_key, sess.session_key)
                out.append((key, headers.get(sess.session_id, sess.created_at)))
        return out

    def sessions(self) -> list[SqliteSession]:
        """The store's sessions (read once)."""
        if self._sessions is None:
            self._sessions = list_sqlite_sessions(self.snap) if self.snap is not None else []
        return self._sessions

    def session_file(self, session_id: str) -> Path:
        """A SQLite session exported once, as a JSONL file in :attr:`scratch` (private, read by the C scanner)."""
        path = self._exported.get(session_id)
        if path is None:
            assert self.snap is not None and self.scratch is not None
            path = self.scratch / f"{len(self._exported):05d}.jsonl"
            path.write_bytes(export_session_jsonl(self.snap, session_id))
            self._exported[session_id] = path
        return path

    def _opened(self, path: Path) -> Transcript:
        key = str(path)
        t = self._open.pop(key, None)
        if t is None:
            t = Transcript.open(path)
            if len(self._open) >= _KEEP_OPEN:
                self._open.pop(next(iter(self._open))).close()
        self._open[key] = t  # the most recent last
        return t

    def close(self) -> None:
        """Close the transcripts kept open."""
        while self._open:
            self._open.popitem()[1].close()

    @contextlib.contextmanager
    def open_file(self, path: Path) -> Iterator[Transcript]:
        """A transcript file, open (kept open for the next question about it)."""
        yield self._opened(path)

    @contextlib.contextmanager
    def open_session(self, session_id: str) -> Iterator[Transcript]:
        """A SQLite session, open (exported once, then read from the private copy)."""
        yield self._opened(self.session_file(session_id))

    @contextlib.contextmanager
    def open_piece(self, piece: Piece) -> Iterator[Transcript]:
        """A piece's transcript, open: its file, or its SQLite session's private export."""
        if piece.db_path is not None and self.snap is not None:
            with self.open_session(piece.session_id) as t:
                yield t
            return
        with self.open_file(Path(piece.source)) as t:
            yield t

    def transcript_bytes(self, piece: Piece) -> bytes:
        """A piece's transcript: the file's bytes, or a SQLite session exported from this snapshot."""
        if piece.db_path is not None and self.snap is not None:
            return self.session_file(piece.session_id).read_bytes()
        return read_transcript_file(piece.source)

    # -- what OpenClaw's records say (:mod:`kurahi.runtimes.openclaw.records`) ----------------------

    def view(self, lineage: Lineage) -> View:
        """The view of the runtime that loads this state for ``lineage``."""
        return records.view_of_state(self.root, lineage)

    def reset_policy(self) -> ResetPolicy:
        """OpenClaw's reset policy for this state dir."""
        return records.reset_policy(self.root, self.snap is not None)

    def reasons(self) -> dict[str, str | None]:
        """SQLite session id → the reason its window was opened."""
        return {s.session_id: s.reason for s in self.sessions()}

    def boundary(self, lineage: Lineage, piece: Piece, after: Piece | None, policy: ResetPolicy) -> RecordedBoundary:
        """The boundary after ``piece`` by OpenClaw's records (:func:`~.records.boundary`)."""
        return records.boundary(lineage, piece, after, policy, self.reasons())

    def write_refusal(self) -> str | None:
        """Why an activation would refuse this agent's store, and what to do (``None``: it would not).

        Apply's own schema check, on the snapshot already open: a JSON-era agent has nothing it refuses.
        """
        if self.snap is None or not layout.sqlite_era(self.root, self.agent):
            return None
        from kurahi.runtimes.openclaw.sqlite.write import schema_refusal

        return schema_refusal(self.snap.conn, Path(self.snap.source))

    def hidden(self, key: str) -> bool:
        """A key OpenClaw's doctor made for an orphan (``agent:<id>:recovered:<sid>``): a piece of another key."""
        return key.startswith(f"agent:{self.agent}:recovered:")

    def window(self, key: str) -> tuple[int | None, str | None]:
        """The model's context window for ``key``, as OpenClaw resolves it.

        Its config's model entry, else the ``contextTokens`` OpenClaw recorded in the key's
        entry when it last ran (what its model catalog gave), else OpenClaw's default.
        """
        found = records.config_window(self.root, self.agent)
        if found is not None:
            return found
        entry: Any = self.catalog.get(key)
        where = "catalog"
        if entry is None and self.snap is not None:
            node = next((n for n in list_sqlite_nodes(self.snap) if n.session_key == key), None)
            entry = node.entry if node is not None else None
            where = "session_nodes"
        return records.recorded_window(entry, where)


@contextlib.contextmanager
def open_agent(state_dir: str | os.PathLike[str], agent: str | None = None) -> Iterator[AgentState]:
    """Read one agent of a state directory (default the only one); never writes.

    Raises:
        UsageError: the directory is missing or neither layout; the agent is unknown or ambiguous.
        TranscriptReadError: the SQLite store is unreadable, corrupt or locked.
        CatalogError: ``sessions.json`` does not parse or cannot be read.
    """
    root, agents = _root(state_dir)
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
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kurahi-find-"))) if snap else None
        state = AgentState(root, agent, folder, catalog, snap, scratch)
        stack.callback(state.close)
        yield state


def _find(state: AgentState, key: str | None) -> Lineage:
    root, agent, folder, catalog, snap = state.root, state.agent, state.folder, state.catalog, state.snap
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
    notes = _Notes()
    pieces: list[Piece] = []
    unlinked: list[str] = []
    current: str | None = None
    if snap is not None:
        pieces, unlinked = _sqlite_pieces(state, nodes, key, agent, notes)
        current = nodes[key].current_session_id if key in nodes else None
        archived, strays = _import_archive_pieces(state, nodes, key, notes)
        pieces += archived
        unlinked += strays
    moved_from: str | None = None
    if folder is not None:
        entry = catalog.get(key, {})
        index, owners, live, link_notes = state.json_links()
        notes += link_notes
        json_pieces = _json_pieces(state, index, owners, live, key, {p.session_id for p in pieces}, notes)
        if current is None and isinstance(entry.get("sessionId"), str):
            current = entry["sessionId"]
        if key not in live and entry and snap is None:
            notes.append(f"{key}: the catalog names no transcript that exists in {folder}")
        moved = moved_session_file(root, agent, entry)
        moved_from = moved.recorded if moved is not None else None
        pieces += json_pieces
        unlinked += [str(f.path) for f in index.files if f.path not in owners and f.path not in live.values()]
    live_source = next((p.source for p in pieces if p.kind == "live"), None)
    pieces = [
        replace(p, current=(p.source == live_source) if live_source else (p.session_id == current)) for p in pieces
    ]
    # In the order the sessions started; the key's current session last whatever its clocks say
    # (a copied header, a clock that went back): it is the one every earlier piece led to.
    pieces.sort(key=lambda p: (p.current, p.sort_ms, p.source))
    return Lineage(
        state_dir=str(root),
        layout="+".join(name for name, there in (("json", folder), ("sqlite", snap)) if there is not None),
        agent=agent,
        key=key,
        current_session_id=current,
        pieces=tuple(pieces),
        boundaries=tuple(boundaries(pieces)),
        unlinked=tuple(unlinked),
        notes=tuple(notes),
        moved_from=moved_from,
        unread=tuple(notes.unread),
    )


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
        raise os_error(KurahiError, "cannot write", exc, path=target) from exc
    finally:
        if tmp.exists():
            tmp.unlink()
    fsync_dir(target.parent)
    return target
