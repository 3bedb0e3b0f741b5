"""The live state an activation changes, and the file operations that change it.

Two things change, always in this order going forward and the reverse going back:

1. the **target** transcript ``agents/<id>/sessions/<candidate id>.jsonl`` (absent, or the
   old live transcript, becomes the candidate's bytes);
2. the key's **catalog entry** in ``sessions.json`` (the old entry becomes the new one).

Each is read as ``old``, ``new`` or something else, and each operation is a compare-and-swap:
it checks the current state first and refuses anything it did not expect, so rerunning a step
that already happened changes nothing. Catalog swaps take ``sessions.json.lock`` like every
other catalog writer. Every write goes through :data:`kurahi.store.fsio.ops` (temporary file,
fsync, rename or link, directory fsync), which is also where tests inject crashes.
"""

from __future__ import annotations

import contextlib
import os
from enum import StrEnum
from pathlib import Path
from typing import Any

from kurahi.errors import PreconditionError
from kurahi.lifecycle.activation_package import ABSENT, Package, entry_sha256
from kurahi.store import fsio
from kurahi.store.catalog import CATALOG_NAME, DEFAULT_LOCK_TIMEOUT
from kurahi.store.catalog_format import parse_catalog, same_json, serialize_catalog
from kurahi.store.locks import FileLock

__all__ = ["LiveState", "State", "live_file_name"]


class State(StrEnum):
    """Where one part of the live state stands."""

    OLD = "old"
    """As the plan found it."""
    NEW = "new"
    """As apply leaves it."""
    USED = "used"
    """The activated session, used since (catalog clocks moved, or turns appended)."""
    OTHER = "other"
    """Neither: someone else changed it."""


def live_file_name(entry: dict[str, Any] | None) -> str | None:
    """The transcript file a catalog entry points at, as a name in its sessions directory.

    ``sessionFile`` may be absolute and name where the state directory used to live (OpenClaw
    writes absolute paths): only its last component counts, as for a moved state directory.
    """
    if entry is None:
        return None
    name = entry.get("sessionFile")
    if isinstance(name, str) and name:
        return os.path.basename(name)
    sid = entry.get("sessionId")
    return f"{sid}.jsonl" if isinstance(sid, str) and sid else None


def _sha(path: Path) -> str:
    try:
        return fsio.file_sha256(path)
    except FileNotFoundError:
        return ABSENT


