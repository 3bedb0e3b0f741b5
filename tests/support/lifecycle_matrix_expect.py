"""An independent statement of the matrix's expected outcomes, row by row (not the code under test)."""

from __future__ import annotations


def expected(stype: str, command: str, usable: str, freshness: str, last_run: str, mtime: str, guard: bool) -> str:
    if command == "/new":
        return "new"
    if command == "/reset":
        return "rollover"
    if usable != "ok":
        return "rollover"
    if freshness == "stale":
        return "rollover"
    narrow = stype == "main" and last_run in ("killed", "timeout", "no-done") and mtime == "newer"
    if narrow and not guard:
        return "rollover"
    return "reuse"
