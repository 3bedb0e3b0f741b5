"""The continuity manifest of an OpenClaw resident, taken read-only from its state dir.

OpenClaw keeps no manifest of its own, so Kurahi takes one as an observer: the same format as
a Kurahi manifest (:mod:`kurahi.continuity.manifest`: hash-chained entries, an Ed25519
signature over the root), signed with **Kurahi's observer key**, a key of Kurahi's own in
``<KOLO_HOME>/identity/continuity-observer.json`` (``~/.kolo`` without ``KOLO_HOME``), never a
file in the observed state dir. Entries, kind by kind:

| kind | name | value |
|---|---|---|
| ``identity`` | each regular file at the top of the agent's workspace except ``MEMORY.md`` | ``{"sha256", "size"}`` |
| ``memory`` | ``MEMORY.md``, ``memory/<name>.md`` | ``{"sha256", "size"}`` |
| ``role`` | ``agent`` | the agent's entry in ``agents.list`` (``{}`` without one), without ``model`` |
| ``role`` | ``defaults`` | ``agents.defaults`` without ``model`` |
| ``role`` | ``gateway`` | ``gateway.bind`` and ``gateway.auth.mode`` |
| ``role`` | ``tools`` | the top-level ``tools`` policy |
| ``model`` | ``primary`` | ``{"provider", "model", "profile": null}`` |
| ``session`` | session key | ``{"sessionId", "updatedAt"}`` |
| ``transcript`` | each transcript (below) | ``{"sha256", "size"}`` (SQLite: plus ``events``, ``resets``) |

Transcripts: in the JSON era each ``*.jsonl``, ``*.jsonl.reset.<ts>`` and
``*.jsonl.deleted.<ts>`` file of ``agents/<id>/sessions/``; in the SQLite era
``<sessionId>.jsonl`` for each session of the store (its events as exported), plus what an
upgrade left in ``sessions/``.

There is no ``audit`` entry (OpenClaw keeps no tamper-evident log) and no ``job`` entry.

**Read-only.** Files are opened ``O_RDONLY | O_NOFOLLOW`` (a symlink is skipped, never
followed out of the state dir), dot-files are skipped, the SQLite store is read through a
private snapshot (:mod:`kurahi.runtimes.openclaw.sqlite.snapshot`): not a byte of the state dir
changes, not even a ``-shm``. Every structured value goes through the audit chain's redaction,
so an API key or a gateway token in ``openclaw.json`` never reaches a manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from kurahi.continuity.manifest import Item, regular_files, seal_manifest
from kurahi.continuity.signing import SigningKey, load_key_file
from kurahi.errors import ContinuityError
from kurahi.fs.os_errors import os_error
from kurahi.locations.dirs import read_no_follow
from kurahi.resident.home import Home
from kurahi.runtimes.openclaw.config import OpenClawState, open_state
from kurahi.store.redact import redact

__all__ = [
    "OBSERVER_KEY",
    "build_openclaw_manifest",
    "observer_key",
]

OBSERVER_KEY = Path("identity") / "continuity-observer.json"
"""Kurahi's observer key, relative to Kurahi's home (``KOLO_HOME``, else ``~/.kolo``)."""

_O_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def observer_key(kurahi_home: str | os.PathLike[str] | None = None, *, create: bool = True) -> SigningKey:
    """Kurahi's observer key (created once on first use, 0600 in a 0700 directory)."""
    return load_key_file(Home.at(kurahi_home).root / OBSERVER_KEY, create=create)


