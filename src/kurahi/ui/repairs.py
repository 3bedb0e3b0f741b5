"""Repairs for the viewer: activation packages, their stitched candidate beside its sources.

Packages live in the home as ``repairs/<name>/`` (what
``kurahi activate plan --out $KOLO_HOME/repairs/<name>`` writes). Each is opened with
:meth:`kurahi.lifecycle.activation.package.Package.open`, which re-hashes every file
against ``SHA256SUMS``: a package changed since it was planned is shown as tampered, not
read. The detail page reuses the lineage tools: ``lineage check`` on the candidate (both
projections, markers, the runtimes' views, token routes), ``lineage draw``'s columns (each
source's canonical path and the candidate's, runs folded, the re-parented edge marked,
abandoned branches counted), and the live state the package would change (the catalog entry
and the target file: ``old``, ``new``, ``used`` or ``other``, read from the store the package
was planned for, the gateway's own when it is a database) with the journal's phase.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from kurahi.errors import KurahiError, UsageError
from kurahi.store.redact import redact
from kurahi.ui.homefiles import list_folders

if TYPE_CHECKING:
    from kurahi.store.base import Backend

__all__ = ["list_repairs", "load_repair"]


def _open(home: Path, name: str) -> Any:
    from kurahi.lifecycle.activation.package import Package

    if name not in list_folders(home / "repairs"):
        raise FileNotFoundError(name)
    return Package.open(home / "repairs" / name)


def list_repairs(home: Path) -> list[dict[str, Any]]:
    """Every package: name, agent, key, when planned, or why it cannot be read."""
    rows = []
    for name in list_folders(home / "repairs"):
        try:
            plan = _open(home, name).plan
        except (KurahiError, FileNotFoundError) as exc:
            rows.append({"name": name, "error": str(exc) or type(exc).__name__})
            continue
        rows.append(
            {"name": name, "agent": plan.agent, "key": plan.key, "createdAt": plan.created_at, "markers": plan.markers}
        )
    return rows


def _source_file(home: Path, sessions: Path, source: dict[str, Any]) -> Path | None:
    """Where a stitch source is now: its recorded path when it is inside the home, else by session id."""
    candidates: list[Path] = []
    recorded = source.get("path")
    if isinstance(recorded, str) and recorded:
        p = Path(recorded)
        if p.is_absolute() and os.path.commonpath([str(p), str(home)]) == str(home):
            candidates.append(p)
        candidates.append(sessions / p.name)
    sid = source.get("sessionId")
    if isinstance(sid, str) and sid and "/" not in sid:
        candidates.append(sessions / f"{sid}.jsonl")
        with contextlib.suppress(OSError):  # no sessions folder: nothing more to look at
            candidates.extend(sorted(sessions / n for n in os.listdir(sessions) if n.startswith(f"{sid}.jsonl.")))
    for c in candidates:
        try:
            # The file and every folder from the home down to it must be real, not symlinks.
            rel = c.relative_to(home)
            here = home
            ok = True
            for part in rel.parts:
                here = here / part
                if stat.S_ISLNK(os.lstat(here).st_mode):
                    ok = False
                    break
            if ok and stat.S_ISREG(os.lstat(c).st_mode):
                return c
        except (OSError, ValueError):
            continue
    return None


def _column(col: Any, role: str) -> dict[str, Any]:
    from kurahi.lineage.draw import Node

    items = []
    for it in col.items:
        if isinstance(it, Node):
            items.append(
                {
                    "node": True,
                    "id": it.entry_id,
                    "line": it.line,
                    "kind": it.kind,
                    "flags": list(it.flags),
                    "detail": it.detail,
                    "markers": list(it.markers),
                    "stitched": it.stitched_from_parent,
                    "side": [{"first": s.first, "size": s.size} for s in it.side],
                }
            )
        else:
            items.append({"node": False, "count": it.count, "label": it.label, "compactions": it.compactions})
    return {
        "role": role,
        "file": os.path.basename(col.file),
        "sessionId": col.session_id,
        "entries": col.total_entries,
        "pathLength": col.path_length,
        "leafId": col.leaf_id,
        "compactions": col.compactions,
        "branchPoints": col.branch_points,
        "sideBranches": col.side_branches,
        "abandoned": col.abandoned,
        "stitchEdges": [{"child": e.child, "parent": e.parent, "onPath": e.on_path} for e in col.stitch_edges],
        "markerHits": dict(col.marker_hits),
        "items": items,
    }


def load_repair(home: Path, name: str, backend: Backend | None = None) -> dict[str, Any]:
    """One package: plan, live state, journal phase, the candidate's check and the columns.

    ``backend`` is the gateway's store: a package planned for a database is read there.

    Raises:
        FileNotFoundError: no package of that name.
    """
    from kurahi.lineage.check import check
    from kurahi.lineage.draw import draw_lineage
    from kurahi.pi.transcript import Transcript

    out: dict[str, Any] = {"name": name}
    try:
        pkg = _open(home, name)
    except KurahiError as exc:
        return {**out, "error": str(exc), "tampered": type(exc).__name__ == "PackageTamperedError"}
    plan = pkg.plan
    out["plan"] = redact(msgspec.to_builtins(plan))
    out["plan"].pop("home", None)  # an absolute path of this machine: not the page's business
    out["state"] = _state(pkg, home, backend)
    try:
        out["check"] = check(pkg.candidate, markers=plan.markers).to_dict()
        out["check"]["file"] = "candidate.jsonl"
    except KurahiError as exc:
        out["check"] = {"ok": False, "error": str(exc)}
    sessions = home / plan.sessions_dir
    files: list[Path] = []
    roles: list[str] = []
    missing: list[dict[str, Any]] = []
    try:
        with Transcript.open(pkg.candidate) as t:
            lineage = t.header.get("lineage")
    except KurahiError:
        lineage = None
    sources = lineage.get("sources") if isinstance(lineage, dict) else None
    for src in sources if isinstance(sources, list) else []:
        if not isinstance(src, dict):
            continue
        found = _source_file(home, sessions, src)
        if found is None:
            missing.append({"sessionId": src.get("sessionId"), "path": os.path.basename(str(src.get("path", "")))})
        else:
            files.append(found)
            roles.append("source")
    files.append(pkg.candidate)
    roles.append("candidate")
    try:
        drawing = draw_lineage(files, markers=plan.markers)
        out["columns"] = [_column(c, r) for c, r in zip(drawing.columns, roles, strict=True)]
    except KurahiError as exc:
        out["columns"] = []
        out["columnsError"] = str(exc)
    out["missingSources"] = missing
    return out


def _state(pkg: Any, home: Path, backend: Backend | None) -> dict[str, Any]:
    from kurahi.lifecycle.activation import journal_phase, live_state

    state: dict[str, Any] = {}
    try:
        state["phase"] = journal_phase(pkg.journal.records()).name
    except (KurahiError, OSError) as exc:
        state["phase"] = f"unreadable journal: {exc}"
    try:
        store = getattr(pkg.plan, "backend", None)
        if store is not None and (backend is None or backend.describe() != store):
            raise UsageError(f"planned for the store {store}, which this gateway does not serve")
        live = live_state(pkg, home, backend if store is not None else None)
        state["catalogEntry"] = str(live.entry_state())
        state["target"] = str(live.target_state())
    except (KurahiError, OSError) as exc:
        state["error"] = str(exc)
    return state
