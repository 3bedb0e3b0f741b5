"""The session catalog: OpenClaw's ``sessions.json``, a JSON object from session key to entry.

An entry names the session a key currently points at (``sessionId``, ``sessionFile``) and
carries its clocks (``updatedAt``, ``sessionStartedAt``, ``lastInteractionAt``, epoch ms) and
whatever else OpenClaw keeps there. Fields we do not know are kept verbatim, in their order.

Reads take no lock: the file is only ever replaced whole, by rename, so a reader sees one
version or the next. Every change takes ``sessions.json.lock``, re-reads the file under it,
applies the change and writes the result atomically with mode 0600; a change that leaves the
bytes as they were writes nothing. A catalog that exists but does not parse is never
overwritten: every call on it raises :class:`CatalogCorruptError` until :meth:`Catalog.repair`
moves it aside, because writing ``{}`` over it is exactly how OpenClaw users lose sessions.
A catalog larger than :data:`MAX_CATALOG_BYTES` is corrupt in the same way: refused, never
read whole or overwritten, and moved aside by :meth:`Catalog.repair`.

The bytes (parsing, OpenClaw's layout, validation of keys and fields) live in
:mod:`kurahi.store.catalog_format`; this module does the file work.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import os
import stat
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec

from kurahi.errors import CatalogCorruptError, CatalogEntryError, CatalogError, CatalogWriteError, UsageError
from kurahi.fs.durable import atomic_write, fsync_dir, ops, write_new
from kurahi.fs.locks import FileLock
from kurahi.fs.os_errors import os_error, os_errors
from kurahi.store.base import SessionCatalog
from kurahi.store.catalog_format import (
    MAX_KEY_LENGTH,
    Entry,
    Store,
    normalise_entry,
    parse_catalog,
    same_json,
    serialize_catalog,
    validate_agent_id,
    validate_key,
)

__all__ = [
    "CATALOG_NAME",
    "DEFAULT_LOCK_TIMEOUT",
    "MAX_CATALOG_BYTES",
    "MAX_KEY_LENGTH",
    "Catalog",
    "Entry",
    "SessionCatalog",
    "find_catalogs",
    "parse_catalog",
    "serialize_catalog",
    "validate_agent_id",
    "validate_key",
]

CATALOG_NAME = "sessions.json"
"""The catalog's file name inside ``agents/<agentId>/sessions/``."""
DEFAULT_LOCK_TIMEOUT = 10.0
"""Seconds a change waits for another writer before giving up with ``LockHeldError``."""
MAX_CATALOG_BYTES = 256 * 1024 * 1024
"""Largest catalog read (OpenClaw's entries can be large; this only stops a runaway file)."""

