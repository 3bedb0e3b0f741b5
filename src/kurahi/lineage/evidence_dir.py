"""Evidence folders: what a reconstruction read and wrote, with hashes anyone can re-check.

A folder holds ``manifest.json`` (tool version, time, every input and output file with its
sha256, size and modification time), the reports as JSON, and ``SHA256SUMS`` over every
file in the folder, in the format ``sha256sum -c`` reads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kurahi import __version__
from kurahi.errors import UsageError
from kurahi.fs.durable import atomic_write, file_sha256
from kurahi.js.stringify import json_utf8

__all__ = ["file_facts", "write_evidence"]


def file_facts(path: Path) -> dict[str, Any]:
    """sha256, size and modification time of a file."""
    st = path.stat()
    mtime = datetime.fromtimestamp(st.st_mtime, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"path": str(path), "sha256": file_sha256(path), "bytes": st.st_size, "modifiedAt": mtime}


def write_evidence(
    folder: str | os.PathLike[str],
    *,
    inputs: Mapping[str, Path],
    outputs: Mapping[str, Path],
    reports: Mapping[str, Any],
) -> Path:
    """Write an evidence folder (a new or empty directory) and return it.

    Raises:
        UsageError: the folder exists and is not empty.
    """
    d = Path(folder)
    if os.path.lexists(d) and (not d.is_dir() or any(d.iterdir())):
        raise UsageError(f"{d}: exists and is not an empty directory; evidence is never mixed with other files")
    (d / "reports").mkdir(parents=True, exist_ok=True)
    manifest = {
        "tool": f"kurahi {__version__}",
        "createdAt": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "inputs": {name: file_facts(p) for name, p in inputs.items()},
        "outputs": {name: file_facts(p) for name, p in outputs.items()},
        "reports": sorted(f"reports/{name}.json" for name in reports),
    }
    for name, report in reports.items():
        atomic_write(
            d / "reports" / f"{name}.json", json_utf8(json.dumps(report, ensure_ascii=False, indent=1)), mode=0o644
        )
    atomic_write(d / "manifest.json", json_utf8(json.dumps(manifest, ensure_ascii=False, indent=1)), mode=0o644)
    lines = []
    for f in sorted(p for p in d.rglob("*") if p.is_file() and p.name != "SHA256SUMS"):
        lines.append(f"{file_facts(f)['sha256']}  {f.relative_to(d).as_posix()}\n")
    # File names as the file system has them (a name that is not UTF-8 keeps its bytes), as sha256sum lists them.
    atomic_write(d / "SHA256SUMS", "".join(lines).encode("utf-8", "surrogateescape"), mode=0o644)
    return d
