"""Kurahi: keep a long-lived AI agent the same agent across every boundary, and prove it.

The package is a house of rooms, each a subpackage, lowest first: ``js``, ``fs``, ``pi``,
``context``, ``store``, ``locations``, ``runtimes``, ``testing``, ``lineage``, ``lifecycle``,
``agent``, ``resident``, ``gateway``, ``continuity``, ``doctor``, ``ui``, ``mcp_server``, ``cli``. A module imports only
from its own room and the rooms before it; :mod:`kurahi._rooms` says what each holds, and
``tests/test_layers.py`` holds every import to it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