T = TypeVar("T")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class CatalogBase(SessionCatalog):
    """The catalog's rules over any storage: a subclass supplies :meth:`_load` and :meth:`_transaction`.

    Keys are checked, fields normalised, clocks set and no-op changes detected here, once,
    so every backend's catalog behaves the same; a backend only reads one consistent
    version of its entries and applies a change to them atomically.
    """

    path: str | Path
    """Where the catalog lives, for messages."""
    _clock: Callable[[], int]

    def _load(self) -> Store:
        """One consistent version of the entries (shared: callers copy before handing out)."""
        raise NotImplementedError

    def _transaction(self, change: Callable[[Store], tuple[T, bool]]) -> T:
        """Apply ``change`` (mutating the store, returning its result and whether it changed) atomically."""
        raise NotImplementedError

    # Reads -----------------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        """Return the entry for ``key`` (a copy the caller may change), or ``None``."""
        validate_key(key)
        entry = self._load().get(key)
        return _copy(entry) if entry is not None else None

    def items(self) -> list[tuple[str, Entry]]:
        """Every ``(key, entry)`` of one version of the file, in file order."""
        return [(k, _copy(v)) for k, v in self._load().items()]

    def keys(self) -> list[str]:
        """Every key of one version of the file, in file order."""
        return list(self._load())

    # Changes ---------------------------------------------------------------------------

    def upsert(self, key: str, fields: Mapping[str, Any], *, touch: bool = False) -> Entry:
        """Merge ``fields`` into the entry for ``key``, creating the entry if needed.

        Existing fields keep their place, new ones go last. Without ``touch`` the activity
        clocks (``updatedAt``, ``lastInteractionAt``) change only if ``fields`` names them,
        so bookkeeping never makes a session look recently used. A new entry needs a
        ``sessionId`` and gets ``updatedAt`` = now unless ``fields`` gives one.

        Args:
            key: the session key, e.g. ``agent:main:main``.
            fields: the fields to set (JSON values).
            touch: set ``updatedAt`` to now, after merging ``fields``.

        Returns:
            The entry as stored.

        Raises:
            CatalogEntryError: a bad key, field or value.
            CatalogCorruptError: the file does not parse (it is left as it is).
            LockHeldError: another writer held the lock for ``lock_timeout`` seconds.
            CatalogError: the directory is missing or the file cannot be read or written.
        """
        validate_key(key)
        patch = normalise_entry(fields, key)

        def change(store: Store) -> tuple[Entry, bool]:
            current = store.get(key)
            if current is None and "sessionId" not in patch:
                raise CatalogEntryError("a new entry needs a sessionId", path=self.path, key=key)
            entry = dict(current) if current is not None else {}
            entry.update(patch)
            if touch or (current is None and "updatedAt" not in entry):
                entry["updatedAt"] = self._clock()
            changed = current is None or not same_json(entry, current)
            store[key] = entry
            return copy.deepcopy(entry), changed

        return self._transaction(change)

    def upsert_many(self, changes: Mapping[str, Mapping[str, Any]]) -> None:
        """Merge fields into several existing entries in one locked write (keys not present are skipped).

        One transaction instead of one per key: the runtime records activity of many busy
        sessions this way without rewriting the file once per session.

        Raises:
            CatalogEntryError: a bad key, field or value (nothing is written).
            CatalogCorruptError, LockHeldError, CatalogError: as for :meth:`upsert`.
        """
        patches = {validate_key(k): normalise_entry(v, k) for k, v in changes.items()}

        def change(store: Store) -> tuple[None, bool]:
            changed = False
            for key, patch in patches.items():
                current = store.get(key)
                if current is None:
                    continue
                entry = dict(current)
                entry.update(patch)
                if not same_json(entry, current):
                    store[key] = entry
                    changed = True
            return None, changed

        self._transaction(change)

    def update(self, key: str, fn: Callable[[Entry | None], Mapping[str, Any] | None]) -> Entry | None:
        """Read-modify-write one entry under the lock.

        ``fn`` gets a copy of the current entry (``None`` when absent) and returns the whole
        new entry, or ``None`` to delete it. Nothing is written if ``fn`` raises. No clock
        is set for the caller.

        Returns:
            The entry as stored, or ``None`` when there is none afterwards.

        Raises:
            CatalogEntryError: a bad key, or ``fn`` returned something that is not an entry.
            CatalogCorruptError, LockHeldError, CatalogError: as for :meth:`upsert`.
        """
        validate_key(key)

        def change(store: Store) -> tuple[Entry | None, bool]:
            current = store.get(key)
            result = fn(copy.deepcopy(current) if current is not None else None)
            if result is None:
                return None, store.pop(key, None) is not None
            entry = normalise_entry(result, key)
            changed = current is None or not same_json(entry, current)
            store[key] = entry
            return copy.deepcopy(entry), changed

        return self._transaction(change)

    def delete(self, key: str) -> bool:
        """Remove the entry for ``key``; whether there was one. The transcript is left alone."""
        validate_key(key)

        def change(store: Store) -> tuple[bool, bool]:
            found = store.pop(key, None) is not None
            return found, found

        return self._transaction(change)


