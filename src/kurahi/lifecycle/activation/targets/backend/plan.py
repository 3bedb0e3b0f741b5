"""Planning an activation into a Kurahi backend: what the live state is, what the new state will be.

The plan records the preconditions (the key's live transcript, its catalog entry, where the
candidate goes and what is there now), the old and the new catalog entry, and saves what a
rollback needs into the package (the old ``sessions.json``; the old live transcript when
installing replaces it). The live state is only read.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from kurahi import __version__
from kurahi.errors import PreconditionError
from kurahi.js.jcs import sha256_hex
from kurahi.lifecycle.activation.package import (
    ABSENT,
    PACKAGE_VERSION,
    FileState,
    Plan,
    Preconditions,
    entry_sha256,
    now_iso,
    write_package_file,
)
from kurahi.lifecycle.activation.target import StagedCandidate
from kurahi.store.base import AgentStore, Backend, transcript_name
from kurahi.store.catalog import find_catalogs
from kurahi.store.open import default_backend

__all__ = ["TERMINAL_RUN_FIELDS", "BackendPlanner", "new_entry"]

TERMINAL_RUN_FIELDS = ("status", "endedAt", "abortedLastRun", "runtimeMs")
"""Catalog fields that describe how the previous run ended; the new entry does not inherit them."""


class BackendPlanner:
    """Plans for one agent's sessions in a backend (:class:`~kurahi.lifecycle.activation.target.Planner`).

    Args:
        root: the state directory (resolved).
        agent: the agent id (validated).
        store: the agent's stores.
        bound: the store's description when not the home's files (the package is bound to it).
        sessions_dir: the agent's sessions folder, for the files (``sessionFile`` paths).
    """

    def __init__(
        self, root: Path, agent: str, store: AgentStore, *, bound: str | None, sessions_dir: Path | None
    ) -> None:
        self.root, self.agent, self.store = root, agent, store
        self.bound, self.sessions_dir = bound, sessions_dir

    @classmethod
    def in_files(cls, root: Path, agent: str) -> BackendPlanner:
        """The home's own files.

        Raises:
            UnsafeFileError: a symlink on the way to ``sessions.json``.
            CatalogError: the agent has no sessions directory.
        """
        from kurahi.fs.no_links import refuse_links

        refuse_links(root, f"agents/{agent}/sessions/sessions.json")  # nothing written through a link
        find_catalogs(root, agent)  # the agent's sessions directory must exist
        store = default_backend(root).agent(agent)
        return cls(root, agent, store, bound=None, sessions_dir=root / "agents" / agent / "sessions")

    @classmethod
    def in_store(cls, root: Path, agent: str, backend: Backend) -> BackendPlanner:
        """A store that is not the home's files (a database)."""
        return cls(root, agent, backend.agent(agent), bound=backend.describe(), sessions_dir=None)

    def plan(self, candidate: StagedCandidate, staging: Path, key: str, markers: list[str]) -> Plan:
        """See :meth:`~kurahi.lifecycle.activation.target.Planner.plan`.

        Raises:
            PreconditionError: the target exists with other bytes (it is never overwritten),
                or replacing it would change another key's session too.
            CatalogError: the catalog is corrupt.
        """
        store, cand_sha = self.store, candidate.sha256
        session_id, compactions, projection = candidate.checked
        old_entry = store.catalog.get(key)
        live_name = transcript_name(old_entry)
        live = FileState(live_name, _sha_or_absent(store, live_name) if live_name else ABSENT)
        target_name = f"{session_id}.jsonl"
        target_sha = _sha_or_absent(store, target_name)
        replaces_live = target_name == live_name and target_sha not in (ABSENT, cand_sha)
        if target_sha not in (ABSENT, cand_sha) and not replaces_live:
            raise PreconditionError(
                f"{store.transcripts.locator(target_name)} exists with other bytes and is not the live transcript "
                f"of {key!r}; it is never overwritten",
                part="target",
                expected=f"{ABSENT} or {cand_sha}",
                actual=target_sha,
            )
        if replaces_live:
            _refuse_shared(store, key, target_name)
            _save(staging / "rollback" / "transcript.jsonl", store.transcripts.export(target_name))
        old_catalog_sha = ABSENT
        snapshot = store.catalog.snapshot()
        if snapshot is not None:
            old_catalog_sha = _save(staging / "rollback" / "sessions.json", snapshot)
        return Plan(
            version=PACKAGE_VERSION,
            id=os.urandom(8).hex(),
            created_at=now_iso(),
            tool=f"kurahi {__version__}",
            home=str(self.root),
            agent=self.agent,
            key=key,
            sessions_dir=f"agents/{self.agent}/sessions",
            candidate_session_id=session_id,
            target_file=target_name,
            replaces_live=replaces_live,
            installs=target_sha != cand_sha,
            compaction_count=compactions,
            markers=markers,
            preconditions=Preconditions(live, entry_sha256(old_entry), cand_sha, FileState(target_name, target_sha)),
            old_entry=old_entry,
            new_entry=new_entry(old_entry, session_id, target_name, compactions, sessions_dir=self.sessions_dir),
            projection=projection,
            old_catalog_sha256=old_catalog_sha,
            backend=self.bound,
        )


def _sha_or_absent(store: AgentStore, name: str) -> str:
    return store.transcripts.sha256(name) or ABSENT


def _refuse_shared(store: AgentStore, key: str, name: str) -> None:
    """Refuse to replace a transcript another key's entry also points at (its session would change too)."""
    sharing = sorted(k for k, e in store.catalog.items() if k != key and transcript_name(e) == name)
    if sharing:
        raise PreconditionError(
            f"{store.transcripts.locator(name)} is also the transcript of {', '.join(map(repr, sharing[:3]))}: "
            "replacing it would change that session too; give the candidate a new session id "
            "(`lineage stitch` does) so that it is installed beside it",
            part="target",
            expected=f"a transcript of {key!r} alone",
            actual=f"shared with {len(sharing)} other key(s)",
        )


def _save(path: Path, data: bytes) -> str:
    write_package_file(path, data)
    return sha256_hex(data)


def new_entry(
    old: dict[str, Any] | None,
    session_id: str,
    file_name: str,
    compactions: int,
    *,
    sessions_dir: Path | None = None,
) -> dict[str, Any]:
    """The catalog entry after activation.

    The old entry's fields are kept (in their order) except the terminal-run ones
    (:data:`TERMINAL_RUN_FIELDS`); ``sessionId``, ``sessionFile`` and ``compactionCount`` are
    set. ``sessionFile`` follows the old entry's style: an absolute old path gives an absolute
    path, anything else the bare file name. The absolute path is the file in ``sessions_dir``
    (the folder the state dir has now, wherever the old path pointed: a moved dir's entries
    name the old place, :mod:`~kurahi.lifecycle.activation.paths`); without it, the old
    path's folder.
    """
    from kurahi.lifecycle.activation.paths import session_file_for

    entry = {k: v for k, v in (old or {}).items() if k not in TERMINAL_RUN_FIELDS}
    old_file = (old or {}).get("sessionFile")
    entry["sessionId"] = session_id
    if sessions_dir is not None:
        entry["sessionFile"] = session_file_for(old_file, sessions_dir, file_name)
    elif isinstance(old_file, str) and os.path.isabs(old_file):
        entry["sessionFile"] = os.path.join(os.path.dirname(old_file), file_name)
    else:
        entry["sessionFile"] = file_name
    entry["compactionCount"] = compactions
    if old is None:
        entry["updatedAt"] = time.time_ns() // 1_000_000
    return entry
