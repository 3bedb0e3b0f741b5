"""Where transcripts, catalogs, logs and the audit chain are kept, behind one interface.

:mod:`kurahi.store.base` is the interface the file, memory and PostgreSQL backends implement.
The writer (:class:`Session`: one writer per transcript, one line per entry, never deferred),
the session catalog, explicit repair of a torn tail, and copying between backends live here;
the Pi format itself (reading a transcript, its tree) is :mod:`kurahi.pi`, durable-file
helpers are :mod:`kurahi.fs`.
"""

from __future__ import annotations

from kurahi._lazy import lazy_getattr

TYPE_CHECKING = False  # not from typing: importing it costs ~8 ms a process that needs one name pays

if TYPE_CHECKING:
    from kurahi.store.catalog import Catalog, find_catalogs
    from kurahi.store.repair import RepairReport, repair_torn_tail
    from kurahi.store.session import Session

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "Catalog": "kurahi.store.catalog",
    "RepairReport": "kurahi.store.repair",
    "Session": "kurahi.store.session",
    "find_catalogs": "kurahi.store.catalog",
    "repair_torn_tail": "kurahi.store.repair",
}

__all__ = ["Catalog", "RepairReport", "Session", "find_catalogs", "repair_torn_tail"]


__getattr__ = lazy_getattr(__name__, _WHERE)
