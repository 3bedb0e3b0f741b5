"""The checks every activation makes of a candidate, whatever the target, and its projection.

A plan copies the candidate into the package first and checks the copy (so what was
checked is what will be installed): a session header with an id usable as a file name,
Pi v3 or later, no malformed lines, a path without cycles whose root has no dangling
parent, and a projection on which the fast and the reference walk agree and every
asked-for marker is present, and, for an OpenClaw state dir, sent by the runtime that will
load it under its window (:meth:`~kurahi.runtimes.base.Runtime.loading_view`). The validator after apply compares the
live session's projection with the planned one (:func:`differences`).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from kurahi.errors import ActivationError, CandidateError, NotASessionError, TreeError
from kurahi.js.values import MISSING
from kurahi.lifecycle.activation.package import Projection, write_package_file

if TYPE_CHECKING:
    from kurahi.lineage.check import CheckReport

__all__ = [
    "CheckedCandidate",
    "check_candidate",
    "differences",
    "project",
    "project_bytes",
    "projection_dict",
]

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


class CheckedCandidate(NamedTuple):
    """What :func:`check_candidate` found."""

    session_id: str
    """The header's id: the session the candidate becomes."""
    compactions: int
    """Compactions on its canonical path."""
    projection: Projection
    """Its Pi-identical projection, every marker found."""


def check_candidate(
    copy: Path, shown: Path, markers: Sequence[str], *, runtime: str | None = None, window: int | None = None
) -> CheckedCandidate:
    """The checks every activation makes of a candidate, whatever the store (files or SQLite).

    ``copy`` is the package's copy (the file that is checked is the file that gets installed);
    ``shown`` is the path the user gave, named in errors. ``runtime`` and ``window``
    (:meth:`~kurahi.runtimes.base.Runtime.loading_view`): every marker must be in what that runtime sends.

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


def project_bytes(data: bytes, markers: Sequence[str]) -> Projection:
    """:func:`project` of a transcript's bytes (read from a store), through a private temporary file."""
    with tempfile.TemporaryDirectory(prefix="kurahi-validate-") as tmp:
        seen = Path(tmp) / "live.jsonl"
        write_package_file(seen, data)
        return project(seen, markers)


def projection_dict(p: Projection) -> dict[str, Any]:
    """JSON-ready form of a projection."""
    return {
        "messages": p.messages,
        "sha256": p.sha256,
        "markersFound": p.markers_found,
        "markersMissing": p.markers_missing,
    }