class LiveState:
    """The sessions directory of the package's agent, seen through the package's plan.

    Args:
        package: the opened package.
        home: the state directory (already checked to be the package's).
    """

    def __init__(self, package: Package, home: Path) -> None:
        self.package = package
        self.plan = package.plan
        self.sessions = home / self.plan.sessions_dir
        self.catalog = self.sessions / CATALOG_NAME
        self.target = self.sessions / self.plan.target_file
        self._tmp_tag = f"activation-{self.plan.id}.tmp"

    # -- reading ------------------------------------------------------------------------------

    def entry(self) -> dict[str, Any] | None:
        """The key's catalog entry now (``None``: no entry or no catalog)."""
        raw = self._catalog_bytes()
        return None if raw is None else parse_catalog(raw, path=self.catalog).get(self.plan.key)

    def entry_state(self) -> State:
        """Where the catalog entry stands."""
        entry = self.entry()
        sha = entry_sha256(entry)
        if sha == self.plan.preconditions.catalog_entry:
            return State.OLD
        if sha == entry_sha256(self.plan.new_entry):
            return State.NEW
        new = self.plan.new_entry
        if entry is not None and all(entry.get(k) == new[k] for k in ("sessionId", "sessionFile")):
            return State.USED
        return State.OTHER

    def target_sha(self) -> str:
        """sha256 of the target file now, or ``absent``."""
        return _sha(self.target)

    def target_state(self) -> State:
        """Where the target transcript stands."""
        sha = self.target_sha()
        if sha == self.plan.preconditions.candidate:
            return State.NEW
        if sha == self.plan.preconditions.target.sha256:
            return State.OLD
        if sha != ABSENT and self._extends_candidate():
            return State.USED
        return State.OTHER

    def _extends_candidate(self) -> bool:
        size = self.package.candidate.stat().st_size
        with open(self.target, "rb") as a, open(self.package.candidate, "rb") as b:
            while size > 0:
                n = min(size, 1 << 20)
                if a.read(n) != b.read(n):
                    return False
                size -= n
        return True

    def check_preconditions(self) -> None:
        """Every precondition of the plan holds (the state is exactly old).

        Raises:
            PreconditionError: the first one that does not, with expected and actual hashes.
        """
        pre = self.plan.preconditions
        live = pre.live_transcript
        if live.name is not None and live.name != self.plan.target_file:
            actual = _sha(self.sessions / live.name)
            if actual != live.sha256:
                raise PreconditionError(
                    f"the live transcript {live.name} changed since planning (a turn was taken?): plan again",
                    part="transcript",
                    expected=live.sha256,
                    actual=actual,
                )
        actual = entry_sha256(self.entry())
        if actual != pre.catalog_entry:
            raise PreconditionError(
                f"the catalog entry of {self.plan.key!r} changed since planning: plan again",
                part="catalogEntry",
                expected=pre.catalog_entry,
                actual=actual,
            )
        actual = self.target_sha()
        if actual != pre.target.sha256:
            raise PreconditionError(
                f"{self.target} changed since planning; it is never overwritten",
                part="target",
                expected=pre.target.sha256,
                actual=actual,
            )

    # -- changing -----------------------------------------------------------------------------

    def install(self) -> None:
        """Put the candidate's bytes at the target (state old → new).

        A target that did not exist is created with ``link(2)``, which fails rather than
        replace a file that appeared meanwhile; the live transcript (when the plan replaces
        it) is replaced by rename.

        Raises:
            PreconditionError: the target is neither old nor new.
        """
        state = self.target_state()
        if state is State.NEW:
            return
        if state is not State.OLD:
            raise self.target_conflict()
        tmp = self._write_tmp(self.target, self.package.candidate)
        if self.plan.preconditions.target.sha256 == ABSENT:
            try:
                os.link(tmp, self.target)
            except FileExistsError:
                os.unlink(tmp)
                raise self.target_conflict() from None
            os.unlink(tmp)
        else:
            fsio.ops.rename(str(tmp), str(self.target))
        fsio.fsync_dir(self.sessions)

    def uninstall(self, *, keep: Path | None = None) -> None:
        """Put the target back as it was (state new or used → old).

        Args:
            keep: when the target is not exactly the candidate, copy its bytes here first.

        Raises:
            PreconditionError: the target changed in a way this rollback does not own.
        """
        state = self.target_state()
        if state is State.OLD:
            return
        if state is not State.NEW:
            if keep is None:
                raise self.target_conflict(used=state is State.USED)
            keep.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                _copy_new(self.target, keep)
        if self.plan.preconditions.target.sha256 == ABSENT:
            os.unlink(self.target)
        else:
            tmp = self._write_tmp(self.target, self.package.old_transcript)
            fsio.ops.rename(str(tmp), str(self.target))
        fsio.fsync_dir(self.sessions)

    def switch_entry(self) -> None:
        """Rewrite the key's catalog entry to the new one (old → new), under the catalog lock."""
        self._swap({State.OLD, State.NEW}, self.plan.new_entry, restore=False)

    def restore_entry(self) -> None:
        """Put the old catalog entry back (new or used → old), under the catalog lock.

        When the rest of the catalog is as it was, the old file is restored byte for byte
        (its layout included); when the catalog did not exist and holds nothing else, it is
        removed again.
        """
        self._swap({State.OLD, State.NEW, State.USED}, self.plan.old_entry, restore=True)

    def _swap(self, accept: set[State], to: dict[str, Any] | None, *, restore: bool) -> None:
        key = self.plan.key
        with FileLock(
            self.catalog.with_name(CATALOG_NAME + ".lock"), purpose=f"session catalog {self.catalog}"
        ).acquire(timeout=DEFAULT_LOCK_TIMEOUT):
            state = self.entry_state()
            if state not in accept:
                actual = entry_sha256(self.entry())
                raise PreconditionError(
                    f"the catalog entry of {key!r} was changed by someone else",
                    part="catalogEntry",
                    expected=" or ".join(sorted(s.value for s in accept)),
                    actual=actual,
                )
            if entry_sha256(self.entry()) == entry_sha256(to):
                return
            raw = self._catalog_bytes()
            store = {} if raw is None else parse_catalog(raw, path=self.catalog)
            if to is None:
                store.pop(key, None)
            else:
                store[key] = to
            data: bytes | None = serialize_catalog(store)
            if restore:
                data = self._old_catalog_if_same(store, data)
            if data is None:
                os.unlink(self.catalog)
                fsio.fsync_dir(self.sessions)
                return
            tmp = self.catalog.with_name(f".{CATALOG_NAME}.{self._tmp_tag}")
            self._write_bytes(tmp, data)
            fsio.ops.rename(str(tmp), str(self.catalog))
            fsio.fsync_dir(self.sessions)

    def _old_catalog_if_same(self, store: dict[str, Any], data: bytes | None) -> bytes | None:
        if self.plan.old_catalog_sha256 == ABSENT:
            return None if not store else data
        old = self.package.old_catalog.read_bytes()
        return old if same_json(parse_catalog(old, path=self.package.old_catalog), store) else data

    def cleanup(self) -> None:
        """Remove temporary files this package's operations left behind (a crash mid-write)."""
        leftovers = [p for p in self.sessions.glob(f".*.{self._tmp_tag}") if p.is_file()]
        for p in leftovers:
            os.unlink(p)
        if leftovers:
            fsio.fsync_dir(self.sessions)

    # -- plumbing -----------------------------------------------------------------------------

    def target_conflict(self, *, used: bool = False) -> PreconditionError:
        """The error for a target that is neither old nor new (``used``: the session has more entries)."""
        why = (
            "has entries after the candidate's (the activated session was used): rolling back would drop them; "
            "--force keeps its bytes in the package's evidence/ and rolls back"
            if used
            else "is neither what the plan found nor the candidate (changed by someone else)"
        )
        return PreconditionError(
            f"{self.target} {why}",
            part="target",
            expected=f"{self.plan.preconditions.target.sha256} or {self.plan.preconditions.candidate}",
            actual=self.target_sha(),
        )

    def _catalog_bytes(self) -> bytes | None:
        try:
            return self.catalog.read_bytes()
        except FileNotFoundError:
            return None

    def _write_tmp(self, beside: Path, source: Path) -> Path:
        tmp = beside.with_name(f".{beside.name}.{self._tmp_tag}")
        self._write_bytes(tmp, source.read_bytes())
        return tmp

    @staticmethod
    def _write_bytes(tmp: Path, data: bytes) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # left by a crash before: it was never renamed into place
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            fsio.write_all(fd, data)
            fsio.ops.fsync(fd)
        finally:
            os.close(fd)


def _copy_new(src: Path, dst: Path) -> None:
    data = src.read_bytes()
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fsio.write_all(fd, data)
        fsio.ops.fsync(fd)
    finally:
        os.close(fd)
    fsio.fsync_dir(dst.parent)
