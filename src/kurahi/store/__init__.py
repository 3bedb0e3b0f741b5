"""The `store` room: transcript files (Pi v3 JSONL trees), the catalog, durable append, locks."""

from __future__ import annotations

from kurahi.store.catalog import Catalog, find_catalogs
from kurahi.store.fsio import FsyncPolicy
from kurahi.store.locks import FileLock
from kurahi.store.repair import RepairReport, repair_torn_tail
from kurahi.store.scan import ScanWarning
from kurahi.store.session import Session
from kurahi.store.stats import transcript_stats
from kurahi.store.transcript import LEAF_MARKER_TYPE, Entry, Transcript, TreeNode

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
