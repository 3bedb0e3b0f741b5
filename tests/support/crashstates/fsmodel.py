"""The crash-state generator: what a power cut may leave of a recorded protocol, in two models.

The recording's operations are first resolved against a simulated file system (inodes and
directory entries), so an operation means the same file whatever else survives. A *crash
point* is every place just before a durable operation (each ``fsync``/``fdatasync`` of a file
or directory) and the end of the run. At a crash point, each operation issued so far is either
durable (an fsync that returned covers it) or pending; a crash state is the snapshot at the
begin mark, plus every durable operation, plus a choice of the pending ones, applied in
program order. The acknowledgements before the crash point say what must be there.

``ext4`` (ext4 ``data=ordered``, the default mount, as ALICE's study measured it, but assuming
less where the kernel gives more):

- an ``fsync``/``fdatasync`` of a file that returned makes that file's data and size durable
  (not its name: a new file's directory entry is durable only after a directory fsync);
- directory operations (create, mkdir, link, unlink, rename) are each atomic and reach the disk
  in program order, across all directories (one journal): a crash keeps a prefix of them. An
  ``fsync`` of a directory makes every directory operation before it durable;
- file data is not ordered with directory operations or with other files (delayed allocation):
  a file's unsynced writes and truncations survive as a prefix of that file's own sequence, the
  last write possibly cut at a 4 KiB page boundary of the file, never with garbage or zeros
  (ordered mode writes the data before the size that exposes it). ext4 also flushes a file
  renamed over another (``auto_da_alloc``) and commits all earlier directory operations on any
  fsync; neither is assumed here.

``strict`` (anything unsynced may be lost, torn at any byte, or reordered):

- an ``fsync``/``fdatasync`` of a file makes its data and size durable; an ``fsync`` of a
  directory makes the directory operations on its entries before it durable (a rename counts
  as one operation); nothing else is durable;
- every pending operation independently survives or not; a surviving write may be cut at any
  byte, or, when it extended the file, leave the new size with zeros where its bytes were (the
  size reached the disk, the data did not). Surviving operations are applied in program order
  (two operations on the same name are not swapped).

Both models keep each directory operation atomic (a rename leaves the old name or the new one)
and ignore what never reaches the directory (file modes, times, locks held).
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

from support.crashstates.fstrace import Op, Recording

PAGE = 4096


@dataclass(frozen=True)
class ROp:
    """An operation resolved to inodes: ``dent`` (entries set), ``data``, ``trunc``, ``fsync``, ``ack``."""

    kind: str
    ino: int = -1
    entries: tuple[tuple[int, str, int | None], ...] = ()
    """For ``dent``: (directory inode, name, inode or ``None`` to remove), applied together."""
    new: tuple[tuple[int, str], ...] = ()
    """For ``dent``: inodes it brings into existence, with their kind (``f`` or ``d``)."""
    offset: int = 0
    data: bytes = b""
    extends: bool = False
    """For ``data``: the write made the file longer."""
    is_dir: bool = False
    label: str = ""


@dataclass
class FsState:
    """Inodes: kinds, file bytes, directory entries. Inode 0 is the studied directory."""

    kinds: dict[int, str] = field(default_factory=lambda: {0: "d"})
    data: dict[int, bytearray] = field(default_factory=dict)
    dirs: dict[int, dict[str, int]] = field(default_factory=lambda: {0: {}})

    def copy(self) -> FsState:
        return FsState(
            dict(self.kinds),
            {k: bytearray(v) for k, v in self.data.items()},
            {k: dict(v) for k, v in self.dirs.items()},
        )

    def lookup(self, path: str) -> int:
        ino = 0
        for part in [p for p in path.split("/") if p]:
            ino = self.dirs[ino][part]
        return ino

    def parent(self, path: str) -> tuple[int, str]:
        head, _, name = path.rpartition("/")
        return self.lookup(head), name

    def apply(self, op: ROp, cut: int | None = None, zeros: bool = False) -> None:
        """Apply ``op``; a write keeps only its first ``cut`` bytes, or zeros in place of them."""
        if op.kind == "dent":
            for ino, kind in op.new:
                self.kinds[ino] = kind
                if kind == "d":
                    self.dirs.setdefault(ino, {})
                else:
                    self.data.setdefault(ino, bytearray())
            for d, name, ino in op.entries:
                if ino is None:
                    self.dirs.setdefault(d, {}).pop(name, None)
                else:
                    self.dirs.setdefault(d, {})[name] = ino
        elif op.kind == "data":
            buf = self.data.setdefault(op.ino, bytearray())
            chunk = op.data if cut is None else op.data[:cut]
            if zeros:
                chunk = bytes(len(chunk))
            if len(buf) < op.offset:
                buf.extend(bytes(op.offset - len(buf)))
            buf[op.offset : op.offset + len(chunk)] = chunk
        elif op.kind == "trunc":
            buf = self.data.setdefault(op.ino, bytearray())
            del buf[op.offset :]
            buf.extend(bytes(op.offset - len(buf)))

    def tree(self) -> dict[str, bytes | None]:
        """Every path reachable from the root: file bytes, or ``None`` for a directory."""
        out: dict[str, bytes | None] = {}
        todo = [(0, "")]
        while todo:
            d, prefix = todo.pop()
            for name, ino in self.dirs.get(d, {}).items():
                path = f"{prefix}{name}"
                if self.kinds.get(ino) == "d":
                    out[path] = None
                    todo.append((ino, path + "/"))
                else:
                    out[path] = bytes(self.data.get(ino, b""))
        return out


def resolve(rec: Recording) -> tuple[FsState, list[ROp], FsState]:
    """The state at the begin mark, the operations resolved to inodes, and the live state at the end."""
    base = FsState()
    next_ino = [1]

    def alloc() -> int:
        next_ino[0] += 1
        return next_ino[0]

    for d in sorted(rec.dirs, key=lambda p: p.count("/")):
        if d:
            ino = alloc()
            base.kinds[ino] = "d"
            base.dirs[ino] = {}
            parent, name = base.parent(d)
            base.dirs[parent][name] = ino
    for path, content in rec.files.items():
        if path in rec.links:
            continue
        ino = alloc()
        base.kinds[ino] = "f"
        base.data[ino] = bytearray(content)
        parent, name = base.parent(path)
        base.dirs[parent][name] = ino
    for path, first in rec.links.items():
        parent, name = base.parent(path)
        base.dirs[parent][name] = base.lookup(first)
    live = base.copy()
    out: list[ROp] = []
    for op in rec.ops:
        r = _resolve_one(live, op, alloc)
        live.apply(r)
        out.append(r)
    return base, out, live


def _resolve_one(live: FsState, op: Op, new_ino: Callable[[], int]) -> ROp:
    if op.kind in ("create", "mkdir"):
        d, name = live.parent(op.path)
        ino = new_ino()
        return ROp("dent", entries=((d, name, ino),), new=((ino, "f" if op.kind == "create" else "d"),))
    if op.kind in ("unlink", "rmdir"):
        d, name = live.parent(op.path)
        return ROp("dent", entries=((d, name, None),))
    if op.kind in ("rename", "link"):
        sd, sn = live.parent(op.path)
        ino = live.dirs[sd][sn]
        dd, dn = live.parent(op.dest)
        if op.kind == "link":
            return ROp("dent", entries=((dd, dn, ino),))
        if (sd, sn) == (dd, dn):
            return ROp("dent", entries=((dd, dn, ino),))
        return ROp("dent", entries=((dd, dn, ino), (sd, sn, None)))
    if op.kind == "write":
        ino = live.lookup(op.path)
        size = len(live.data.get(ino, b""))
        return ROp("data", ino=ino, offset=op.offset, data=op.data, extends=op.offset + len(op.data) > size)
    if op.kind == "truncate":
        return ROp("trunc", ino=live.lookup(op.path), offset=op.offset)
    if op.kind == "fsync":
        ino = live.lookup(op.path)
        return ROp("fsync", ino=ino, is_dir=live.kinds[ino] == "d")
    if op.kind == "ack":
        return ROp("ack", label=op.label)
    raise ValueError(f"unknown op {op.kind}")


@dataclass(frozen=True)
class CrashState:
    """One state a power cut may leave: the files, and what had been acknowledged before it."""

    point: int
    """Operations issued before the cut."""
    acks: tuple[str, ...]
    tree: dict[str, bytes | None]
    digest: str


def _durable(ops: list[ROp], t: int, model: str) -> set[int]:
    """Indices below ``t`` that fsyncs before ``t`` made durable."""
    durable: set[int] = set()
    last_dir_sync = -1
    for j in range(t):
        op = ops[j]
        if op.kind != "fsync":
            continue
        if op.is_dir and model == "ext4":
            last_dir_sync = j
        for i in range(j):
            o = ops[i]
            if (not op.is_dir and o.kind in ("data", "trunc") and o.ino == op.ino) or (
                op.is_dir and model == "strict" and o.kind == "dent" and any(d == op.ino for d, _, _ in o.entries)
            ):
                durable.add(i)
    durable |= {i for i in range(last_dir_sync) if ops[i].kind == "dent"}
    return durable


def crash_points(ops: list[ROp]) -> list[int]:
    """Just before every fsync, and after the last operation."""
    return [i for i, op in enumerate(ops) if op.kind == "fsync"] + [len(ops)]


def _digest(tree: dict[str, bytes | None]) -> str:
    h = hashlib.sha256()
    for path in sorted(tree):
        content = tree[path]
        h.update(path.encode() + (b"/" if content is None else b"\0" + hashlib.sha256(content).digest()))
    return h.hexdigest()


Choice = tuple[int, int | None, bool]
"""An operation index that survives, the bytes of it kept (``None``: all) and whether they read as zeros."""


def _ext4_choices(ops: list[ROp], pending: list[int]) -> list[list[list[Choice]]]:
    """Per group (directory operations, then each file's data), the allowed ways it survives."""
    meta = [i for i in pending if ops[i].kind == "dent"]
    groups: list[list[list[Choice]]] = [[[(i, None, False) for i in meta[:k]] for k in range(len(meta) + 1)]]
    by_ino: dict[int, list[int]] = {}
    for i in pending:
        if ops[i].kind in ("data", "trunc"):
            by_ino.setdefault(ops[i].ino, []).append(i)
    for seq in by_ino.values():
        options: list[list[Choice]] = []
        for k in range(len(seq) + 1):
            whole = [(i, None, False) for i in seq[:k]]
            options.append(whole)
            if k < len(seq) and ops[seq[k]].kind == "data":
                w = ops[seq[k]]
                first = (w.offset // PAGE + 1) * PAGE
                for boundary in range(first, w.offset + len(w.data), PAGE):
                    options.append([*whole, (seq[k], boundary - w.offset, False)])
        groups.append(options)
    return groups


def _tear_points(ops: list[ROp], kept: list[int]) -> list[tuple[int, int]]:
    """For each surviving write, how many torn variants it has: a cut at each byte, and zeroed."""
    return [(i, len(ops[i].data) - 1 + int(ops[i].extends)) for i in kept if ops[i].kind == "data"]


def _torn(ops: list[ROp], kept: list[int], w: int, k: int) -> list[Choice]:
    """The ``k``-th torn variant of write ``w``: cut after ``k + 1`` bytes, or zeroed past the cuts."""
    cut, zeros = (k + 1, False) if k < len(ops[w].data) - 1 else (None, True)
    return [(i, cut, zeros) if i == w else (i, None, False) for i in kept]


def _strict_tears(ops: list[ROp], subsets: list[list[int]], spare: int, rng: random.Random) -> Iterator[list[Choice]]:
    """Torn variants of the subsets: all of them when they fit in ``spare``, else ``spare`` drawn."""
    points = [(s, w, n) for s, kept in enumerate(subsets) for w, n in _tear_points(ops, kept) if n > 0]
    total = sum(n for _, _, n in points)
    if total <= spare:
        for s, w, n in points:
            for k in range(n):
                yield _torn(ops, subsets[s], w, k)
        return
    weights = [n for _, _, n in points]
    for s, w, n in rng.choices(points, weights=weights, k=spare):
        yield _torn(ops, subsets[s], w, rng.randrange(n))


def generate(rec: Recording, model: str, *, budget: int = 64, seed: int = 0, tears: int = 2) -> Iterator[CrashState]:
    """Every distinct crash state of ``rec`` in ``model`` (``ext4`` or ``strict``).

    At each crash point every allowed choice is taken when there are at most ``budget`` of
    them; beyond that ``budget`` are drawn at random (with ``seed``), always with the two
    extremes (nothing pending survives, everything does). In the strict model each choice of
    surviving operations is tried whole, then with one write torn at each byte or zeroed, as
    far as the budget goes (at least ``tears`` torn variants per choice).
    """
    base, ops, _live = resolve(rec)
    rng = random.Random(seed)
    seen: set[tuple[tuple[str, ...], str]] = set()
    for t in crash_points(ops):
        durable = _durable(ops, t, model)
        pending = [i for i in range(t) if i not in durable and ops[i].kind in ("dent", "data", "trunc")]
        acks = tuple(op.label for op in ops[:t] if op.kind == "ack")
        for choice in _choices(ops, pending, model, budget, rng, tears):
            state = base.copy()
            cut = {i: (c, z) for i, c, z in choice}
            for i in range(t):
                if i in durable:
                    state.apply(ops[i])
                elif i in cut:
                    state.apply(ops[i], *cut[i])
            tree = state.tree()
            digest = _digest(tree)
            if (acks, digest) in seen:
                continue
            seen.add((acks, digest))
            yield CrashState(t, acks, tree, digest)


def _choices(
    ops: list[ROp], pending: list[int], model: str, budget: int, rng: random.Random, tears: int
) -> Iterator[list[Choice]]:
    if model == "ext4":
        groups = _ext4_choices(ops, pending)
        total = 1
        for g in groups:
            total *= len(g)
        if total <= budget:
            for combo in product(*groups):
                yield [c for part in combo for c in part]
            return
        yield [c for g in groups for c in g[0]]
        yield [c for g in groups for c in g[-1]]
        for _ in range(budget - 2):
            yield [c for g in groups for c in rng.choice(g)]
        return
    # Strict: every subset of the pending operations (sampled beyond the budget), then torn
    # variants of them (a write cut at each byte, or zeroed) until the budget is spent:
    # ``tears`` per subset at least when there are more than the budget allows.
    n = len(pending)
    if n <= 16 and (1 << n) <= budget:
        subsets = [[pending[b] for b in range(n) if mask >> b & 1] for mask in range(1 << n)]
    else:
        subsets = [[], list(pending)] + [
            [i for i in pending if rng.random() < 0.5] for _ in range(max(0, budget // (tears + 1) - 2))
        ]
    yield from ([(i, None, False) for i in kept] for kept in subsets)
    yield from _strict_tears(ops, subsets, max(budget - len(subsets), tears * len(subsets)), rng)


def materialize(tree: dict[str, bytes | None], where: Path) -> None:
    """Write a crash state's files into the empty directory ``where``."""
    for path in sorted(tree, key=lambda p: p.count("/")):
        target = where / path
        content = tree[path]
        if content is None:
            target.mkdir(mode=0o700, exist_ok=True)
        else:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, content)
            finally:
                os.close(fd)
