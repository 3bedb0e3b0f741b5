"""The `ui` room: a read-only web viewer of residents, sessions, trees, repairs and continuity reports.

It sits below every other room (it shows what they hold) and is installed on the gateway's
app as a plugin: ``kurahi gateway run`` serves it at ``/ui``. See ``docs/ui.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.ui.routes import install, make_plugin
    from kurahi.ui.tree import TreeIndex

_WHERE = {"install": "kurahi.ui.routes", "make_plugin": "kurahi.ui.routes", "TreeIndex": "kurahi.ui.tree"}

__all__ = ["TreeIndex", "install", "make_plugin"]

__getattr__ = lazy_getattr(__name__, _WHERE)
