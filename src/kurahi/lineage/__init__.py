"""The `lineage` room: canonical paths, stitching A + B → C, checking what would be sent, provenance.

What would be sent is both what a transcript projects and what a runtime really sends of it
under its window (:mod:`kurahi.runtimes.view`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.lineage.check import check
    from kurahi.lineage.elide import ElideReport, elide
    from kurahi.lineage.find import find_lineage
    from kurahi.lineage.path import BranchPoint, CanonicalPath, SideBranch, canonical_path
    from kurahi.lineage.provenance import ProvenanceReport, provenance
    from kurahi.lineage.stitch import stitch
    from kurahi.runtimes.view import RuntimeView, openclaw_context_window, runtime_view

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "BranchPoint": "kurahi.lineage.path",
    "CanonicalPath": "kurahi.lineage.path",
    "SideBranch": "kurahi.lineage.path",
    "canonical_path": "kurahi.lineage.path",
    "check": "kurahi.lineage.check",
    "ElideReport": "kurahi.lineage.elide",
    "elide": "kurahi.lineage.elide",
    "find_lineage": "kurahi.lineage.find",
    "ProvenanceReport": "kurahi.lineage.provenance",
    "provenance": "kurahi.lineage.provenance",
    "RuntimeView": "kurahi.runtimes.view",
    "openclaw_context_window": "kurahi.runtimes.view",
    "runtime_view": "kurahi.runtimes.view",
    "stitch": "kurahi.lineage.stitch",
}

__all__ = [
    "BranchPoint",
    "CanonicalPath",
    "ElideReport",
    "ProvenanceReport",
    "RuntimeView",
    "SideBranch",
    "canonical_path",
    "check",
    "elide",
    "find_lineage",
    "openclaw_context_window",
    "provenance",
    "runtime_view",
    "stitch",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
