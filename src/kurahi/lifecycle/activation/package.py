"""The activation package on disk: the plan, its files, the manifest, and the progress journal.

A package is a directory that ``kurahi activate plan`` writes once and nobody edits::

    PACKAGE/
        activation.json         the plan (:class:`Plan`): home, agent, key, preconditions,
                                the old and the new catalog entry, the planned projection
        candidate.jsonl         a copy of the candidate transcript (what is installed)
        rollback/transcript.jsonl   the old live transcript, only when installing replaces it
        rollback/sessions.json  the old catalog file, byte for byte (when there was one)
        SHA256SUMS              sha256 of every file above, as ``sha256sum -c`` reads it
        journal.jsonl           apply/rollback progress (written later; not in the manifest)
        evidence/               what the pre-turn validator saw (written later; not in the manifest)

Every use starts with :meth:`Package.open`, which re-hashes every file against
``SHA256SUMS`` and refuses a package with a file missing, added or changed. It also refuses
a plan whose names would build a path out of the agent's sessions directory (an agent id or
``sessionsDir`` other than ``agents/<agent>/sessions``, a file name with a ``/``, ``..``):
``SHA256SUMS`` proves only that the package is unchanged since someone wrote it, and a
package may come from elsewhere.

The journal (:mod:`~kurahi.lifecycle.activation.journal`) is append-only JSON lines, each
fsynced before the operation it announces, so a rerun after a crash knows which direction it
was going and what was already done.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

import msgspec

from kurahi.errors import CatalogEntryError, PackageError, PackageNotFoundError, PackageTamperedError, UsageError
from kurahi.fs import durable as fsio
from kurahi.fs.os_errors import os_error, os_errors
from kurahi.lifecycle.activation.journal import JOURNAL_NAME, Journal, now_iso
from kurahi.store.catalog_format import validate_agent_id, validate_key
from kurahi.store.entry_guard import ABSENT, entry_sha256

__all__ = [
    "ABSENT",
    "PACKAGE_VERSION",
    "FileState",
    "Package",
    "Plan",
    "PlanHead",
    "Preconditions",
    "Projection",
    "check_package_files",
    "entry_sha256",
    "now_iso",
    "staged",
    "store_of",
    "write_package_file",
]

PACKAGE_VERSION = 1
"""Version of the package layout and of ``activation.json``."""

PLAN_NAME = "activation.json"
CANDIDATE_NAME = "candidate.jsonl"
OLD_TRANSCRIPT_NAME = "rollback/transcript.jsonl"
OLD_CATALOG_NAME = "rollback/sessions.json"
MANIFEST_NAME = "SHA256SUMS"
EVIDENCE_DIR = "evidence"
_UNLISTED = frozenset({MANIFEST_NAME, JOURNAL_NAME})


class FileState(msgspec.Struct, rename="camel", frozen=True):
    """A file in the agent's sessions directory, as the plan saw it."""

    name: str | None
    """The file name in ``agents/<id>/sessions/`` (``None``: no catalog entry names one)."""
    sha256: str
    """Its sha256, or ``absent``."""


class Preconditions(msgspec.Struct, rename="camel", frozen=True):
    """What must still hold when the package is applied (else nothing is changed)."""

    live_transcript: FileState
    """The transcript the key's catalog entry points at."""
    catalog_entry: str
    """sha256 of the key's catalog entry (canonical JSON), or ``absent``."""
    candidate: str
    """sha256 of the candidate (the copy in the package)."""
    target: FileState
    """Where the candidate is installed, as it was (``absent``, the live transcript, or the candidate itself)."""


class Projection(msgspec.Struct, rename="camel", frozen=True):
    """What the session projects into model context (Pi-identical), reduced to comparable facts."""

    messages: int
    """Number of messages."""
    sha256: str
    """:func:`kurahi.lineage.check.messages_sha256` of the messages."""
    markers_found: list[str]
    """Markers present in the effective context."""
    markers_missing: list[str]
    """Markers asked for but absent."""
    compaction_id: str | None = None
    """The operative compaction, if any."""


