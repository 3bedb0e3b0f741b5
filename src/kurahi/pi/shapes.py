"""What the projection reads of an entry, as typing Protocols.

Kept apart from :mod:`kurahi.context.project` and :mod:`kurahi.pi.effective`, which
import it only for type checking (and on first use of the names they re-export): a
``Protocol`` needs ``typing`` at run time, which costs a fresh process about 8 ms.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["PathEntry", "PathLike"]


class PathLike(Protocol):
    """What :mod:`kurahi.pi.effective` reads of an entry: its type and id up front, its JSON on demand."""

    @property
    def type(self) -> Any:
        """The entry type (``MISSING`` when absent)."""

    @property
    def id(self) -> Any:
        """The entry id (``MISSING`` when absent)."""

    @property
    def data(self) -> dict[str, Any]:
        """The full entry."""


class PathEntry(Protocol):
    """What projection needs from an entry: its type and id up front, its JSON on demand."""

    @property
    def type(self) -> Any:
        """The entry type (``MISSING`` when absent)."""

    @property
    def id(self) -> Any:
        """The entry id (``MISSING`` when absent)."""

    @property
    def line(self) -> int:
        """Line number, for warnings."""

    @property
    def data(self) -> dict[str, Any]:
        """The full entry."""
