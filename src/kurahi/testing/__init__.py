"""Helpers for tests, demos and benchmarks.

Transcript builders, the storage backends' conformance suite, generated sessions of any size,
and a throwaway PostgreSQL.
"""

from __future__ import annotations

from kurahi._lazy import lazy_getattr

TYPE_CHECKING = False  # not from typing: importing it costs ~8 ms a process that needs one name pays

if TYPE_CHECKING:
    from kurahi.testing.builders import (
        BuildReport,
        assistant_message,
        build_session,
        random_text,
        tool_result,
        user_message,
    )
    from kurahi.testing.conformance import BackendConformance

_WHERE = {
    "BackendConformance": "kurahi.testing.conformance",
    "BuildReport": "kurahi.testing.builders",
    "assistant_message": "kurahi.testing.builders",
    "build_session": "kurahi.testing.builders",
    "random_text": "kurahi.testing.builders",
    "tool_result": "kurahi.testing.builders",
    "user_message": "kurahi.testing.builders",
}

__all__ = [
    "BackendConformance",
    "BuildReport",
    "assistant_message",
    "build_session",
    "random_text",
    "tool_result",
    "user_message",
]

__getattr__ = lazy_getattr(__name__, _WHERE)
