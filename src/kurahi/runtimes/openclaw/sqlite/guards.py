"""What an activation into OpenClaw's SQLite store checks before it opens the store for writing.

In ``store``: it reads and puts back the store's own files (``-wal``, ``-shm``), which only the
store room touches by path.

A refusal must leave the state dir exactly as it was, every byte and every name. SQLite
itself is the difficulty: opening a WAL-mode database for writing creates ``-wal`` and
``-shm`` beside it, and closing the last connection deletes them (OpenClaw leaves both after
a clean stop), so whatever can be refused is decided before the store is opened for writing
(:func:`check_store_path`, :func:`refuse_read_only`), and a refusal found after it was
(:func:`sidecars_kept`) puts those two files back.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from kurahi.errors import SqliteStoreError

__all__ = ["check_store_path", "refuse_if_open", "refuse_read_only", "sidecars_kept"]


def check_store_path(home: Path, agent: str) -> Path:
    """The agent's store, refused when a name on the way to it (or SQLite's files beside it) is a symlink.

    Raises:
        UnsafeFileError: ``agents``, ``agents/<id>``, ``agents/<id>/agent``, the store, its
            ``-wal``, ``-shm`` or ``-journal`` is a symlink (:func:`~kurahi.fs.no_links.refuse_links`).
    """
    from kurahi.fs.no_links import refuse_links
    from kurahi.runtimes.openclaw import layout

    db = layout.store_path(home, agent)
    refuse_links(home, db.relative_to(home).as_posix(), also=("-wal", "-shm", "-journal"))
    return db


def refuse_read_only(db: Path) -> None:
    """Refuse a store SQLite could not write: the file or its folder read-only.

    SQLite opened on a read-only file still creates and then deletes ``-wal`` and ``-shm``
    beside it, so this is decided before anything is opened for writing. A file or folder
    with no write bit counts as read-only even for root, who could write it anyway: the
    owner made it so.

    Raises:
        SqliteStoreError: the store or its folder cannot (or must not) be written.
    """
    for path in (db.parent, db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not os.access(path, os.W_OK) or not mode & 0o222:
            what = "folder" if path == db.parent else "file"
            raise SqliteStoreError(
                f"the store's {what} is read-only; make it writable for the activation, then run this again; "
                "nothing was changed",
                path=path,
            )


@contextlib.contextmanager
def sidecars_kept(db: Path) -> Iterator[None]:
    """On an exception, put the store's ``-wal`` and ``-shm`` back as they were.

    SQLite deletes both when its last connection closes (and creates them when it opens),
    so a refusal found after the store was opened for writing (a turn that slipped in, a
    write that did not read back) would otherwise leave the state dir different: OpenClaw's
    empty ``-wal`` and its ``-shm`` gone. Only small files are kept (an empty ``-wal``, as
    apply requires one, and the ``-shm`` index), and only a file that is gone comes back (or
    one that was not there goes): :func:`refuse_if_open` made sure nothing else had the store open.
    """
    saved: dict[Path, tuple[bytes, int] | None] = {}
    for suffix in ("-wal", "-shm"):
        side = db.with_name(db.name + suffix)
        try:
            st = os.lstat(side)
        except FileNotFoundError:
            saved[side] = None
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size <= _SIDECAR_LIMIT and (suffix == "-shm" or st.st_size == 0):
            saved[side] = (side.read_bytes(), stat.S_IMODE(st.st_mode))
    try:
        yield
    except BaseException:
        for side, was in saved.items():
            _put_back(side, was)
        raise


_SIDECAR_LIMIT = 4 << 20


def _put_back(side: Path, was: tuple[bytes, int] | None) -> None:
    with contextlib.suppress(OSError):
        if was is None:
            if side.is_file() and not side.is_symlink():
                side.unlink()
            return
        data, mode = was
        if os.path.lexists(side):
            # Still there: whoever else has the store open keeps its index; only what the
            # closing connection deleted comes back.
            return
        tmp = side.with_name(f".{side.name}.{os.urandom(4).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.rename(tmp, side)


# SQLite's POSIX locks (src/os_unix.c): on a WAL index (-shm), byte 120 is the writer's lock
# and byte 128 (the "DMS" byte) is held shared by every connection that has the database
# open; on the database file, the pending and reserved bytes (a writer's) are at 1 GiB and
# the shared range (a reader's) follows them.
_SHM_WRITER = (120, 1)
_SHM_OPEN = (128, 1)
_DB_WRITER = (0x40000000, 2)
_DB_READERS = (0x40000002, 510)


def _holder(path: Path, start: int, length: int) -> int | None:
    """The pid of another process holding a lock on ``path``'s bytes, or ``None`` (asks with F_GETLK; takes none)."""
    import fcntl
    import struct

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, start, length, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    except OSError:
        return None
    finally:
        os.close(fd)
    kind, _, _, _, pid = struct.unpack("hhqqi4x", answer)
    return None if kind == fcntl.F_UNLCK else int(pid)


def refuse_if_open(db: Path, *, writers_only: bool = False) -> None:
    """Refuse a store another process has open (or, with ``writers_only``, is writing).

    Opening a store for writing while another process has it open changes its ``-shm``
    under that process, and a write could not be made anyway while it holds the write
    lock; asking the kernel who holds SQLite's locks changes nothing (``F_GETLK``).

    Raises:
        SqliteStoreBusyError: another process holds SQLite's lock (its pid named); nothing was changed.
    """
    from kurahi.errors import SqliteStoreBusyError

    shm = db.with_name(db.name + "-shm")
    checks = [(shm, _SHM_WRITER, "is writing to the store"), (db, _DB_WRITER, "is writing to the store")]
    if not writers_only:
        checks += [(shm, _SHM_OPEN, "has the store open"), (db, _DB_READERS, "has the store open")]
    for path, (start, length), doing in checks:
        pid = _holder(path, start, length)
        if pid is not None:
            raise SqliteStoreBusyError(
                f"another process (pid {pid}) {doing} (an OpenClaw command, a gateway, a database browser?); "
                "let it finish or stop it, then run this again; nothing was changed",
                path=db,
            )