class PlanHead(msgspec.Struct, rename="camel", frozen=True, kw_only=True):
    """The fields every target's ``activation.json`` opens with: which package, of which target, for what.

    Keyword-only, so that each target's plan keeps its fields in the order its packages
    have always had on disk (the head's first, then its own).
    """

    version: int
    """:data:`PACKAGE_VERSION`."""
    store: str | None = None
    """Which target's plan this is: ``None`` (and left out) for a Kurahi backend, ``openclaw-sqlite``
    for OpenClaw's SQLite store."""
    id: str
    """Random id of this package (names its audit records and temporary files)."""
    created_at: str
    """When it was planned (UTC, ISO 8601)."""
    tool: str
    """``kurahi <version>`` that planned it."""
    home: str
    """Absolute path of the state directory it is for; any other home is refused."""
    agent: str
    """The agent id."""
    key: str
    """The session key whose entry is rewritten."""


class Plan(PlanHead, frozen=True, kw_only=True, omit_defaults=True):
    """``activation.json`` of a Kurahi backend: everything apply, verify and rollback need, decided once."""

    sessions_dir: str
    """The agent's sessions directory, relative to ``home``."""
    candidate_session_id: str
    """The candidate header's ``id`` (the new ``sessionId``)."""
    target_file: str
    """The file name the candidate is installed under (``<sessionId>.jsonl``)."""
    replaces_live: bool
    """Installing overwrites the live transcript (the candidate keeps the live session id)."""
    installs: bool
    """Whether apply writes the target (``False``: it already holds the candidate's bytes)."""
    compaction_count: int
    """Compaction entries on the candidate's path."""
    markers: list[str]
    """Markers checked at planning and by the pre-turn validator."""
    preconditions: Preconditions
    """The live state the plan was made against."""
    old_entry: dict[str, Any] | None
    """The key's catalog entry before (``None``: no entry)."""
    new_entry: dict[str, Any]
    """The key's catalog entry after."""
    projection: Projection
    """What the candidate projects; the validator expects the same from the live session."""
    old_catalog_sha256: str
    """sha256 of the whole old ``sessions.json`` (saved in ``rollback/``), or ``absent``."""
    backend: str | None = None
    """Where the sessions live when not in the home's files: the store's URL without a password
    (``postgresql://user@host:port/db``); ``None``: the home's files. Applied only there."""

    @property
    def session_after(self) -> str:
        """The session the key points at once applied."""
        return self.candidate_session_id


P = TypeVar("P", bound=PlanHead)
Q = TypeVar("Q", bound=PlanHead)