class Catalog(CatalogBase):
    """A ``sessions.json`` file, read without a lock and changed under one.

    Example::

        catalog = Catalog(home / "agents" / "main" / "sessions" / "sessions.json")
        catalog.upsert("agent:main:main", {"sessionId": sid, "sessionFile": f"{sid}.jsonl"})
        catalog.upsert("agent:main:main", {"compactionCount": 3})  # clocks untouched
        catalog.upsert("agent:main:main", {}, touch=True)  # updatedAt = now

    Args:
        path: the catalog file; its directory must exist before the first change.
        lock_timeout: seconds a change waits for another writer.
        clock: epoch milliseconds, for ``touch`` and new entries (tests pass a fixed one).
    """

    path: Path

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        self._clock = clock
        # The bytes this object last wrote or read under the lock and their parse: when the
        # file still holds exactly those bytes, a change need not parse it again.
        self._cached: tuple[bytes, Store] | None = None
        self._read_cache: tuple[tuple[int, int, int], Store] | None = None

    def __repr__(self) -> str:
        return f"Catalog({str(self.path)!r})"

    def repair(self) -> Path | None:
        """Move a corrupt catalog aside to ``sessions.json.corrupt.<UTC time>``, under the lock.

        The move is one rename plus a directory fsync, so the bytes are never copied or
        lost; the next change starts a fresh catalog.

        Returns:
            Where the file went, or ``None`` when there is no file.

        Raises:
            CatalogError: the catalog parses, so there is nothing to repair.
            LockHeldError: another writer holds the lock.
        """
        with self._lock():
            try:
                raw = self._read_raw()
            except CatalogCorruptError:
                raw = b""  # too large to read: corrupt as it stands
            if raw is None:
                return None
            try:
                count = len(parse_catalog(raw, path=self.path))
            except CatalogCorruptError:
                pass
            else:
                raise CatalogError(
                    f"parses as a catalog with {count} entries; nothing to repair "
                    "(repair only moves a catalog that does not parse aside)",
                    path=self.path,
                )
            target = self._aside_path()
            with os_errors(CatalogError, f"cannot move aside to {target}", path=self.path):
                ops.rename(str(self.path), str(target))
                fsync_dir(self.path.parent)
            return target

    # Activation -------------------------------------------------------------------------

    def snapshot(self) -> bytes | None:
        """``sessions.json`` byte for byte (``None``: no file); see :meth:`SessionCatalog.snapshot`."""
        return self._read_raw()

    def set_entry(
        self,
        key: str,
        new: Mapping[str, Any] | None,
        *,
        check: Callable[[Entry | None], None],
        restore: bytes | Literal[False] | None = False,
        tag: str | None = None,
    ) -> None:
        """See :meth:`SessionCatalog.set_entry`: under the lock, temp file ``.sessions.json.<tag>``, rename.

        Putting a snapshot back writes its bytes, so OpenClaw's layout comes back as it was,
        and removes the file again when there was none and nothing else was added since.
        """
        validate_key(key)
        with self._lock():
            raw = self._read_raw()
            self._cached = None
            store = {} if raw is None else parse_catalog(raw, path=self.path)
            current = store.get(key)
            check(copy.deepcopy(current) if current is not None else None)
            if (current is None and new is None) or (
                current is not None and new is not None and same_json(current, new)
            ):
                return
            if new is None:
                store.pop(key, None)
            else:
                store[key] = copy.deepcopy(dict(new))  # the package's entry as planned, as it always was
            data: bytes | None = serialize_catalog(store)
            if restore is not False:
                if restore is None:
                    data = data if store else None
                elif same_json(parse_catalog(restore, path=self.path), store):
                    data = restore
            with os_errors(CatalogError, "cannot write", path=self.path):
                if data is None:
                    os.unlink(self.path)
                else:
                    tmp = self.path.with_name(f".{self.path.name}.{tag or os.urandom(4).hex() + '.tmp'}")
                    mode = self._mode()
                    write_new(tmp, data, mode=mode)  # one it cannot finish (a full disk) leaves no file
                    os.chmod(tmp, mode)  # exactly, whatever the umask
                    try:
                        ops.rename(str(tmp), str(self.path))
                    except OSError:
                        with contextlib.suppress(OSError):
                            os.unlink(tmp)
                        raise
                fsync_dir(self.path.parent)

    # Machinery -------------------------------------------------------------------------

    def _mode(self) -> int:
        """The permission bits an entry swap gives the catalog: those it has, else 0600.

        An activation or its rollback changes one entry of a catalog that may be OpenClaw's
        (0644): it must not change who can read it. Kurahi's own writes keep theirs at 0600.
        """
        try:
            return stat.S_IMODE(os.lstat(self.path).st_mode)
        except OSError:
            return 0o600

    def _aside_path(self) -> Path:
        now = datetime.now(UTC)
        stamp = now.strftime("%Y-%m-%dT%H-%M-%S") + f".{now.microsecond // 1000:03d}Z"
        target = self.path.with_name(f"{self.path.name}.corrupt.{stamp}")
        n = 1
        while target.exists() or target.is_symlink():
            target = self.path.with_name(f"{self.path.name}.corrupt.{stamp}-{n}")
            n += 1
        return target

    def _read_raw(self) -> bytes | None:
        """Read the file's bytes; ``None`` if it does not exist."""
        try:
            # O_NONBLOCK: a FIFO planted at the path must not hang us.
            # O_NOFOLLOW: a catalog is never read through a link (writes replace the link itself).
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except IsADirectoryError as exc:
            raise CatalogCorruptError("is a directory, expected a sessions.json file", path=self.path) from exc
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise CatalogCorruptError(
                    "is a symlink; Kurahi never follows a link out of its home: remove it", path=self.path
                ) from None
            raise os_error(CatalogError, "cannot open", exc, path=self.path) from exc
        try:
            with os_errors(CatalogError, "cannot read", path=self.path):
                st = os.fstat(fd)
                if stat.S_ISDIR(st.st_mode):
                    raise CatalogCorruptError("is a directory, expected a sessions.json file", path=self.path)
                if not stat.S_ISREG(st.st_mode):
                    raise CatalogCorruptError("is not a regular file", path=self.path)
                if st.st_size > MAX_CATALOG_BYTES:
                    raise CatalogCorruptError(
                        f"is {st.st_size} bytes, over the limit of {MAX_CATALOG_BYTES}; never read or overwritten "
                        "(`kurahi sessions repair` moves it aside)",
                        path=self.path,
                    )
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    return fh.read()
        finally:
            os.close(fd)

    def _load(self) -> Store:
        # Reads are served from the last parse while the file is the same file with the same
        # size and mtime: every write replaces it (a new inode), so a change is always seen.
        try:
            st = os.stat(self.path)
            stamp: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        if stamp is not None and self._read_cache is not None and self._read_cache[0] == stamp:
            return self._read_cache[1]  # shared: the public readers hand out copies
        raw = self._read_raw()
        store = {} if raw is None else parse_catalog(raw, path=self.path)
        if stamp is not None:
            self._read_cache = (stamp, store)
        return store

    def _lock(self) -> FileLock:
        if not self.path.parent.is_dir():
            raise CatalogError(
                f"the sessions directory {self.path.parent} does not exist (create the agent first)",
                path=self.path,
            )
        return FileLock(self.lock_path, purpose=f"session catalog {self.path}").acquire(timeout=self.lock_timeout)

    def _transaction(self, change: Callable[[Store], tuple[T, bool]]) -> T:
        """Lock, re-read, apply ``change``; write when it changed something and the bytes differ.

        ``change`` mutates the store in place and returns its result and whether it changed
        anything, so a no-op never rewrites the file (not even to normalise its layout).
        """
        with self._lock():
            raw = self._read_raw()
            cached, self._cached = self._cached, None  # dropped unless this change completes
            if raw is None:
                store: Store = {}
            elif cached is not None and cached[0] == raw:
                store = cached[1]
            else:
                store = parse_catalog(raw, path=self.path)
            result, changed = change(store)
            if not changed:
                if raw is not None:
                    self._cached = (raw, store)
                return result
            data = serialize_catalog(store)
            if data != raw:
                with os_errors(CatalogWriteError, "cannot write", path=self.path):
                    atomic_write(self.path, data, mode=0o600)
            self._cached = (data, store)
            return result


