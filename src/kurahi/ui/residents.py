"""The residents and sessions pages' data: library calls over a running :class:`Gateway`.

Everything here is read-only and goes through the gateway's backend (file, memory or
PostgreSQL), except the workspace's identity and memory files, which live in the home on
every backend. Workspace files are looked at with ``lstat`` and a symlink is listed as one,
never followed, so nothing outside the home is read. Catalog values pass through the audit
chain's redaction (a value under a key that looks secret is ``[redacted]``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool

from kurahi.errors import KurahiError
from kurahi.gateway.http import HTTPError
from kurahi.gateway.service import Gateway
from kurahi.store.base import transcript_name
from kurahi.store.redact import redact

__all__ = ["resident", "residents", "session_lineage", "sessions"]

MAX_MEMORY_FILES = 200
"""Memory files listed per resident (the rest are counted)."""


def _file_row(path: Path, name: str) -> dict[str, Any] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return {"name": name, "size": None, "symlink": True}
    if not stat.S_ISREG(st.st_mode):
        return None
    return {"name": name, "size": st.st_size, "modifiedMs": st.st_mtime_ns // 1_000_000, "symlink": False}


def _memory_files(workspace: Path) -> tuple[list[dict[str, Any]], int]:
    rows: list[dict[str, Any]] = []
    top = _file_row(workspace / "MEMORY.md", "MEMORY.md")
    if top is not None:
        rows.append(top)
    folder = workspace / "memory"
    names: list[str] = []
    try:
        if stat.S_ISDIR(os.lstat(folder).st_mode):  # a symlinked memory/ is not entered
            names = sorted(n for n in os.listdir(folder) if n.endswith(".md") and not n.startswith("."))
    except OSError:
        names = []
    for n in names[:MAX_MEMORY_FILES]:
        row = _file_row(folder / n, f"memory/{n}")
        if row is not None:
            rows.append(row)
    return rows, max(0, len(names) - MAX_MEMORY_FILES)


async def _summary(gateway: Gateway, agent: str) -> dict[str, Any]:
    from kurahi.agent.providers.deterministic import identity_marker
    from kurahi.agent.workspace import system_prompt

    rt = await gateway.runtime(agent)
    marker = identity_marker(system_prompt(rt.paths.workspace))
    _, profile = rt.provider()
    return {
        "id": agent,
        "marker": None if marker == "no-marker" else marker,
        "model": {
            "profile": rt.model_name,
            "provider": profile.provider,
            "model": profile.model or rt.model_name,
            "contextWindow": profile.context_window,
        },
        "sessions": len(rt.catalog.keys()),
    }


async def residents(gateway: Gateway) -> list[dict[str, Any]]:
    """Every resident of the home: identity marker, model profile, number of sessions."""
    return [await _summary(gateway, agent) for agent in gateway.home.agents()]


async def resident(gateway: Gateway, agent: str) -> dict[str, Any]:
    """One resident: its summary, memory files, jobs with their states, and the home's devices.

    Devices are listed by id, name, scopes and revocation time; never a token or its hash.
    """
    rt = await gateway.runtime(agent)
    out = await _summary(gateway, agent)
    memory, more = _memory_files(rt.paths.workspace)
    out["memory"] = memory
    out["memoryNotListed"] = more
    out["jobs"] = [redact(j.to_dict()) for j in rt.jobs.jobs().values()]
    out["devices"] = [
        {"id": d.id, "name": d.name, "scopes": list(d.scopes), "revokedAt": d.revoked_at}
        for d in gateway.devices.devices()
    ]
    out["backend"] = gateway.backend.kind
    return out


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _row(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"key": key}
    for field, value in redact(dict(entry)).items():
        if _scalar(value):
            row[field] = value
    row["transcript"] = transcript_name(entry)
    return row


async def sessions(gateway: Gateway, agent: str) -> list[dict[str, Any]]:
    """The agent's catalog: one row per session key with its status, clocks and compactions."""
    rt = await gateway.runtime(agent)
    rows = [_row(k, dict(e)) for k, e in rt.catalog.items()]
    rows.sort(key=lambda r: -_number(r.get("updatedAt")))
    return rows


async def session_lineage(gateway: Gateway, agent: str, key: str) -> dict[str, Any]:
    """What ``lineage find`` knows of ``key``: its pieces across resets and the boundaries between.

    On the file backend this is :func:`kurahi.lineage.find.find_lineage` over the home. Other
    backends hold no files to search: the chain is followed through the stored transcripts'
    headers (``parentSession``) and the catalog's ``previousSessionId``.

    Raises:
        HTTPError: 404 for an unknown key.
    """
    rt = await gateway.runtime(agent)
    entry = rt.catalog.get(key)
    if entry is None:
        raise HTTPError(404, "unknown_session", f"no session with key {key!r}")
    if gateway.backend.directory is not None:  # the home's files: find_lineage reads them
        from kurahi.lineage.find import find_lineage

        # It reads and measures every piece: off the event loop, so other requests go on.
        found = (await run_in_threadpool(find_lineage, gateway.home.root, agent=agent, key=key)).to_dict()
        home = str(gateway.home.root)
        for piece in found.get(
            "pieces", []
        ):  # paths relative to the home: where it is on disk is no business of a page
            for field in ("source", "dbPath"):
                value = piece.get(field)
                if isinstance(value, str) and value.startswith(home + os.sep):
                    piece[field] = value[len(home) + 1 :]
        found.pop("stateDir", None)
        return {"method": "lineage find", **found}
    return {"method": "stored headers", "key": key, **await run_in_threadpool(_chain, rt, dict(entry))}


def _chain(rt: Any, entry: dict[str, Any]) -> dict[str, Any]:
    names = set(rt.store.transcripts.names())
    pieces: list[dict[str, Any]] = []
    seen: set[str] = set()
    name = transcript_name(entry)
    previous = entry.get("previousSessionId")
    while name and name in names and name not in seen and len(pieces) < 64:
        seen.add(name)
        try:
            t = rt.store.transcripts.read(name)
        except KurahiError as exc:
            pieces.append({"source": name, "error": str(exc)})
            break
        pieces.append(
            {
                "source": name,
                "sessionId": t.session_id,
                "kind": "live" if not pieces else "earlier",
                "entryCount": len(t),
            }
        )
        parent = t.header.get("parentSession")
        candidate = None
        if isinstance(parent, str) and parent:
            candidate = os.path.basename(parent)
        elif isinstance(previous, str) and previous:
            candidate = f"{previous}.jsonl"
        previous = None
        name = candidate
    pieces.reverse()
    return {"pieces": pieces, "boundaries": [], "notes": []}
