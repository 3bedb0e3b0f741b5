"""The live state an activation changes, read and changed through the store interface.

Two things change, always in this order going forward and the reverse going back:

1. the **target** transcript ``<candidate id>.jsonl`` (absent, or the old live transcript,
   becomes the candidate's bytes);
2. the key's **catalog entry** (the old entry becomes the new one).

Each is read as ``old``, ``new`` or something else, and each change is a compare-and-swap
(:meth:`~kurahi.store.base.TranscriptClaim.put`, :meth:`~kurahi.store.base.SessionCatalog.set_entry`):
it checks the current state first and refuses anything it did not expect, so rerunning a
step that already happened changes nothing. While apply or rollback runs, :meth:`LiveState.claimed`
holds the writer's claim on the live transcript and the target, so no writer appends to
either meanwhile (a gateway sharing a database is fenced off by the lease's token). How the
bytes move is the backend's business: the file backend writes a temporary file, fsyncs it,
links or renames it into place and fsyncs the directory, exactly as it always has, and puts
``sessions.json`` back byte for byte on rollback.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from kurahi.errors import PreconditionError, TranscriptChangedError
from kurahi.fs import durable as fsio
from kurahi.lifecycle.activation.package import ABSENT, Package, Plan, entry_sha256
from kurahi.store.base import AgentStore, CatalogEntry, TranscriptClaim
from kurahi.store.entry_guard import entry_guard, entry_state

__all__ = ["LiveState", "State"]


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


class LiveState:
    """The agent's sessions in their store, seen through the package's plan.

    Args:
        package: the opened package.
        store: the agent's stores (already checked to be the package's).
        take_over: take the transcripts' claims even from a live writer where the backend
            fences writers (a database shared with gateways on other machines).
    """

    def __init__(self, package: Package[Plan], store: AgentStore, *, take_over: bool = False) -> None:
        self.package = package
        self.plan = package.plan
        self.store = store
        self.transcripts = store.transcripts
        self.target = self.plan.target_file
        self.take_over = take_over
        self._tag = f"activation-{self.plan.id}.tmp"
        self._claims: dict[str, TranscriptClaim] = {}

    # -- the writer's claims ----------------------------------------------------------------------

    @contextlib.contextmanager
    def claimed(self) -> Iterator[None]:
        """Hold the writer's claim on the live transcript and the target for the block.

        Raises:
            LockHeldError: a writer holds one of them (a gateway still running on a file home).
        """
        live = self.plan.preconditions.live_transcript.name
        try:
            for name in sorted({n for n in (live, self.target) if n is not None}):
                self._claims[name] = self.transcripts.claim(name, take_over=self.take_over, tag=self._tag)
            yield
        finally:
            claims, self._claims = list(self._claims.values()), {}
            for claim in claims:
                claim.release()

    @contextlib.contextmanager
    def _claim(self, name: str) -> Iterator[TranscriptClaim]:
        held = self._claims.get(name)
        if held is not None:
            yield held
            return
        with self.transcripts.claim(name, take_over=self.take_over, tag=self._tag) as claim:
            yield claim

    # -- reading ------------------------------------------------------------------------------

    def entry(self) -> CatalogEntry | None:
        """The key's catalog entry now (``None``: no entry or no catalog)."""
        return self.store.catalog.get(self.plan.key)

    def entry_state(self) -> State:
        """Where the catalog entry stands."""
        return self._state_of(self.entry())

    def _state_of(self, entry: CatalogEntry | None) -> State:
        return State(entry_state(entry, old_sha=self.plan.preconditions.catalog_entry, new_entry=self.plan.new_entry))

    def sha(self, name: str) -> str:
        """sha256 of the transcript ``name`` now, or ``absent``."""
        held = self._claims.get(name)
        sha = held.sha256() if held is not None else self.transcripts.sha256(name)
        return ABSENT if sha is None else sha

    def target_sha(self) -> str:
        """sha256 of the target transcript now, or ``absent``."""
        return self.sha(self.target)

    def target_state(self) -> State:
        """Where the target transcript stands."""
        sha = self.target_sha()
        if sha == self.plan.preconditions.candidate:
            return State.NEW
        if sha == self.plan.preconditions.target.sha256:
            return State.OLD
        if sha != ABSENT and self.transcripts.export(self.target).startswith(_package_bytes(self.package.candidate)):
            return State.USED
        return State.OTHER

    def transcript_bytes(self, name: str) -> bytes:
        """The bytes of the transcript ``name`` (the validator projects them)."""
        return self.transcripts.export(name)

    def check_preconditions(self) -> None:
        """Every precondition of the plan holds (the state is exactly old).

        Raises:
            PreconditionError: the first one that does not, with expected and actual hashes.
        """
        pre = self.plan.preconditions
        live = pre.live_transcript
        if live.name is not None and live.name != self.target:
            actual = self.sha(live.name)
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
                f"{self.transcripts.locator(self.target)} changed since planning; it is never overwritten",
                part="target",
                expected=pre.target.sha256,
                actual=actual,
            )

    # -- changing -----------------------------------------------------------------------------

    def install(self) -> None:
        """Put the candidate's bytes at the target (state old → new).

        A target that did not exist is created, never written over (one that appeared
        meanwhile is refused); the live transcript (when the plan replaces it) is replaced whole.

        Raises:
            PreconditionError: the target is neither old nor new.
        """
        state = self.target_state()
        if state is State.NEW:
            return
        if state is not State.OLD:
            raise self.target_conflict()
        old = self.plan.preconditions.target.sha256
        with self._claim(self.target) as claim:
            try:
                claim.put(_package_bytes(self.package.candidate), expected=None if old == ABSENT else old)
            except TranscriptChangedError:
                raise self.target_conflict() from None

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
        with self._claim(self.target) as claim:
            actual = claim.sha256()
            if state is not State.NEW:
                if keep is None:
                    raise self.target_conflict(used=state is State.USED)
                _keep(self.transcripts.export(self.target), keep)
            try:
                if actual is None:
                    raise TranscriptChangedError("gone", expected=None, actual=None)
                if self.plan.preconditions.target.sha256 == ABSENT:
                    claim.remove(expected=actual)
                else:
                    claim.put(_package_bytes(self.package.old_transcript), expected=actual)
            except TranscriptChangedError:
                raise self.target_conflict() from None

    def switch_entry(self) -> None:
        """Rewrite the key's catalog entry to the new one (old → new), atomically against other catalog writers."""
        self._swap({State.OLD, State.NEW}, self.plan.new_entry, restore=False)

    def restore_entry(self) -> None:
        """Put the old catalog entry back (new or used → old).

        When the rest of the catalog is as it was, the old catalog comes back exactly (the
        file backend: ``sessions.json`` byte for byte, its layout included, and no file when
        there was none and it holds nothing else).
        """
        self._swap({State.OLD, State.NEW, State.USED}, self.plan.old_entry, restore=True)

    def _swap(self, accept: set[State], to: dict[str, Any] | None, *, restore: bool) -> None:
        key = self.plan.key

        check = entry_guard(
            key,
            old_sha=self.plan.preconditions.catalog_entry,
            new_entry=self.plan.new_entry,
            accept=[s.value for s in accept],
        )

        snapshot: bytes | Literal[False] | None = False
        if restore:
            absent = self.plan.old_catalog_sha256 == ABSENT
            snapshot = None if absent else _package_bytes(self.package.old_catalog)
        self.store.catalog.set_entry(key, to, check=check, restore=snapshot, tag=self._tag)

    def cleanup(self) -> None:
        """Remove temporary files this package's operations left behind (a crash mid-write)."""
        self.store.discard_leftovers(self._tag)

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
            f"{self.transcripts.locator(self.target)} {why}",
            part="target",
            expected=f"{self.plan.preconditions.target.sha256} or {self.plan.preconditions.candidate}",
            actual=self.target_sha(),
        )


def _package_bytes(path: Path) -> bytes:
    """A file of the package (the candidate, the rollback copies), checked against SHA256SUMS when opened."""
    return path.read_bytes()


def _keep(data: bytes, dst: Path) -> None:
    """Keep the replaced transcript's bytes in the package's evidence (a first copy is never overwritten)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    except FileExistsError:
        return
    try:
        fsio.write_all(fd, data)
        fsio.ops.fsync(fd)
    finally:
        os.close(fd)
    fsio.fsync_dir(dst.parent)
