"""Planning an activation: check the candidate, decide the new state, write the package.

:func:`plan_activation` only reads the live state. It copies the candidate into the package
first and checks the copy (so what was checked is what will be installed): a session header
with an id usable as a file name, Pi v3 or later, no malformed lines, a path without cycles
whose root has no dangling parent, and a projection on which the fast and the reference walk
agree and every asked-for marker is present, and, for an OpenClaw state dir, sent by the
runtime that will load it under its window (:func:`target_runtime`).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kurahi import __version__
from kurahi.errors import ActivationError, CandidateError, NotASessionError, PreconditionError, TreeError
from kurahi.js.jcs import sha256_hex
from kurahi.js.values import MISSING
from kurahi.lifecycle.activation_package import (
    ABSENT,
    PACKAGE_VERSION,
    FileState,
    Package,
    Plan,
    Preconditions,
    Projection,
    copy_durably,
    discard_staging,
    entry_sha256,
    now_iso,
    write_package_file,
)
from kurahi.store.base import AgentStore, Backend, transcript_name
from kurahi.store.catalog import find_catalogs, validate_key
from kurahi.store.catalog_format import validate_agent_id
from kurahi.store.file_backend import FileBackend

if TYPE_CHECKING:
    from kurahi.lineage.check import CheckReport

__all__ = [
    "TERMINAL_RUN_FIELDS",
    "CheckedCandidate",
    "check_candidate",
    "differences",
    "new_entry",
    "plan_activation",
    "project",
    "projection_dict",
]

TERMINAL_RUN_FIELDS = ("status", "endedAt", "abortedLastRun", "runtimeMs")
"""Catalog fields that describe how the previous run ended; the new entry does not inherit them."""

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


# -- projection --------------------------------------------------------------------------------


def project(path: str | os.PathLike[str], markers: Sequence[str] = ()) -> Projection:
    """What a transcript projects (Pi-identical), as the facts the validator compares.

    Raises:
        ActivationError: the fast and the reference projection disagree.
        CheckError: a version-1/2 session (Pi rewrites it on open; check compares version 3).
        NotASessionError, TranscriptReadError, ParentCycleError: the file cannot be projected.
    """
    return _projection(_checked(path, markers))


def _checked(
    path: str | os.PathLike[str], markers: Sequence[str], runtime: str | None = None, window: int | None = None
) -> CheckReport:
    from kurahi.lineage.check import check

    rep = check(path, markers=markers, runtime=runtime, window=window)
    if not rep.projections_agree:
        raise ActivationError(
            f"{path}: the fast and the reference projection disagree ({rep.messages} vs "
            f"{rep.reference_messages} messages); refusing to activate what cannot be predicted"
        )
    return rep


def _projection(rep: CheckReport) -> Projection:
    found = [m.marker for m in rep.markers if m.index is not None]
    missing = [m.marker for m in rep.markers if m.index is None]
    return Projection(rep.messages, rep.fast_sha256, found, missing, rep.compaction_id)


def differences(planned: Projection, live: Projection) -> list[str]:
    """What the validator reports: one line per fact on which the live projection differs."""
    out = []
    if planned.messages != live.messages:
        out.append(f"message count: planned {planned.messages}, live {live.messages}")
    if planned.sha256 != live.sha256:
        out.append(f"messages sha256: planned {planned.sha256}, live {live.sha256}")
    out += [
        f"marker {m!r} is missing from the live context" for m in planned.markers_found if m in live.markers_missing
    ]
    return out


# -- plan ----------------------------------------------------------------------------------------


def plan_activation(
    home: str | os.PathLike[str],
    agent: str,
    key: str,
    candidate: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    markers: Sequence[str] = (),
    backend: Backend | None = None,
) -> Package:
    """Check ``candidate`` and write an activation package to ``out``; the live state is only read.

    Args:
        home: the state directory (a Kurahi home, or an OpenClaw state directory).
        agent: the agent id.
        key: the session key whose entry the activation rewrites.
        candidate: the candidate transcript.
        out: the package directory to write (new or empty).
        markers: text that must be in the effective context.
        backend: where the sessions live when not in ``home``'s files (a database); the
            package is then bound to it as well as to the home.

    Raises:
        CandidateError: not a session, a v1/v2 file, malformed lines, a parent cycle, a path
            whose root names a missing parent, a header id unusable as a file name, a missing marker.
        TranscriptReadError: the candidate cannot be read.
        PreconditionError: the target exists with other bytes (it is never overwritten).
        CatalogError: the agent has no sessions directory, or the catalog is corrupt.
        UsageError: ``out`` exists and is not empty.
    """
    root = Path(home).resolve()
    validate_agent_id(agent)  # before the id names any path
    validate_key(key)
    bound: str | None = None
    sessions_dir: Path | None = None
    if backend is None or backend.kind == "file":
        if _sqlite_era(root, agent):
            from kurahi.lifecycle.openclaw_sqlite_activation import plan_sqlite

            return plan_sqlite(root, agent, key, Path(candidate), out, markers)
        from kurahi.fs.no_links import refuse_links

        refuse_links(root, f"agents/{agent}/sessions/sessions.json")  # nothing written through a link
        find_catalogs(root, agent)  # the agent's sessions directory must exist
        store: AgentStore = FileBackend(root).agent(agent)
        sessions_dir = root / "agents" / agent / "sessions"
    else:
        store, bound = backend.agent(agent), backend.describe()
    staging = Package.staging_dir(out)
    try:
        cand = staging / "candidate.jsonl"
        cand_sha = copy_durably(Path(candidate), cand)
        runtime, window = target_runtime(root, agent)
        session_id, compactions, projection = check_candidate(
            cand, Path(candidate), markers, runtime=runtime, window=window
        )
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
        plan = Plan(
            version=PACKAGE_VERSION,
            id=os.urandom(8).hex(),
            created_at=now_iso(),
            tool=f"kurahi {__version__}",
            home=str(root),
            agent=agent,
            key=key,
            sessions_dir=f"agents/{agent}/sessions",
            candidate_session_id=session_id,
            target_file=target_name,
            replaces_live=replaces_live,
            installs=target_sha != cand_sha,
            compaction_count=compactions,
            markers=list(markers),
            preconditions=Preconditions(live, entry_sha256(old_entry), cand_sha, FileState(target_name, target_sha)),
            old_entry=old_entry,
            new_entry=new_entry(old_entry, session_id, target_name, compactions, sessions_dir=sessions_dir),
            projection=projection,
            old_catalog_sha256=old_catalog_sha,
            backend=bound,
        )
        return Package.write(out, plan, staging)
    except BaseException:
        discard_staging(staging)
        raise


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


def _sqlite_era(root: Path, agent: str) -> bool:
    """Whether ``root`` is an OpenClaw 2026.9 state dir for ``agent``.

    That is: the agent's SQLite store, and no ``sessions.json`` (an upgraded dir keeps
    leftover archives in ``sessions/``, but no catalog).
    """
    agent_dir = root / "agents" / agent
    return (agent_dir / "agent" / "openclaw-agent.sqlite").is_file() and not (
        agent_dir / "sessions" / "sessions.json"
    ).exists()


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
    name the old place, :mod:`~kurahi.lifecycle.activation_paths`); without it, the old
    path's folder.
    """
    from kurahi.lifecycle.activation_paths import session_file_for

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


