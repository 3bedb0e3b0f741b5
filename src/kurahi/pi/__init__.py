"""The Pi session format, read-only: a transcript's bytes as Pi's loader reads them.

Its tree, its vocabulary, its version migrations and what its entries mean. Where the bytes
are kept is the business of :mod:`kurahi.store`; how they are scanned, of :mod:`kurahi.pi.read`.
"""

from __future__ import annotations

from kurahi._lazy import lazy_getattr

TYPE_CHECKING = False  # not from typing: importing it costs ~8 ms a process that needs one name pays

if TYPE_CHECKING:
    from kurahi.pi.entry import Entry, TreeNode
    from kurahi.pi.read.scan import ScanWarning
    from kurahi.pi.stats import transcript_stats
    from kurahi.pi.transcript import Transcript
    from kurahi.pi.vocab import LEAF_MARKER_TYPE

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "Entry": "kurahi.pi.entry",
    "LEAF_MARKER_TYPE": "kurahi.pi.vocab",
    "ScanWarning": "kurahi.pi.read.scan",
    "Transcript": "kurahi.pi.transcript",
    "TreeNode": "kurahi.pi.entry",
    "transcript_stats": "kurahi.pi.stats",
}

__all__ = ["LEAF_MARKER_TYPE", "Entry", "ScanWarning", "Transcript", "TreeNode", "transcript_stats"]

__getattr__ = lazy_getattr(__name__, _WHERE)
