"""The cyclic collector paused while a large history is read into Python values."""

from __future__ import annotations

import gc

__all__ = ["paused"]


class paused:
    """``with paused():`` the collector does not run (it is enabled again after, if it was).

    Decoding 20,000 messages makes about a million containers, none of them garbage: every
    full pass the collector starts meanwhile walks all of them again (``lineage check`` spent
    more time collecting than checking). Nested uses are fine; only the outermost enables it.
    """

    __slots__ = ("_was",)

    def __enter__(self) -> None:
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was:
            gc.enable()
