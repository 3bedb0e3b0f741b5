"""Every view Kurahi knows, by name: what ``lineage check --runtime`` and the reports call them."""

from __future__ import annotations

from kurahi.errors import UsageError
from kurahi.runtimes.base import View
from kurahi.runtimes.openclaw.versions import VERSIONS as OPENCLAW
from kurahi.runtimes.pi.facts import VIEW as PI

__all__ = ["NAMES", "VIEWS", "reset_view", "view", "whole_path_views"]

VIEWS: dict[str, View] = {v.name: v for v in (PI, *(release.view for release in OPENCLAW))}
"""Each view by its name."""
NAMES: tuple[str, ...] = tuple(VIEWS)
"""Their names, in the order reports list them."""


def view(name: str) -> View:
    """The view called ``name``.

    Raises:
        UsageError: no view has that name.
    """
    found = VIEWS.get(name)
    if found is None:
        raise UsageError(f"unknown runtime {name!r}; known: {', '.join(NAMES)}")
    return found


def whole_path_views() -> list[str]:
    """The views that send a session's whole path (one projection serves them all)."""
    return [v.name for v in VIEWS.values() if not v.after_last_reset]


def reset_view() -> str:
    """The view that sends only what follows the last reset entry."""
    return next(v.name for v in VIEWS.values() if v.after_last_reset)