def _digest(path: Path) -> dict[str, Any] | None:
    """``{"sha256", "size"}`` of a regular file, read without following a symlink; ``None`` if gone."""
    try:
        fd = os.open(path, _O_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(ContinuityError, "cannot read", exc, path=path) from exc
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        h, size = hashlib.sha256(), 0
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return {"sha256": h.hexdigest(), "size": size}


def _hashed(kind: str, pairs: list[tuple[str, Path]]) -> list[Item]:
    out: list[Item] = []
    for name, path in pairs:
        value = _digest(path)
        if value is not None:
            out.append((kind, name, value))
    return out


def _is_transcript(name: str) -> bool:
    return name.endswith(".jsonl") or ".jsonl.reset." in name or ".jsonl.deleted." in name


def _json_sessions(state: OpenClawState) -> tuple[list[Item], list[Item]]:
    sessions: list[Item] = []
    catalog = state.sessions_dir / "sessions.json"
    if catalog.is_file():
        try:
            doc = json.loads(read_no_follow(catalog))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ContinuityError(f"{catalog}: not JSON ({exc})") from exc
        for key, entry in sorted(doc.items() if isinstance(doc, dict) else []):
            e = entry if isinstance(entry, dict) else {}
            sessions.append(("session", key, {"sessionId": e.get("sessionId"), "updatedAt": e.get("updatedAt")}))
    names = regular_files(state.sessions_dir, _is_transcript)
    return sessions, _hashed("transcript", [(n, state.sessions_dir / n) for n in names])


def _sqlite_sessions(state: OpenClawState) -> tuple[list[Item], list[Item]]:
    from kurahi.runtimes.openclaw.sqlite.read import export_session_jsonl, list_sqlite_nodes, list_sqlite_sessions
    from kurahi.runtimes.openclaw.sqlite.snapshot import open_store_snapshot

    sessions: list[Item] = []
    transcripts: list[Item] = []
    with open_store_snapshot(state.sqlite_store) as snap:
        for node in list_sqlite_nodes(snap):
            updated = node.entry.get("updatedAt")
            sessions.append(("session", node.session_key, {"sessionId": node.current_session_id, "updatedAt": updated}))
        for s in sorted(list_sqlite_sessions(snap), key=lambda s: s.session_id):
            if s.event_count == 0:
                continue
            data = export_session_jsonl(snap, s.session_id)
            resets = sum(1 for line in data.splitlines() if b'"type":"reset"' in line.replace(b" ", b""))
            value = {
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
                "events": s.event_count,
                "resets": resets,
            }
            transcripts.append(("transcript", f"{s.session_id}.jsonl", value))
    return sessions, transcripts


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def collect_openclaw_entries(state: OpenClawState) -> list[Item]:
    """Every entry of the manifest, in manifest order (see the module docstring)."""
    ws = state.workspace
    identity = [(n, ws / n) for n in regular_files(ws, lambda n: n != "MEMORY.md")]
    memory = [(n, ws / n) for n in regular_files(ws, lambda n: n == "MEMORY.md")]
    memory += [(f"memory/{n}", ws / "memory" / n) for n in regular_files(ws / "memory", lambda n: n.endswith(".md"))]
    agent_value = {k: v for k, v in state.agent_entry().items() if k != "model"}
    defaults = {k: v for k, v in state.defaults().items() if k != "model"}
    gateway = _obj(state.config.get("gateway"))
    auth = _obj(gateway.get("auth"))
    tools = state.config.get("tools")
    role: list[Item] = [
        ("role", "agent", agent_value),
        ("role", "defaults", defaults),
        ("role", "gateway", {"bind": gateway.get("bind"), "authMode": auth.get("mode")}),
        ("role", "tools", tools if isinstance(tools, dict) else {}),
    ]
    if state.era == "sqlite":
        sessions, transcripts = _sqlite_sessions(state)
        # What an upgrade left in sessions/ (a reset archive the import did not take) is
        # part of the resident's past too.
        transcripts += _json_sessions(state)[1]
    else:
        sessions, transcripts = _json_sessions(state)
    items = [
        *_hashed("identity", identity),
        *_hashed("memory", sorted(memory)),
        *role,
        ("model", "primary", state.model()),
        *sessions,
        *sorted(transcripts, key=lambda i: i[1]),
    ]
    return [(kind, name, redact(value)) for kind, name, value in items]


def build_openclaw_manifest(
    state_dir: str | os.PathLike[str],
    agent: str = "main",
    *,
    key: SigningKey | None = None,
    version: str | None = None,
) -> dict[str, Any]:
    """The signed manifest of one OpenClaw resident; ``key`` defaults to Kurahi's observer key.

    Raises:
        UsageError: not an OpenClaw state dir (see :func:`open_state`).
        ContinuityError: a file could not be read.
        SqliteStoreError: the SQLite store cannot be read.
        SigningKeyError: the observer key cannot be used.
    """
    state = open_state(state_dir, agent, version)
    signer = key if key is not None else observer_key()
    return seal_manifest(agent, collect_openclaw_entries(state), key=signer)
