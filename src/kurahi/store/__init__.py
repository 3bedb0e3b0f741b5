"""The `store` room: transcript files (Pi v3 JSONL trees), the catalog, durable append, locks."""

from __future__ import annotations

from kurahi._lazy import lazy_getattr

TYPE_CHECKING = False  # not from typing: importing it costs ~8 ms a process that needs one name pays

if TYPE_CHECKING:
    from kurahi.store.catalog import Catalog, find_catalogs
    from kurahi.store.fsio import FsyncPolicy
    from kurahi.store.locks import FileLock
    from kurahi.store.repair import RepairReport, repair_torn_tail
    from kurahi.store.scan import ScanWarning
    from kurahi.store.session import Session
    from kurahi.store.stats import transcript_stats
    from kurahi.store.transcript import Entry, Transcript, TreeNode
    from kurahi.store.vocab import LEAF_MARKER_TYPE

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "Catalog": "kurahi.store.catalog",
    "Entry": "kurahi.store.transcript",
    "FileLock": "kurahi.store.locks",
    "FsyncPolicy": "kurahi.store.fsio",
    "LEAF_MARKER_TYPE": "kurahi.store.vocab",
    "RepairReport": "kurahi.store.repair",
    "ScanWarning": "kurahi.store.scan",
    "Session": "kurahi.store.session",
    "Transcript": "kurahi.store.transcript",
    "TreeNode": "kurahi.store.transcript",
    "find_catalogs": "kurahi.store.catalog",
    "repair_torn_tail": "kurahi.store.repair",
    "transcript_stats": "kurahi.store.stats",
}

__all__ = [
    "LEAF_MARKER_TYPE",
    "Catalog",
    "Entry",
    "FileLock",
    "FsyncPolicy",
    "RepairReport",
    "ScanWarning",
    "Session",
    "Transcript",
    "TreeNode",
    "find_catalogs",
    "repair_torn_tail",
    "transcript_stats",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