class Package(Generic[P]):
    """An activation package opened for use: manifest checked, plan parsed.

    Args:
        root: the package directory.
        plan: its plan (:class:`Plan`, or a target's own plan beginning with :class:`PlanHead`).
    """

    def __init__(self, root: Path, plan: P) -> None:
        self.root = root
        self.plan = plan

    @property
    def candidate(self) -> Path:
        """The candidate copy."""
        return self.root / CANDIDATE_NAME

    @property
    def old_transcript(self) -> Path:
        """The old live transcript (present only when ``plan.replaces_live``)."""
        return self.root / OLD_TRANSCRIPT_NAME

    @property
    def old_catalog(self) -> Path:
        """The old ``sessions.json`` bytes (present unless the catalog did not exist)."""
        return self.root / OLD_CATALOG_NAME

    @property
    def journal(self) -> Journal:
        """The progress journal."""
        return Journal(self.root / JOURNAL_NAME)

    @property
    def evidence(self) -> Path:
        """Where the validator's observations go."""
        return self.root / EVIDENCE_DIR

    @overload
    @staticmethod
    def open(path: str | os.PathLike[str]) -> Package[Plan]: ...

    @overload
    @staticmethod
    def open(path: str | os.PathLike[str], plan_type: type[Q]) -> Package[Q]: ...

    @staticmethod
    def open(path: str | os.PathLike[str], plan_type: type[PlanHead] = Plan) -> Package[Any]:
        """Open a package, checking every file against ``SHA256SUMS``: the one opener of every target's packages.

        Args:
            path: the package directory.
            plan_type: the target's plan (:class:`Plan` for a Kurahi backend's); see :func:`store_of`.

        Raises:
            PackageNotFoundError: no directory, or no plan in it.
            PackageTamperedError: a file missing, added, or changed; a plan that does not parse.
            PackageError: a package version this tool does not read.
        """
        root = check_package_files(path)
        try:
            plan = msgspec.json.decode((root / PLAN_NAME).read_bytes(), type=plan_type)
        except msgspec.ValidationError as exc:
            raise PackageTamperedError(f"{PLAN_NAME}: {exc}", path=root) from exc
        except msgspec.DecodeError as exc:
            raise PackageTamperedError(f"{PLAN_NAME} is not JSON: {exc}", path=root) from exc
        if plan.version != PACKAGE_VERSION:
            raise PackageError(f"package version {plan.version}, this tool reads {PACKAGE_VERSION}", path=root)
        if isinstance(plan, Plan):
            _check_names(plan, root)
        return Package(root, plan)

    @staticmethod
    def write(out: str | os.PathLike[str], plan: P, staging: Path) -> Package[P]:
        """Finish a package staged in ``staging``: add the plan and the manifest, move it to ``out``.

        ``staging`` already holds the candidate copy and the rollback files; it is renamed to
        ``out`` only when complete, so ``out`` never holds half a package.

        Raises:
            UsageError: ``out`` exists and is not an empty directory.
        """
        target = Path(out)
        write_package_file(staging / PLAN_NAME, msgspec.json.format(msgspec.json.encode(plan), indent=2) + b"\n")
        files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
        lines = "".join(f"{fsio.file_sha256(staging / rel)}  {rel}\n" for rel in files)
        write_package_file(staging / MANIFEST_NAME, lines.encode())
        for d in (staging / "rollback", staging):
            fsio.fsync_dir(d)
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()
        with os_errors(UsageError, "cannot create the package there", path=target):
            os.rename(staging, target)
        fsio.fsync_dir(target.parent)
        return Package(target, plan)

    @staticmethod
    def staging_dir(out: str | os.PathLike[str]) -> Path:
        """A new empty directory beside ``out`` to build the package in.

        Raises:
            UsageError: ``out`` exists and is not an empty directory, or its parent is missing.
        """
        target = Path(out)
        if target.exists() and not (target.is_dir() and not any(target.iterdir())):
            raise UsageError(f"{target}: exists (a package is written to a new or empty directory)")
        if not target.parent.is_dir():
            raise UsageError(f"{target.parent}: no such directory")
        staging = target.with_name(f".{target.name}.{secrets.token_hex(4)}.staging")
        staging.mkdir(mode=0o700)
        (staging / "rollback").mkdir()
        return staging


