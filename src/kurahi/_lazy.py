"""Package attributes loaded on first use (PEP 562), so `kurahi --help` imports little."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING; importing typing costs ~8 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``name`` from ``where[name]`` when first asked."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(module)  # importlib.import_module, without importing importlib (and warnings) first
        value = getattr(sys.modules[module], name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
