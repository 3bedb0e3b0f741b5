"""The one state a server serves, read on demand and kept while it does not change.

A :class:`Served` names an OpenClaw state dir (either era), a Kurahi home or Pi's sessions
folder, and one agent of it. Each question about a key reads the key's whole lineage through
the library (:func:`kurahi.lineage.find.open_agent`: the SQLite store through a private
snapshot, so the live store is never opened, written, or given a ``-shm``) into a
:class:`History` of passages, which is kept until a file of the agent's state changes (size,
time, inode: a stat per file, well under a millisecond). A history read while the state
changed under it is read again; one that keeps changing is refused, never half-read.
"""

from __future__ import annotations

import bisect
import itertools
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kurahi.errors import UsageError
from kurahi.lineage.find import Lineage, iso, list_agents, open_agent
from kurahi.locations.dirs import kurahi_home
from kurahi.mcp_server.passages import Passage, PieceInfo, fold, own_passages, piece_passages
from kurahi.mcp_server.safety import Refusal, check_key_text, quoted
from kurahi.pi.transcript import Transcript
from kurahi.runtimes.registry import RUNTIMES, for_state_dir, named

__all__ = ["KINDS", "History", "Served", "find_state"]

KINDS = ("home", *(r.name for r in RUNTIMES))
"""What a server can serve: a Kurahi home, or a runtime's state (an OpenClaw state dir, Pi's sessions
folder, Claude Code's config dir)."""

_READS = 3
"""Times a history is read while the state keeps changing under it, before refusing."""


@dataclass
class History:
    """A key's lineage, readable: its pieces, boundaries and every entry as a passage."""

    key: str
    agent: str | None
    layout: str
    pieces: list[PieceInfo]
    boundaries: list[dict[str, Any]]
    passages: list[Passage]
    notes: list[str] = field(default_factory=list)
    by_piece: dict[str, list[Passage]] = field(default_factory=dict)

    _blob: bytes = b""
    _starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        for p in self.passages:
            self.by_piece.setdefault(p.piece, []).append(p)
        # Every passage's folded text in one UTF-8 buffer, NUL-separated: a search is one C-speed
        # scan of it per word (a str of mixed scripts is four bytes a character; this is one).
        # Only the buffer is kept: a folded copy of every text as str would double the memory.
        parts = [fold(p.text).encode("utf-8", "surrogatepass") if p.text else b"" for p in self.passages]
        starts, at = [], 0
        for part in parts:
            starts.append(at)
            at += len(part) + 1
        self._blob, self._starts = b"\0".join(parts), starts

    def matching(self, needle: str) -> set[int]:
        """Indices of the passages whose folded text contains ``needle`` (already folded)."""
        want = needle.encode("utf-8", "surrogatepass")
        found: set[int] = set()
        if not want:
            return found
        blob, starts, at = self._blob, self._starts, 0
        while True:
            at = blob.find(want, at)
            if at < 0:
                return found
            i = bisect.bisect_right(starts, at) - 1
            found.add(i)
            at = starts[i + 1] if i + 1 < len(starts) else len(blob)  # on to the next passage

    @property
    def current(self) -> PieceInfo | None:
        """The piece the key points at now."""
        return next((p for p in self.pieces if p.current), None)


