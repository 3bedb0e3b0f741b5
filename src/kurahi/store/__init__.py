"""The `store` room: transcript files (Pi v3 JSONL trees), the catalog, durable append, locks."""

from __future__ import annotations

from kurahi.store.scan import ScanWarning
from kurahi.store.transcript import LEAF_MARKER_TYPE, Entry, Transcript, TreeNode

__all__ = ["LEAF_MARKER_TYPE", "Entry", "ScanWarning", "Transcript", "TreeNode"]
