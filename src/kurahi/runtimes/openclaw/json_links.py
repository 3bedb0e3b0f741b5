"""Who owns each transcript of a JSON-era sessions folder: one key per file, and how sure we are.

OpenClaw 2026.5 keeps every session key of an agent in one folder. The catalog names only
each key's live session; a reset renames the old transcript to ``<id>.jsonl.reset.<ts>``;
an idle or daily rollover leaves the old ``<id>.jsonl`` in place, named by nothing. So the
pieces of one key's history are found by evidence, weighed across every key at once:

``recorded`` (a field OpenClaw or Pi wrote names the link)
    the catalog's ``sessionFile`` / ``sessionId`` / ``previousSessionId``, a header's
    ``parentSession``, another file of the same session id (``archive of <id>``), and the
    ``sessionKey`` OpenClaw writes on every line of ``<id>.trajectory.jsonl``.
``matched`` (the reset-archive rule)
    a ``.reset.<ts>`` archive whose ``<ts>`` is the start of exactly one later session (to within
    :data:`SAME_INSTANT_MS`)
    (a transcript header, or a catalog entry's ``sessionStartedAt``): OpenClaw stamps the
    archive with the new session's start, so equality is how a reset looks.
``guess`` (clocks alone)
    an archive whose stamp precedes the closest later session by up to
    :data:`RESET_MATCH_WINDOW` seconds; an unreferenced transcript that fits in exactly one
    key's history without overlapping it (an idle rollover). Shown as such, never applied
    without the user's confirmation.

A piece is never given to two keys, and never to a key when the evidence points as well or
better at another: an archive whose closest successor belongs to another key goes to that
key, and a tie, or an orphan that fits several keys' histories, goes to none (a note says
which keys it could belong to). Trajectory and compaction-checkpoint files are recognised
as OpenClaw's own artifacts and never listed as unlinked transcripts.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import msgspec

from kurahi.js.values import date_ms
from kurahi.locations.listing import first_line, last_lines
from kurahi.pi.vocab import SESSION
from kurahi.runtimes.openclaw.layout import IMPORT_ARCHIVE

__all__ = [
    "RESET_MATCH_WINDOW",
    "SAME_INSTANT_MS",
    "FolderIndex",
    "MovedSessionFile",
    "Owner",
    "SessionFile",
    "assign_owners",
    "imported_trajectories",
    "live_in_folder",
    "moved_session_file",
    "read_trajectory_key",
    "session_file_target",
    "stamp_ms",
]

SAME_INSTANT_MS = 100
"""A stamp this close to the next start is the same instant: OpenClaw reads its clock twice in one
reset (the archive's name, then the new header), a millisecond or so apart."""

RESET_MATCH_WINDOW = 5.0
"""Seconds a ``.reset.<ts>`` stamp may precede the next session's start and still link (as a guess)."""

_STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?Z"
_ARCHIVE = re.compile(rf"^(?P<sid>.+?)\.jsonl\.(?P<what>reset|deleted|bak)\.(?P<ts>{_STAMP})$")
_CHECKPOINT = re.compile(r"^(?P<sid>.+)\.checkpoint\.[0-9a-fA-F-]{36}\.jsonl$")
_TRAJECTORY = re.compile(r"^(?P<sid>.+)\.trajectory\.jsonl$")
_POINTER = re.compile(r"^(?P<sid>.+)\.trajectory-path\.json$")
_IMPORTED_TRAJECTORY = re.compile(r"^(?P<slug>.+)\.(?P<sid>[^.]+)\.trajectory\.jsonl\.imported-\d+(?:\.\d+)?$")
"""A trajectory OpenClaw 2026.9.5's ``doctor --fix`` moved into ``session-sqlite-import-archive/``:
``<key slug or archive-tier>.<sid>.trajectory.jsonl.imported-<ms>[.<n>]``, content unchanged."""
_PLAIN = re.compile(r"^(?P<sid>.+?)\.jsonl$")
_STAMP_PARTS = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(\.\d+)?Z$")
_HEAD_BYTES = 1 << 20
"""How much of a file's start is read for its header or a trajectory's first record."""

RECORDED, MATCHED, GUESS = "recorded", "matched", "guess"
_RANK = {RECORDED: 0, MATCHED: 1, GUESS: 2}


def stamp_ms(stamp: str) -> int | None:
    """``2026-11-30T08-24-46.695Z`` (an archive suffix) as epoch milliseconds."""
    m = _STAMP_PARTS.match(stamp)
    if m is None:
        return None
    ms = date_ms(f"{m[1]}T{m[2]}:{m[3]}:{m[4]}{m[5] or ''}Z")
    return int(ms) if ms is not None else None


@dataclass(frozen=True, slots=True)
class SessionFile:
    """One transcript file of the folder (live, unreferenced, or an archive)."""

    path: Path
    sid: str
    """The session id its name carries."""
    kind: str
    """``transcript``, ``reset-archive``, ``deleted-archive`` or ``bak-archive``."""
    stamp_ms: int | None
    """The ``<ts>`` of an archive's name."""
    header_ms: int | None
    """The header's ``timestamp``: when the session started."""
    header_id: str | None
    parent: str | None
    """The session id a header's ``parentSession`` names."""


@dataclass(slots=True)
class Owner:
    """The key a file belongs to, the rules that say so, and how sure they are."""

    key: str
    rules: list[str] = field(default_factory=list)
    confidence: str = RECORDED


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0")


def live_in_folder(folder: Path, entry: Mapping[str, Any]) -> Path | None:
    """The catalog entry's transcript inside ``folder``, never outside it.

    ``sessionFile`` is absolute in OpenClaw 2026.5 and names where the state dir was when it
    was written; after a move only its file name still means something here. Then
    ``<sessionId>.jsonl``. A file of another folder is not this state dir's, even if it exists.
    """
    names: list[str] = []
    written = entry.get("sessionFile")
    if isinstance(written, str) and written and "\0" not in written:
        names.append(PurePath(written).name)
    sid = entry.get("sessionId")
    if isinstance(sid, str):
        names.append(f"{sid}.jsonl")
    for name in names:
        path = folder / name
        if _plain_name(name) and path.is_file() and not path.is_symlink():
            return path
    return None


def _sessions_dir(state_dir: str | os.PathLike[str], agent: str) -> Path:
    return Path(os.path.abspath(state_dir)) / "agents" / agent / "sessions"


def session_file_target(entry: Mapping[str, Any] | None, sessions_dir: Path) -> Path | None:
    """The file an entry's ``sessionFile`` names (a relative one is taken in ``sessions_dir``), or ``None``."""
    value = (entry or {}).get("sessionFile")
    if not isinstance(value, str) or not value.strip():
        return None
    return Path(os.path.normpath(value if os.path.isabs(value) else sessions_dir / value))


@dataclass(frozen=True, slots=True)
class MovedSessionFile:
    """An entry whose ``sessionFile`` does not lead to its transcript, which is in the sessions folder."""

    recorded: str
    """The ``sessionFile`` as the catalog holds it."""
    actual: Path
    """Where the transcript is: ``<state dir>/agents/<id>/sessions/<name>``."""
    outside: bool
    """The recorded path is outside the state dir (the dir was moved or copied)."""
    missing: bool
    """Nothing is at the recorded path."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"recorded": self.recorded, "actual": str(self.actual), "outside": self.outside, "missing": self.missing}


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def moved_session_file(
    state_dir: str | os.PathLike[str], agent: str, entry: Mapping[str, Any] | None
) -> MovedSessionFile | None:
    """Whether ``entry``'s ``sessionFile`` misses its transcript, which is in the sessions folder.

    That is: it points outside ``state_dir``, or at nothing, while the transcript is in
    ``agents/<agent>/sessions/`` (``kurahi rescue`` lists it as ``moved``). Reads only
    (``lstat``), follows no link. The transcript looked for is the recorded file's name in the sessions folder, else
    ``<sessionId>.jsonl`` (what OpenClaw falls back to). ``None`` when the entry has no
    ``sessionFile``, when it leads to the transcript (inside the dir, present), or when no
    transcript is in the sessions folder either (then nothing was moved: it is gone).
    """
    sessions = _sessions_dir(state_dir, agent)
    recorded = (entry or {}).get("sessionFile")
    target = session_file_target(entry, sessions)
    if target is None or not isinstance(recorded, str):
        return None
    root = Path(os.path.abspath(state_dir))
    real_root = Path(os.path.realpath(root))
    outside = not (_inside(target, root) or _inside(target, real_root))
    missing = not os.path.lexists(target)
    if not (outside or missing):
        return None
    names = [target.name]
    sid = (entry or {}).get("sessionId")
    if isinstance(sid, str) and sid:
        names.append(f"{sid}.jsonl")
    for name in names:
        actual = sessions / name
        if actual != target and "/" not in name and _regular(actual):
            return MovedSessionFile(recorded, actual, outside, missing)
    return None


def _header(path: Path) -> tuple[int | None, str | None, str | None]:
    try:
        value = msgspec.json.decode(first_line(path, _HEAD_BYTES))
    except (msgspec.DecodeError, RecursionError):
        return None, None, None
    if not isinstance(value, dict) or value.get("type") != SESSION:
        return None, None, None
    ms = date_ms(value.get("timestamp"))
    hid = value.get("id") if isinstance(value.get("id"), str) else None
    parent = value.get("parentSession")
    psid: str | None = None
    if isinstance(parent, str) and parent and "\0" not in parent:
        # Pi writes the parent's file path; a bare session id is accepted too.
        name = PurePath(parent).name
        named = _ARCHIVE.match(name) or _PLAIN.match(name)
        psid = named["sid"] if named else name
    return (int(ms) if ms is not None else None), hid, psid


def _last_ms(path: Path) -> int | None:
    """The ``timestamp`` of a file's last complete line (read from its end)."""
    for line in reversed(last_lines(path, 8, _HEAD_BYTES)):
        try:
            value = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(value, dict) and (ms := date_ms(value.get("timestamp"))) is not None:
            return int(ms)
    return None


def read_trajectory_key(path: Path, sid: str) -> str | None:
    """The ``sessionKey`` OpenClaw recorded in ``<sid>.trajectory.jsonl`` (its first record)."""
    try:
        value = msgspec.json.decode(first_line(path, _HEAD_BYTES))
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(value, dict) or value.get("traceSchema") != "openclaw-trajectory":
        return None
    key = value.get("sessionKey")
    if value.get("sessionId") != sid or not isinstance(key, str) or not key:
        return None
    return key


def imported_trajectories(archive: Path) -> dict[str, tuple[Path, str]]:
    """``{sid: (file, session key)}`` of the trajectories OpenClaw's doctor moved into ``archive``."""
    out: dict[str, tuple[Path, str]] = {}
    for entry in sorted(_scan(archive), key=lambda e: e.name):
        found = _IMPORTED_TRAJECTORY.match(entry.name)
        if found and found["sid"] not in out and (key := read_trajectory_key(Path(entry.path), found["sid"])):
            out[found["sid"]] = (Path(entry.path), key)
    return out


class FolderIndex:
    """Every file of one sessions folder, read once: transcripts by session id, and artifacts."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files: list[SessionFile] = []
        self.artifacts: list[Path] = []
        """Trajectory, trajectory-pointer and compaction-checkpoint files: OpenClaw's, not transcripts."""
        self.trajectory_keys: dict[str, str] = {}
        self.trajectory_files: dict[str, str] = {}
        """Where each of ``trajectory_keys`` was read, as the evidence names it."""
        for entry in sorted(_scan(folder), key=lambda e: e.name):
            path = Path(entry.path)
            name = entry.name
            traj = _TRAJECTORY.match(name)
            if traj or _POINTER.match(name) or _CHECKPOINT.match(name):
                self.artifacts.append(path)
                if traj and (key := read_trajectory_key(path, traj["sid"])):
                    self.trajectory_keys[traj["sid"]] = key
                    self.trajectory_files[traj["sid"]] = name
                continue
            archive = _ARCHIVE.match(name)
            if archive:
                kind, sid, stamp = f"{archive['what']}-archive", archive["sid"], stamp_ms(archive["ts"])
            elif plain := _PLAIN.match(name):
                kind, sid, stamp = "transcript", plain["sid"], None
            else:
                continue
            header_ms, header_id, parent = _header(path)
            self.files.append(SessionFile(path, sid, kind, stamp, header_ms, header_id, parent))
        self.sid_of = {f.path: f.sid for f in self.files}
        # After an upgrade the doctor has moved the trajectories into its import archive, beside this
        # folder; one still in the folder wins.
        for sid, (path, key) in imported_trajectories(folder.parent / IMPORT_ARCHIVE).items():
            if sid not in self.trajectory_keys:
                self.trajectory_keys[sid] = key
                self.trajectory_files[sid] = f"{IMPORT_ARCHIVE}/{path.name}"

    def by_sid(self, sid: str) -> list[SessionFile]:
        """The files of one session id (its transcript and its archives)."""
        return [f for f in self.files if f.sid == sid]


def _scan(folder: Path) -> Iterable[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            # A link is not followed: a transcript is a regular file of this folder.
            return [e for e in it if e.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _add(owners: dict[Path, dict[str, Owner]], path: Path, key: str, rule: str, confidence: str) -> bool:
    """Record that ``key`` owns ``path`` by ``rule``; whether anything new was learned."""
    mine = owners.setdefault(path, {})
    owner = mine.get(key)
    if owner is None:
        mine[key] = Owner(key, [rule], confidence)
        return True
    if rule in owner.rules:
        return False
    owner.rules.append(rule)
    if _RANK[confidence] < _RANK[owner.confidence]:
        owner.confidence = confidence
    return True


def assign_owners(
    index: FolderIndex,
    catalog: Mapping[str, Mapping[str, Any]],
    anchors: Iterable[tuple[str, int | None]] = (),
    notes: list[str] | None = None,
) -> tuple[dict[Path, Owner], dict[str, Path]]:
    """Give every file of ``index`` to at most one key.

    Args:
        index: the folder, read once.
        catalog: ``sessions.json`` as ``{key: entry}`` (empty for an upgraded dir).
        anchors: ``(key, start ms)`` of sessions found elsewhere (the SQLite store), which a
            reset archive may precede.
        notes: where to say why a file went to no key.

    Returns:
        ``({path: owner}, {key: live path})``: files no evidence gives to exactly one key are
        left out of the first map.
    """
    notes = notes if notes is not None else []
    owners: dict[Path, dict[str, Owner]] = {}
    live: dict[str, Path] = {}
    # Recorded evidence: the catalog, then trajectories.
    for key, entry in catalog.items():
        path = live_in_folder(index.folder, entry)
        if path is not None:
            written = entry.get("sessionFile")
            named = isinstance(written, str) and PurePath(written).name == path.name
            _add(owners, path, key, "catalog sessionFile" if named else "catalog sessionId", RECORDED)
            live[key] = path
        for name, rule in (("sessionId", "catalog sessionId"), ("previousSessionId", "catalog previousSessionId")):
            sid = entry.get(name)
            for f in index.by_sid(sid) if isinstance(sid, str) else []:
                _add(owners, f.path, key, rule if f.kind == "transcript" else f"archive of {sid}", RECORDED)
    for sid, key in index.trajectory_keys.items():
        for f in index.by_sid(sid):
            _add(owners, f.path, key, f"trajectory sessionKey ({index.trajectory_files[sid]})", RECORDED)
    _follow(index, owners)
    # The reset-archive rule, newest archive first, so a chain of resets resolves from its live
    # end; then orphans that fit one key; again, while either ties a file (an archive whose
    # successor is an orphan of an idle rollover waits for that orphan's key).
    starts = _starts(index, catalog, anchors)
    while True:
        known = len(owners)
        said: list[str] = []
        for f in sorted(index.files, key=lambda f: f.stamp_ms or 0, reverse=True):
            if f.kind == "reset-archive" and f.path not in owners and f.stamp_ms is not None:
                _match_archive(f, index, owners, starts, said)
                _follow(index, owners)
        for f in index.files:
            if f.path not in owners and f.kind == "transcript":
                _fit_orphan(f, index, owners, starts, said)
        _follow(index, owners)
        if len(owners) == known:
            notes.extend(said)  # what is still unsettled, said once
            break
    chosen: dict[Path, Owner] = {}
    for path, by_key in owners.items():
        recorded = [o for o in by_key.values() if o.confidence == RECORDED]
        if len(by_key) == 1:
            chosen[path] = next(iter(by_key.values()))
        elif len(recorded) == 1:
            chosen[path] = recorded[0]  # what a runtime wrote outweighs any inference
        else:
            keys = ", ".join(sorted(by_key))
            notes.append(f"{path.name}: the evidence names several keys ({keys}); given to none")
    return chosen, live


def _follow(index: FolderIndex, owners: dict[Path, dict[str, Owner]]) -> None:
    """Spread ownership along recorded links: same session id, and a header's ``parentSession``."""
    changed = True
    while changed:
        changed = False
        for f in index.files:
            for key, owner in list(owners.get(f.path, {}).items()):
                conf = owner.confidence
                for other in index.by_sid(f.sid):
                    if other.path != f.path:
                        changed |= _add(owners, other.path, key, f"archive of {f.sid}", conf)
                if f.parent and f.parent != f.sid:
                    for other in index.by_sid(f.parent):
                        changed |= _add(owners, other.path, key, "header parentSession", conf)


def _starts(
    index: FolderIndex, catalog: Mapping[str, Mapping[str, Any]], anchors: Iterable[tuple[str, int | None]]
) -> list[tuple[int, Path | None, str | None]]:
    """Every session start the folder, catalog and store know: ``(ms, file or None, key or None)``."""
    out: list[tuple[int, Path | None, str | None]] = []
    for f in index.files:
        if f.header_ms is not None:
            out.append((f.header_ms, f.path, None))
    for key, entry in catalog.items():
        ms = entry.get("sessionStartedAt")
        if isinstance(ms, int) and not isinstance(ms, bool):
            out.append((ms, None, key))
    out.extend((ms, None, key) for key, ms in anchors if ms is not None)
    return out


def _key_of(start: tuple[int, Path | None, str | None], owners: dict[Path, dict[str, Owner]]) -> tuple[str | None, str]:
    """The key a session start belongs to (``None``: unknown or several) and its confidence."""
    _, path, key = start
    if key is not None:
        return key, RECORDED
    by_key = owners.get(path, {}) if path is not None else {}
    if len(by_key) != 1:
        return None, GUESS
    owner = next(iter(by_key.values()))
    return owner.key, owner.confidence


def _match_archive(
    f: SessionFile,
    index: FolderIndex,
    owners: dict[Path, dict[str, Owner]],
    starts: list[tuple[int, Path | None, str | None]],
    notes: list[str],
) -> None:
    assert f.stamp_ms is not None
    window = int(RESET_MATCH_WINDOW * 1000)
    near = [
        s
        for s in starts
        if s[1] != f.path
        and 0 <= s[0] - f.stamp_ms <= window
        and (f.header_ms is None or f.header_ms < s[0])
        and (s[1] is None or index.sid_of[s[1]] != f.sid)
    ]
    if not near:
        return
    lag = min(s[0] for s in near) - f.stamp_ms
    closest = [s for s in near if s[0] - f.stamp_ms == lag]
    keys = {_key_of(s, owners) for s in closest}
    named = {k for k, _ in keys if k is not None}
    if len(named) != 1 or any(k is None for k, _ in keys):
        if named:
            notes.append(
                f"{f.path.name}: its reset time is as close to sessions of {', '.join(sorted(named)) or 'no key'}"
                " and of unknown keys; given to none"
            )
        return
    key = named.pop()
    rule = "reset time = next header time" if lag == 0 else f"reset time {lag / 1000:g} s before next header"
    successor_conf = max((c for _, c in keys), key=lambda c: _RANK[c])
    confidence = MATCHED if lag <= SAME_INSTANT_MS else GUESS
    if _RANK[successor_conf] > _RANK[confidence]:
        confidence = successor_conf
    _add(owners, f.path, key, rule, confidence)


def _fit_orphan(
    f: SessionFile,
    index: FolderIndex,
    owners: dict[Path, dict[str, Owner]],
    starts: list[tuple[int, Path | None, str | None]],
    notes: list[str],
) -> None:
    """Give an unreferenced transcript (an idle or daily rollover's leftover) to the one key that fits.

    That key has a session starting after this one ended and none that started while this
    one was being written.
    """
    if f.header_ms is None or f.header_id != f.sid:
        return  # not a session file as OpenClaw names them: nothing to weigh
    begin, end = f.header_ms, max(f.header_ms, _last_ms(f.path) or f.header_ms)
    spans: dict[str, list[int]] = {}
    for s in starts:
        key, _ = _key_of(s, owners)
        if key is not None and s[1] != f.path:
            spans.setdefault(key, []).append(s[0])
    fits = []
    for key, times in spans.items():
        # A key talks in one session at a time: a session of it that started while this one
        # was still being written rules it out.
        if any(begin < t < end for t in times):
            continue
        later = [t for t in times if t >= end]
        if later:
            fits.append((min(later), key))
    if len(fits) == 1:
        _add(owners, f.path, fits[0][1], "unreferenced transcript before the key's next session (clocks only)", GUESS)
    elif len(fits) > 1:
        keys = ", ".join(sorted(k for _, k in fits))
        notes.append(f"{f.path.name}: an unreferenced transcript that could belong to any of {keys}; given to none")
