"""The `lineage` room: canonical paths, stitching A + B → C, checking what would be projected."""

from __future__ import annotations

from kurahi.lineage.canonical import BranchPoint, CanonicalPath, SideBranch, canonical_path

__all__ = ["BranchPoint", "CanonicalPath", "SideBranch", "canonical_path"]
