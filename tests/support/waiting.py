"""Waiting on state, the tests' one way to synchronise with another process or thread (never a sleep)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def wait_for(condition: Callable[[], bool], what: str, *, limit: float = 60.0) -> None:
    """Poll ``condition`` until it holds (the limit only stops a hung test; it is not a timing assertion)."""
    deadline = time.monotonic() + limit
    pause = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting for {what} after {limit} s")
        pause.wait(0.02)