def find_catalogs(home: str | os.PathLike[str], agent: str | None = None) -> list[tuple[str, Path]]:
    """List the catalogs of a state directory as ``(agentId, path)``, sorted by agent id.

    An agent counts when ``agents/<agentId>/sessions/`` exists; its ``sessions.json`` may
    not (yet), which reads as an empty catalog. Directory names that are not valid agent
    ids are skipped.

    Args:
        home: the state directory (``KOLO_HOME`` or an OpenClaw state dir).
        agent: only this agent; it must have a sessions directory.

    Raises:
        UsageError: ``agent`` is not a valid agent id (``..``, a separator, empty, ...).
        CatalogError: ``home`` is not a directory, or the named agent has no sessions directory.
    """
    root = Path(home)
    if agent is not None:
        validate_agent_id(agent)
    if not root.is_dir():
        raise CatalogError("is not a directory (expected a state directory)", path=root)
    agents = root / "agents"
    if agent is not None:
        sessions = agents / agent / "sessions"
        if not sessions.is_dir():
            raise CatalogError(f"agent {agent!r} has no sessions directory", path=sessions)
        return [(agent, sessions / CATALOG_NAME)]
    if not agents.is_dir():
        return []
    found: list[tuple[str, Path]] = []
    for child in sorted(agents.iterdir()):
        try:
            validate_agent_id(child.name)
        except UsageError:
            continue
        if (child / "sessions").is_dir():
            found.append((child.name, child / "sessions" / CATALOG_NAME))
    return found


def _copy(entry: Entry) -> Entry:
    """A deep copy of a JSON value: a round trip through msgspec, many times faster than deepcopy.

    Values only the lenient parser accepts (an unpaired surrogate, an overflowing number)
    do not survive the round trip; they are copied the slow way.
    """
    try:
        out: Entry = msgspec.json.decode(msgspec.json.encode(entry))
    except (msgspec.EncodeError, msgspec.DecodeError, UnicodeError, OverflowError, ValueError):
        return copy.deepcopy(entry)
    return out