def store_of(path: str | os.PathLike[str]) -> str | None:
    """The ``store`` a package's plan names (which target opens it), read before the package is opened.

    ``None`` for a Kurahi backend's package, and for anything that is no package at all (the
    backend's target then refuses it with the reason).
    """
    try:
        head = json.loads((Path(path) / PLAN_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    store = head.get("store") if isinstance(head, dict) else None
    return store if isinstance(store, str) else None


def check_package_files(path: str | os.PathLike[str]) -> Path:
    """Check a package directory's files against ``SHA256SUMS``; its root.

    Raises:
        PackageNotFoundError: no directory, or no plan in it.
        PackageTamperedError: a file missing, added, or changed.
    """
    root = Path(path)
    if not root.is_dir():
        raise PackageNotFoundError("no activation package here (make one with `kurahi activate plan`)", path=root)
    manifest = root / MANIFEST_NAME
    if not (root / PLAN_NAME).is_file() or not manifest.is_file():
        raise PackageNotFoundError(f"not an activation package (no {PLAN_NAME} or {MANIFEST_NAME})", path=root)
    listed = _read_manifest(manifest)
    present = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if not p.is_dir() and p.relative_to(root).parts[0] != EVIDENCE_DIR
    } - _UNLISTED
    if missing := sorted(set(listed) - present):
        raise PackageTamperedError(f"files listed in {MANIFEST_NAME} are missing: {missing}", path=root)
    if added := sorted(present - set(listed)):
        raise PackageTamperedError(f"files not in {MANIFEST_NAME}: {added}", path=root)
    for rel, sha in listed.items():
        actual = fsio.file_sha256(root / rel)
        if actual != sha:
            raise PackageTamperedError(
                f"{rel} changed since planning (sha256 {actual}, manifest says {sha})", path=root
            )
    return root


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0") and len(name) <= 255


def _check_names(plan: Plan, root: Path) -> None:
    """Refuse a plan whose names would build a path outside the agent's sessions directory."""
    try:
        validate_agent_id(plan.agent)
        validate_key(plan.key)
    except (UsageError, CatalogEntryError) as exc:
        raise PackageTamperedError(f"{PLAN_NAME}: {exc}", path=root) from None
    problems = []
    if plan.sessions_dir != f"agents/{plan.agent}/sessions":
        problems.append(f"sessionsDir {plan.sessions_dir!r} is not 'agents/{plan.agent}/sessions'")
    names = {
        "targetFile": plan.target_file,
        "preconditions.target.name": plan.preconditions.target.name,
        "preconditions.liveTranscript.name": plan.preconditions.live_transcript.name,
    }
    for field, name in names.items():
        if name is not None and not _plain_name(name):
            problems.append(f"{field} {name[:80]!r} is not a plain file name")
    if not re.fullmatch(r"[0-9a-f]{1,64}", plan.id):
        problems.append(f"id {plan.id[:80]!r} is not a hex string")
    if problems:
        raise PackageTamperedError(f"{PLAN_NAME}: " + "; ".join(problems) + "; refused, nothing touched", path=root)


def copy_durably(src: Path, dst: Path) -> str:
    """Copy ``src`` to the new file ``dst``, fsync it, and return the sha256 of what was copied."""
    with open(src, "rb") as fin, open(dst, "xb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
        fout.flush()
        fsio.ops.fsync(fout.fileno())
    return fsio.file_sha256(dst)


@contextlib.contextmanager
def staged(out: str | os.PathLike[str]) -> Iterator[Path]:
    """A staging directory for the package ``out`` (:meth:`Package.staging_dir`), removed if the block fails.

    Raises:
        UsageError: ``out`` exists and is not an empty directory, its parent is missing, or
            the package cannot be written there (a full disk, a folder that takes no files).
    """
    with os_errors(UsageError, "cannot write the package there", path=Path(out)):
        staging = Package.staging_dir(out)
    try:
        yield staging
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if not _about(exc, staging):
            raise
        raise os_error(UsageError, "cannot write the package there", exc, path=Path(out)) from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _about(exc: OSError, staging: Path) -> bool:
    """Whether ``exc`` is a write of the package's own (a file in ``staging``, or a write that names none)."""
    names = [n for n in (exc.filename, exc.filename2) if n is not None]
    return not names or any(Path(os.fsdecode(n)).is_relative_to(staging) for n in names)


def write_package_file(path: Path, data: bytes) -> None:
    """Write a new file of a package (mode 0600) and fsync it; the caller fsyncs the directory."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fsio.write_all(fd, data)
        fsio.ops.fsync(fd)
    finally:
        os.close(fd)


def _read_manifest(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text("utf-8", "replace").splitlines(), 1):
        sha, sep, rel = line.partition("  ")
        if not sep or len(sha) != 64 or not rel or rel.startswith("/") or ".." in rel.split("/"):
            raise PackageTamperedError(f"{MANIFEST_NAME} line {n} is not '<sha256>  <file>'", path=path.parent)
        out[rel] = sha
    return out
