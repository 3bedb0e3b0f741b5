"""Kurahi: keep a long-lived AI agent the same agent across every boundary, and prove it."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
