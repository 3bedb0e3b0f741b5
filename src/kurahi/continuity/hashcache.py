"""File hashes for manifests, fast: a stat-keyed cache on disk, and misses hashed on threads.

A manifest lists the SHA-256 of every identity, memory and transcript file, and a resident's
transcripts grow to gigabytes. Most of them have not changed since the last manifest, so
each file's digest is kept in ``<home>/run/hash-cache.json`` with the file's device, inode,
size, ``mtime_ns`` and ``ctime_ns``. A digest is used only while all five are what they were
when it was computed; any change at all (an append, a rewrite of the same size with a new
mtime, a replacement by rename, an ``mtime`` set back by hand, which still moves ``ctime``)
and the file is read again. Entries are named by the path relative to the home, so a moved
home keeps its cache: a rename keeps the device, inode and times of the files inside.

Two more rules keep the cache honest:

- **Racy files are not cached.** A file whose mtime and ctime are both less than
  :data:`RACY_NS` before the hashing started could be written again within the same
  timestamp tick, with the same size, and no stat field would show it. Such a digest is
  used for this manifest and not kept (git's "racily clean" rule). One old timestamp is
  enough: a later write sets both to the present, so the old one would change.
- **What is hashed is what is reported.** The file is opened (never through a symlink), its
  size taken from the open descriptor, and exactly that many bytes are hashed; if the file
  changed while it was read (a transcript got an append), the digest of those bytes is still
  right for the size reported, but it is not cached.

A cache file that does not parse, or of another version, is ignored and rebuilt; it is
replaced atomically (temp file, fsync, rename) and only when something in it changed, so a
manifest over unchanged files writes nothing. It holds only digests of files that are in
the manifest anyway, never contents, and nothing under ``secrets/``.

Misses are hashed on threads (``hashlib`` releases the GIL while it hashes, and reading
releases it too), largest file first, each with one 1 MiB buffer reused for the whole file.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import os
import stat
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec

from kurahi.errors import UnsafeFileError
from kurahi.fs import durable as fsio
from kurahi.fs.safe import read_regular

__all__ = ["CACHE_VERSION", "RACY_NS", "FileDigest", "HashCache", "hash_file"]

CACHE_VERSION = 1
"""The ``version`` of ``hash-cache.json``."""

RACY_NS = 2_000_000_000
"""A file changed less than this long (ns) before hashing began is hashed but not cached."""

_CHUNK = 1 << 20
_O_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)

# (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns, sha256)
_Row = tuple[int, int, int, int, int, str]


class _CacheFile(msgspec.Struct, forbid_unknown_fields=True):
    version: int
    files: dict[str, _Row]


class FileDigest(NamedTuple):
    """A file's SHA-256 (lowercase hex) and the number of bytes it covers."""

    sha256: str
    size: int


def _cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1  # pragma: no cover - not Linux