class CheckedCandidate(NamedTuple):
    """What :func:`check_candidate` found."""

    session_id: str
    """The header's id: the session the candidate becomes."""
    compactions: int
    """Compactions on its canonical path."""
    projection: Projection
    """Its Pi-identical projection, every marker found."""


def target_runtime(home: Path, agent: str) -> tuple[str | None, int | None]:
    """The runtime that will load an activated session of ``home`` and its window.

    An OpenClaw state dir: ``openclaw-2026.9`` with a SQLite store, else ``openclaw-2026.5``,
    and the window its ``openclaw.json`` gives the agent's model (else the default). A Kurahi
    home: ``(None, None)``, Pi's projection, as before.

    Raises:
        UsageError: an ``openclaw.json`` that is not a JSON object.
    """
    from kurahi.lineage.runtime_view import DEFAULT_CONTEXT_WINDOW, openclaw_context_window

    sqlite = _sqlite_era(home, agent)
    if not sqlite and not (home / "openclaw.json").is_file():
        return None, None
    runtime = "openclaw-2026.9" if sqlite else "openclaw-2026.5"
    found = openclaw_context_window(home, agent) if (home / "openclaw.json").is_file() else None
    return runtime, found[0] if found is not None else DEFAULT_CONTEXT_WINDOW


