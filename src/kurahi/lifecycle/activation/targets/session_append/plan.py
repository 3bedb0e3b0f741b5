"""A session-append package: what the plan of an append to one session file records, and writing it.

The package (``PACKAGE/``, outside the runtime's state)::

    activation.json   the plan: ``store`` (the runtime's :attr:`~kurahi.runtimes.base.SessionAppend.store`),
                      the file, its size and sha256 before, the bytes appended, the size and sha256
                      after, and the runtime's own fields (which rows, the rows as they were)
    SHA256SUMS        sha256 of activation.json
    journal.jsonl     what was done (apply, rollback), each record fsynced
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kurahi.errors import PackageTamperedError
from kurahi.fs import durable as fsio
from kurahi.lifecycle.activation.package import (
    MANIFEST_NAME,
    PACKAGE_VERSION,
    PLAN_NAME,
    check_package_files,
    staged,
    write_package_file,
)

__all__ = ["AppendPlan", "open_plan", "write_plan"]

_TEXT = ("file", "sessionId", "sha256Before", "sha256After", "appended", "configDir")
_SIZES = ("sizeBefore", "sizeAfter")


@dataclass(frozen=True)
class AppendPlan:
    """An opened plan: its fields as written, and what the driver names a result by."""

    head: dict[str, Any]
    """``activation.json`` as written (the runtime reads its own fields from it)."""

    @property
    def agent(self) -> str:
        """A session file has no agent."""
        return ""

    @property
    def key(self) -> str:
        """The session the file holds."""
        return str(self.head["sessionId"])

    @property
    def file(self) -> Path:
        """The session file."""
        return Path(self.head["file"])

    @property
    def appended(self) -> bytes:
        """The bytes the apply appends."""
        return str(self.head["appended"]).encode("utf-8", "surrogatepass")


def write_plan(
    out: Path,
    *,
    store: str,
    planned_at: str,
    config_dir: Path,
    file: Path,
    session_id: str,
    data: bytes,
    appended: bytes,
    own: dict[str, Any],
    own_first: dict[str, Any],
) -> dict[str, Any]:
    """Write the package of appending ``appended`` to ``file`` (now ``data``) to ``out``; the plan written.

    ``own_first`` are the runtime's fields written before the file's (``loss``), ``own`` after.

    Raises:
        UsageError: ``out`` exists and is not an empty directory, or cannot be written.
    """
    after = data + appended
    head: dict[str, Any] = {
        "version": PACKAGE_VERSION,
        "store": store,
        "plannedAt": planned_at,
        "configDir": str(config_dir),
        **own_first,
        "file": str(file),
        "sessionId": session_id,
        "sizeBefore": len(data),
        "sha256Before": hashlib.sha256(data).hexdigest(),
        "appended": appended.decode("utf-8", "surrogatepass"),
        "sizeAfter": len(after),
        "sha256After": hashlib.sha256(after).hexdigest(),
        **own,
    }
    plan_bytes = json.dumps(head, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass") + b"\n"
    with staged(out) as staging:
        (staging / "rollback").rmdir()  # the rows a rollback appends are in the plan
        write_package_file(staging / PLAN_NAME, plan_bytes)
        sums = f"{hashlib.sha256(plan_bytes).hexdigest()}  {PLAN_NAME}\n".encode()
        write_package_file(staging / MANIFEST_NAME, sums)
        fsio.fsync_dir(staging)
        os.replace(staging, out)
        fsio.fsync_dir(out.parent)
    return head


def open_plan(package: str | os.PathLike[str], store: str, words: str) -> tuple[Path, AppendPlan]:
    """The package's root and plan, its files checked against ``SHA256SUMS``.

    Raises:
        PackageNotFoundError, PackageTamperedError: missing, changed, or not a ``store`` plan
            (``words`` says what kind of package, in the refusal).
    """
    root = check_package_files(package)
    head = json.loads((root / PLAN_NAME).read_bytes())
    if not isinstance(head, dict) or head.get("store") != store or head.get("version") != PACKAGE_VERSION:
        raise PackageTamperedError(f"not a {words} this Kurahi knows", path=root)
    for name in _TEXT:
        if not isinstance(head.get(name), str):
            raise PackageTamperedError(f"{PLAN_NAME} has no {name}", path=root)
    for name in _SIZES:
        if not isinstance(head.get(name), int):
            raise PackageTamperedError(f"{PLAN_NAME} has no {name}", path=root)
    return root, AppendPlan(head)
