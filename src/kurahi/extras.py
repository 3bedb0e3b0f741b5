"""The optional extras and what each one brings: asked before a feature that needs one is used.

The core (store, context, lineage, lifecycle and their commands) needs none of them. A
command that does (``gateway run``, ``chat``, ``mcp``, a profile of a real provider) asks
:func:`require` first, so a missing package is one line naming the extra to install, not
an ``ImportError`` traceback from deep inside the server.
"""

from __future__ import annotations

import importlib.util

from kurahi.errors import MissingExtraError

__all__ = ["EXTRAS", "missing", "require"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "gateway": ("fastapi", "uvicorn", "httpx"),
    "providers": ("openai", "anthropic"),
    "postgres": ("psycopg", "psycopg_pool"),
    "mcp": ("mcp",),
}
"""Extra name -> the top-level modules it installs that Kurahi imports."""


def missing(extra: str, modules: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The modules of ``extra`` (or just ``modules`` of it) that cannot be imported here."""
    wanted = modules if modules is not None else EXTRAS[extra]
    out = []
    for name in wanted:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a broken or half-removed install counts as absent
            found = False
        if not found:
            out.append(name)
    return tuple(out)


def require(extra: str, what: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise :class:`MissingExtraError` unless ``extra`` (or ``modules`` of it) is importable.

    Args:
        extra: a key of :data:`EXTRAS`.
        what: what needs it, for the message (``kurahi gateway run``).
        modules: only these modules of the extra (a provider needs only its own SDK).
    """
    absent = missing(extra, modules)
    if absent:
        raise MissingExtraError(
            f"{what} needs the {extra} extra ({', '.join(absent)} not installed): pip install 'kurahi[{extra}]'",
            extra=extra,
            modules=absent,
        )