def check_candidate(
    copy: Path, shown: Path, markers: Sequence[str], *, runtime: str | None = None, window: int | None = None
) -> CheckedCandidate:
    """The checks every activation makes of a candidate, whatever the store (files or SQLite).

    ``copy`` is the package's copy (the file that is checked is the file that gets installed);
    ``shown`` is the path the user gave, named in errors. ``runtime`` and ``window``
    (:func:`target_runtime`): every marker must be in what that runtime sends.

    Raises:
        CandidateError: see ``docs/lifecycle.md`` (1. Plan) for each reason.
    """
    session_id, compactions = _check_transcript(copy, shown)
    return CheckedCandidate(session_id, compactions, _planned_projection(copy, shown, markers, runtime, window))


def _check_transcript(copy: Path, shown: Path) -> tuple[str, int]:
    from kurahi.lineage.path import canonical_path
    from kurahi.pi.transcript import Transcript

    try:
        with Transcript.open(copy) as t:
            if t.migrated_from is not None or t.version is MISSING:
                raise CandidateError("a version-1/2 session: Pi would rewrite it on open; migrate it first", path=shown)
            if t.warnings:
                where = "; ".join(f"line {w.line}: {w.message}" for w in t.warnings[:3])
                raise CandidateError(f"{len(t.warnings)} malformed line(s) ({where})", path=shown)
            session_id = t.session_id
            if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
                raise CandidateError(f"header id {session_id!r} cannot name a session file", path=shown)
            cp = canonical_path(t, branches=False)
            if cp.entries:
                root = cp.entries[0]
                if root.parent_id not in (None, MISSING, ""):
                    raise CandidateError(
                        f"broken path: entry {root.id!r} (line {root.line}) names parent {root.parent_id!r}, "
                        "which is not in the file, so everything before it would be lost",
                        path=shown,
                    )
            return session_id, len(cp.compactions)
    except (NotASessionError, TreeError) as exc:
        raise CandidateError(f"not a usable session: {exc.detail}", path=shown) from exc


def _planned_projection(
    copy: Path, shown: Path, markers: Sequence[str], runtime: str | None, window: int | None
) -> Projection:
    try:
        rep = _checked(copy, markers, runtime, window)
    except ActivationError as exc:
        raise CandidateError(str(exc), path=shown) from exc
    if rep.refused:
        # A provider would refuse the next request: activating it would brick the session (issue 32).
        why = "; ".join(
            f"{f['code']} at entry {f['entryId']} (refused by {', '.join(f['refusedBy'])})" for f in rep.refused
        )
        raise CandidateError(
            f"a provider would refuse its next request: {why}; mend it with `kurahi session doctor --fix`", path=shown
        )
    projection = _projection(rep)  # the facts the validator compares live: Pi's, whatever the window
    if projection.markers_missing:
        raise CandidateError(f"markers missing from the effective context: {projection.markers_missing}", path=shown)
    if runtime is not None:
        # A plan never promises what the runtime will not send (issue 28).
        unsent = {m.marker: rep.not_sent(m) or f"not in {runtime}'s view" for m in rep.markers if not m.sent}
        unsent |= {m.marker: f"not in {runtime}'s view" for m in rep.markers if rep.view_index(m) is None}
        if unsent:
            why = "; ".join(f"{k!r}: {v}" for k, v in unsent.items())
            raise CandidateError(f"markers {runtime} will not send: {why}", path=shown)
    return projection


def _sha_or_absent(store: AgentStore, name: str) -> str:
    return store.transcripts.sha256(name) or ABSENT


def projection_dict(p: Projection) -> dict[str, Any]:
    """JSON-ready form of a projection."""
    return {
        "messages": p.messages,
        "sha256": p.sha256,
        "markersFound": p.markers_found,
        "markersMissing": p.markers_missing,
    }
