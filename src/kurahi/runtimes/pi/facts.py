"""Pi's releases and the view it sends: the facts other rooms decide by."""

from __future__ import annotations

from kurahi.runtimes.base import View

__all__ = ["VERSIONS", "VIEW"]

VERSIONS = ("0.73.1", "1.6.0")
"""The Pi releases Kurahi's projection is checked against (``@mariozechner`` then ``@earendil-works``)."""

VIEW = View(
    name="pi",
    label="Pi",
    after_last_reset=False,  # Pi does not know reset entries: it keeps them out of the messages, cuts nothing
    overflow="compaction",
    empty_when_moved=False,
    request_runtimes=("pi-1.6", "pi-0.73"),
    fold="the runtime's own compaction folds them into a summary on its next turn (in Pi, `/compact` does it at once)",
)
"""Pi's projection of the whole path (a Kurahi home's runtime projects as Pi does)."""