def _stamp(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def hash_file(path: str | os.PathLike[str]) -> tuple[FileDigest, os.stat_result, bool]:
    """Hash a regular file without following a symlink.

    Returns:
        The digest of the first ``size`` bytes (``size`` from the open descriptor), the stat
        taken before reading, and whether the file stayed the same while it was read.

    Raises:
        OSError: the file cannot be opened (``ELOOP`` for a symlink) or read, or is not a
            regular file (``EINVAL``).
    """
    fd = os.open(path, _O_FLAGS)
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise OSError(22, "not a regular file", str(path))
        if hasattr(os, "posix_fadvise"):
            with contextlib.suppress(OSError):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        h = hashlib.sha256()
        left = before.st_size
        buf = memoryview(bytearray(min(left, _CHUNK) or 1))
        with open(fd, "rb", buffering=0, closefd=False) as f:
            while left:
                n = f.readinto(buf[: min(left, _CHUNK)])
                if not n:
                    break  # truncated under us: the digest covers what was there
                h.update(buf[:n])
                left -= n
        after = os.fstat(fd)
    finally:
        os.close(fd)
    size = before.st_size - left
    stable = left == 0 and _stamp(after) == _stamp(before)
    return FileDigest(h.hexdigest(), size), before, stable


class HashCache:
    """Digests of files, trusted only while their stat is unchanged (see the module docstring).

    Example::

        cache = HashCache.for_home(home)                 # <home>/run/hash-cache.json
        digests = cache.digests([p1, p2, p3])            # hits from the cache, misses on threads
        cache.save()                                     # only writes when something changed

    Args:
        path: the cache file, or ``None`` to keep digests in memory only.
        root: paths under it are stored relative to it (so a moved home keeps its cache).
        workers: most threads hashing at once (default: the CPUs this process may use).

    Thread-safe: one lookup runs at a time.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        root: str | os.PathLike[str] | None = None,
        workers: int | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.root = Path(root) if root is not None else None
        self.workers = workers or _cpus()
        self._rows: dict[str, _Row] | None = None
        self._dirty = False
        self._mutex = threading.Lock()
        self.hits = 0
        """Digests taken from the cache so far."""
        self.misses = 0
        """Files hashed so far."""
        self.ignored: str | None = None
        """Why the cache file was not used, when it was there but unusable."""

    @classmethod
    def for_home(cls, home: str | os.PathLike[str]) -> HashCache:
        """The cache of a home: ``<home>/run/hash-cache.json``, paths relative to the home."""
        root = Path(home)
        return cls(root / "run" / "hash-cache.json", root=root)

    @classmethod
    def in_memory(cls) -> HashCache:
        """A cache that is never written to disk."""
        return cls(None)

    def _key(self, path: Path) -> str:
        if self.root is not None:
            with contextlib.suppress(ValueError):
                return path.relative_to(self.root).as_posix()
        return str(path.absolute())

    def _load(self) -> dict[str, _Row]:
        if self._rows is None:
            self._rows = {}
            if self.path is not None:
                try:
                    # Never through a symlink: the cache is rewritten whole (the link replaced,
                    # never its target) at the next save.
                    data = read_regular(self.path, what="the hash cache")
                except UnsafeFileError as exc:
                    self.ignored = exc.detail
                    data = None
                except OSError as exc:
                    self.ignored = f"unreadable: {exc.strerror}"
                    data = None
                if data is not None:
                    try:
                        doc = msgspec.json.decode(data, type=_CacheFile)
                    except (msgspec.DecodeError, RecursionError) as exc:
                        self.ignored = f"does not parse: {str(exc)[:200]}"
                    else:
                        if doc.version == CACHE_VERSION:
                            self._rows = doc.files
                        else:
                            self.ignored = f"version {doc.version}, not {CACHE_VERSION}"
                if self.ignored is not None:
                    self._dirty = True  # rewrite it whole at the next save
        return self._rows

    def digests(self, paths: Sequence[Path]) -> list[FileDigest]:
        """The digest of each path, in order: from the cache when its stat matches, else hashed.

        Raises:
            OSError: a file that cannot be opened or read, or is a symlink or not a regular file.
        """
        with self._mutex:
            rows = self._load()
            began = time.time_ns()
            out: list[FileDigest | None] = [None] * len(paths)
            misses: list[tuple[int, int]] = []
            for i, p in enumerate(paths):
                st = os.lstat(p)
                row = rows.get(self._key(p))
                if row is not None and stat.S_ISREG(st.st_mode) and row[:5] == _stamp(st):
                    out[i] = FileDigest(row[5], row[2])
                    self.hits += 1
                else:
                    misses.append((st.st_size, i))
            misses.sort(reverse=True)  # largest first: the threads finish together
            workers = max(1, min(self.workers, len(misses), 8))
            if workers == 1:
                results = [hash_file(paths[i]) for _, i in misses]
            else:
                with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="kurahi-hash") as pool:
                    results = list(pool.map(hash_file, [paths[i] for _, i in misses]))
            for (_, i), (digest, st, stable) in zip(misses, results, strict=True):
                out[i] = digest
                self.misses += 1
                if stable and min(st.st_mtime_ns, st.st_ctime_ns) < began - RACY_NS:
                    rows[self._key(paths[i])] = (*_stamp(st), digest.sha256)
                    self._dirty = True
            return [d for d in out if d is not None]

    def save(self) -> bool:
        """Write the cache file if anything changed since it was read; returns whether it wrote.

        Entries of files that are gone, or have changed since they were hashed, are dropped.
        """
        with self._mutex:
            if self.path is None or not self._dirty:
                return False
            rows = self._load()
            for name in list(rows):
                full = Path(name) if os.path.isabs(name) or self.root is None else self.root / name
                try:
                    fresh = _stamp(os.lstat(full)) == rows[name][:5]
                except OSError:
                    fresh = False
                if not fresh:
                    del rows[name]
            data = msgspec.json.encode(_CacheFile(version=CACHE_VERSION, files=dict(sorted(rows.items()))))
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fsio.atomic_write(self.path, data + b"\n", mode=0o600)
            except OSError as exc:
                # A cache that cannot be written (a directory in its place, a full disk) only
                # costs the next manifest its speed: the manifest itself stands.
                self.ignored = f"cannot be written: {exc.strerror or exc}"
                return False
            self._dirty = False
            self.ignored = None
            return True
