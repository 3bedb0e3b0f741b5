"""Small value classes for the modules a projection imports, without msgspec.

``msgspec`` costs a fresh process about 25 ms to import (it pulls in ``typing``,
``typing_extensions``, ``inspect``, ``decimal`` and ``uuid``); projecting a file needs
none of that. These classes give what the projection's result types used from
``msgspec.Struct``: equality field by field, a readable ``repr``, and for a frozen record
immutability and a hash.
"""

from __future__ import annotations

TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FrozenRecord", "Record"]


class Record:
    """Fields are the ``__slots__`` of the subclass; equal when of one type with equal fields."""

    __slots__ = ()

    def _names(self) -> tuple[str, ...]:
        names: tuple[str, ...] = type(self).__slots__
        return names

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._names())

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Record)
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a msgspec.Struct is unhashable

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._names())
        return f"{type(self).__name__}({inner})"


class FrozenRecord(Record):
    """A :class:`Record` whose fields cannot change after ``__init__``; hashable."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"immutable type: {type(self).__name__!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"immutable type: {type(self).__name__!r}")

    def _init(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._fields())
