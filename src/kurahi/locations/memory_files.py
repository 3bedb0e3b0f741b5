"""Where a resident keeps its memory in its workspace: ``MEMORY.md`` and ``memory/*.md``.

Read by the resident's recall (:mod:`kurahi.resident.memory`) and by provenance
(:mod:`kurahi.lineage.provenance`), which sits below the resident.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["memory_files"]


def memory_files(workspace: Path) -> list[Path]:
    """``MEMORY.md`` (if present) then ``memory/*.md`` sorted by name; symlinks out of the workspace skipped."""
    out = []
    root = workspace.resolve()
    main = workspace / "MEMORY.md"
    if main.is_file():
        out.append(main)
    mem = workspace / "memory"
    if mem.is_dir():
        out.extend(sorted(p for p in mem.glob("*.md") if p.is_file()))
    return [p for p in out if root in p.resolve().parents]