def find_state(
    *,
    openclaw: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
    pi: str | os.PathLike[str] | None = None,
    claude: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[str, Path]:
    """The state to serve: the one named, else the one ``doctor`` would find.

    Named by option first; else a state named by its environment variable (``OPENCLAW_STATE_DIR``,
    ``KURAHI_HOME``, ``PI_CODING_AGENT_SESSION_DIR``...); else the one default location that exists.
    A runtime that reads its own session files (Claude Code) is found only when nothing else is:
    name it (``--claude``) to serve it beside the others.

    Raises:
        UsageError: more than one named, or nothing to serve, or several and none named.
    """
    given = (("openclaw", openclaw), ("home", home), ("pi", pi), ("claude", claude))
    named = [(k, Path(v)) for k, v in given if v is not None]
    if len(named) > 1:
        raise UsageError("name one state to serve: --openclaw, --home, --pi or --claude, not several")
    if named:
        kind, path = named[0]
        if not path.is_dir():
            raise UsageError(f"--{kind} {path}: not a directory")
        return kind, path.absolute()
    # States of agents first, then Kurahi's own home, then folders of session files.
    keyed = [(r.name, r.locate(env)) for r in RUNTIMES if r.keyed]
    # Folders of session files the transcript reader reads (a runtime with rows of its own is not served yet).
    files = [(r.name, r.locate(env)) for r in RUNTIMES if not r.keyed and r.pi_transcripts]
    found = [*keyed, ("home", kurahi_home(None, env)), *files]
    explicit = [(k, loc.path) for k, loc in found if loc.explicit and loc.path.is_dir()]
    if len(explicit) == 1:
        return explicit[0][0], explicit[0][1].absolute()
    there = explicit or [(k, loc.path) for k, loc in found if loc.path.is_dir()]
    if not there:  # then a runtime whose sessions only its room reads
        own = [(r.name, r.locate(env)) for r in RUNTIMES if not r.keyed and not r.pi_transcripts]
        there = [(k, loc.path) for k, loc in own if loc.path.is_dir() and _owns(k, loc.path)]
        found += own
    if len(there) == 1:
        return there[0][0], there[0][1].absolute()
    if not there:
        looked = ", ".join(f"{loc.path} ({loc.source})" for _, loc in found)
        raise UsageError(f"no state to serve (looked at {looked}); name one with --openclaw, --home or --pi")
    raise UsageError(
        "several states found ("
        + ", ".join(f"{k}: {p}" for k, p in there)
        + "); name the one to serve with --openclaw, --home or --pi"
    )


def _owns(name: str, root: Path) -> bool:
    """Whether the runtime ``name``'s state is at ``root`` (it has sessions there)."""
    return named(name).owns(root)


def _stat_row(path: str) -> tuple[str, int, int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (path, st.st_size, st.st_mtime_ns, st.st_ino)


class Served:
    """One state and agent, served read-only.

    Args:
        kind: one of :data:`KINDS`.
        root: the directory.
        agent: the agent (OpenClaw, Kurahi); default ``main`` when present, else the only one.

    Raises:
        UsageError: the directory is not that kind of state, or the agent is unknown or ambiguous.
    """

    def __init__(self, kind: str, root: Path, agent: str | None = None) -> None:
        if kind not in KINDS:
            raise UsageError(f"unknown state kind {kind!r}")
        self.kind, self.root = kind, root
        self.runtime: Any = for_state_dir(root) if kind == "home" else named(kind)
        """The runtime whose state this is (a Kurahi home reads as the layout it shares)."""
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[Any, ...], History]] = {}
        if not self.runtime.keyed and agent is not None:
            raise UsageError(f"--agent names an OpenClaw or Kurahi agent; {self.runtime.label}'s sessions have none")
        if not root.is_dir():
            raise UsageError(f"{root}: not a directory")
        self._asked = agent
        self._agent: str | None = None

    @property
    def agent(self) -> str | None:
        """The agent served: the one asked for, else ``main``, else the only one (``None`` for Pi).

        Found on first use, not at start: a server registered before the runtime wrote any
        session starts, and answers once there is one.

        Raises:
            Refusal: no agent yet, or several and none named.
        """
        if not self.runtime.keyed:
            return None
        if self._agent is None:
            try:
                agents = list_agents(self.root)
            except UsageError as exc:
                raise Refusal(f"nothing to read yet: {exc}") from None
            agent = self._asked
            if agent is None:
                agent = "main" if "main" in agents else agents[0] if len(agents) == 1 else None
                if agent is None:
                    raise Refusal(f"several agents ({', '.join(agents)}); start the server with --agent")
            if agent not in agents:
                raise Refusal(f"no agent {agent!r} here yet; agents present: {', '.join(agents) or '(none)'}")
            self._agent = agent
        return self._agent

    # -- what changes ----------------------------------------------------------------

    def signature(self) -> tuple[Any, ...]:
        """Size, time and inode of every file the served agent's history lives in (links not followed)."""
        folders = [str(f) for f in self.runtime.history_folders(self.root, self.agent)]
        rows: list[Any] = []
        for folder in folders:
            row = _stat_row(folder)
            rows.append(row)
            if row is None:
                continue
            try:
                with os.scandir(folder) as it:
                    names = sorted(e.path for e in it if e.is_file(follow_symlinks=False))
            except OSError:
                continue
            rows += [_stat_row(p) for p in names if not p.endswith("-shm")]
        return tuple(rows)

    # -- keys -------------------------------------------------------------------------

    @property
    def own_rows(self) -> bool:
        """The runtime reads its own session files (Claude Code): its keys and sessions come from it."""
        return not self.runtime.keyed and not self.runtime.pi_transcripts

    def _session_files(self) -> dict[str, str]:
        return {s.session_id: s.file for s in self.runtime.session_files(self.root) if s.session_id}

    def keys(self) -> list[str]:
        """Every session key served (for Pi, every session id; for Claude Code, every project folder)."""
        if self.own_rows:
            return list(self.runtime.own_keys(self.root))
        if not self.runtime.keyed:
            return sorted(self._session_files())
        with open_agent(self.root, self.agent) as state:
            return [k for k in state.keys if not state.hidden(k)]

    def _choose(self, key: str | None, keys: list[str]) -> str:
        """``key`` if it is one of ``keys``, else the default key; a :class:`Refusal` naming the keys."""
        if key is not None:
            if key in keys:
                return key
            shown = ", ".join(keys[:20]) + (f" and {len(keys) - 20} more" if len(keys) > 20 else "")
            raise Refusal(f"key {quoted(key, 300)}: not a session key of this state; keys: {shown or '(none)'}")
        if not keys:
            raise Refusal(f"{self.root}: no session to serve")
        main = f"agent:{self.agent}:main"
        if main in keys:
            return main
        if not self.runtime.keyed or len(keys) == 1:
            return keys[-1]
        raise Refusal(f"this agent has no {main!r} and several keys; name one: {', '.join(keys[:20])}")

    # -- histories ----------------------------------------------------------------------

    def history(self, key: str | None) -> History:
        """The history of ``key`` (default: the main key), read now or kept if nothing changed since.

        Raises:
            Refusal: the key is not the served agent's, or the state kept changing while read.
        """
        if key is not None:
            check_key_text(key, self.agent)
        with self._lock:
            before = self.signature()
            cached = self._cache.get(key or "")
            if cached is not None and cached[0] == before:
                return cached[1]
            for _ in range(_READS):
                hist = self._read(key)
                after = self.signature()
                if after == before:
                    self._cache = {key or "": (after, hist)}  # one history kept: memory stays bounded
                    return hist
                before = after
        raise Refusal("the state kept changing while it was read (the runtime is writing); ask again in a moment")

    def _read(self, key: str | None) -> History:
        if self.own_rows:
            return self._read_own(key)
        if not self.runtime.keyed:
            return self._read_file(key)
        with open_agent(self.root, self.agent) as state:
            key = self._choose(key, [k for k in state.keys if not state.hidden(k)])
            lineage = state.lineage(key)
            pieces = _pieces(lineage)
            passages: list[Passage] = []
            for i, piece in enumerate(lineage.pieces):
                with state.open_piece(piece) as t:
                    pieces[i] = _with_repair(pieces[i], t)
                    passages += piece_passages(t, pieces[i])
            labels = {p.source: p.label for p in pieces}
            bounds = [
                {
                    "kind": b.kind,
                    "before": labels.get(b.before, "?"),
                    "after": labels.get(b.after, "?"),
                    "from": iso(b.from_ms),
                    "to": iso(b.to_ms),
                    **({"entryId": b.entry_id} if b.entry_id else {}),
                    **({"reason": b.reason} if b.reason else {}),
                }
                for b in lineage.boundaries
            ]
            return History(key, self.agent, lineage.layout, pieces, bounds, passages, list(lineage.notes))

    def _read_own(self, key: str | None) -> History:
        """A runtime that reads its own sessions: a key's sessions, oldest first, the newest current."""
        key = self._choose(key, self.runtime.own_keys(self.root))
        sessions = self.runtime.own_sessions(self.root, key)
        pieces: list[PieceInfo] = []
        passages: list[Passage] = []
        notes: list[str] = []
        for i, s in enumerate(sessions):
            current = i == len(sessions) - 1
            info = PieceInfo(
                f"p{i}",
                s.path,
                s.session_id,
                "session",
                current,
                s.first_ms,
                s.last_ms,
                "the same project folder",
                "recorded",
                False,
            )
            pieces.append(info)
            notes += [n for n in s.notes if n not in notes]
            passages += own_passages(s.entries, info)
        bounds = [
            {
                "kind": "new",
                "before": a.label,
                "after": b.label,
                "from": iso(a.last_ms),
                "to": iso(b.first_ms),
                "reason": f"a new {self.runtime.label} session in the same project folder (/clear, or a start "
                "without --continue/--resume)",
            }
            for a, b in itertools.pairwise(pieces)
        ]
        return History(key, None, self.runtime.name, pieces, bounds, passages, notes)

    def _read_file(self, key: str | None) -> History:
        """A runtime without keys: the session file whose id is ``key`` (default: the newest)."""
        files = self._session_files()
        ordered = [s.session_id for s in self.runtime.session_files(self.root) if s.session_id]
        key = self._choose(key, ordered)
        path = files[key]
        with Transcript.open(path) as t:
            info = PieceInfo("p0", path, key, "transcript", True, None, None, "the session file", "recorded", False)
            info = _with_repair(info, t)
            passages = list(piece_passages(t, info))
        times = [p.at_ms for p in passages if p.at_ms is not None]
        info = PieceInfo(**{**_fields(info), "first_ms": min(times, default=None), "last_ms": max(times, default=None)})
        return History(key, None, self.runtime.name, [info], [], passages)


def _fields(info: PieceInfo) -> dict[str, Any]:
    return {name: getattr(info, name) for name in PieceInfo.__slots__}


def _with_repair(info: PieceInfo, t: Transcript) -> PieceInfo:
    stitched = isinstance(t.header.get("lineage"), dict)
    return PieceInfo(**{**_fields(info), "repair_active": stitched})


def _pieces(lineage: Lineage) -> list[PieceInfo]:
    return [
        PieceInfo(
            label=f"p{i}",
            source=p.source,
            session_id=p.session_id,
            kind=p.kind,
            current=p.current,
            first_ms=p.first_ms,
            last_ms=p.last_ms,
            found_by=p.found_by[0] if p.found_by else "",
            confidence=p.confidence,
            repair_active=False,
        )
        for i, p in enumerate(lineage.pieces)
    ]
