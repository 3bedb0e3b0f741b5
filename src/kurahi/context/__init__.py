"""The `context` room: projection of a leaf's path into model messages, identical to Pi."""

from __future__ import annotations

from kurahi.context.project import ProjectionWarning, SessionContext, build_context

__all__ = ["ProjectionWarning", "SessionContext", "build_context"]
