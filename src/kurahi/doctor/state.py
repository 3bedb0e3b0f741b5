"""Checks of the state on disk: the Kurahi home and its secrets, free space, Pi's, OpenClaw's and Claude Code's state.

Every check only looks: nothing is created, locked for writing or changed, secrets are
never read (their modes are), and no symlink is followed out of a directory being counted.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from kurahi.doctor.report import Check, Status
from kurahi.locations.dirs import Location, count_files, subdirs
from kurahi.runtimes.base import Runtime

__all__ = [
    "DISK_FAIL_BYTES",
    "DISK_WARN_BYTES",
    "check_disk",
    "check_home",
    "check_runtime",
    "check_secrets",
]

DISK_WARN_BYTES = 1024**3
"""Below 1 GiB free: a warning (a long transcript, a manifest cache and a copy need room)."""
DISK_FAIL_BYTES = 100 * 1024**2
"""Below 100 MiB free: appends may soon fail."""


def _read_only(path: Path) -> bool:
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return True
    except OSError:
        return False
    return not os.access(path, os.W_OK)


def check_home(home: Location) -> Check:
    """Where the Kurahi home is, why there, whether it exists and is writable, and what it holds."""
    root = home.path
    facts: dict[str, object] = {"path": str(root), "source": home.source, "exists": root.is_dir()}
    if not root.is_dir():
        what = "no Kurahi home" if not root.exists() else "not a directory"
        status: Status = "fail" if home.explicit else "info"
        return Check(
            "home",
            status,
            f"Kurahi home {root} ({home.source}): {what}",
            fix=f"kurahi init --home {root}",
            facts=facts,
        )
    agents = [p for p in subdirs(root / "agents") if not p.name.startswith(".")]
    sessions = sum(count_files(a / "sessions", ".jsonl", 0) for a in agents)
    facts.update(agents=len(agents), sessions=sessions, readOnly=_read_only(root))
    summary = f"Kurahi home {root} ({home.source}): {len(agents)} agents, {sessions} sessions"
    if facts["readOnly"]:
        return Check(
            "home",
            "fail",
            summary + "; read-only: nothing can be appended",
            fix=f"remount {root} read-write, or copy it to a writable place and point KURAHI_HOME there",
            facts=facts,
        )
    return Check("home", "ok", summary, facts=facts)


def _secret_problem(path: Path, what: str, *, directory: bool = False) -> tuple[str, str] | None:
    """``(problem, fix)`` for a secret file or directory others could read or replace; ``None`` if fine or absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{what} {path}: cannot be examined ({exc.strerror})", f"check {path}"
    if stat.S_ISLNK(st.st_mode):
        return f"{what} {path} is a symlink", f"replace {path} with a file of its own"
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.getuid():
        return f"{what} {path} belongs to uid {st.st_uid}, not to you", f"chown {os.getuid()} {path}"
    if directory:
        if mode & 0o022:
            return f"{what} {path} is writable by other users (mode {mode:04o})", f"chmod go-w {path}"
        return None
    if not stat.S_ISREG(st.st_mode):
        return f"{what} {path} is not a regular file", f"move {path} aside"
    if mode & 0o077:
        return f"{what} {path} is open to other users (mode {mode:04o})", f"chmod 600 {path}"
    return None


def check_secrets(root: Path) -> Check:
    """Modes of the owner token, the device registry, the signing key, the home and ``secrets/``."""
    from kurahi.resident.home import Home

    h = Home(root)
    items = [
        (h.root, "the home", True),
        (h.secrets, "secrets/", True),
        (h.token_file, "the owner token", False),
        (h.devices, "the device registry", False),
        (h.signing_key, "the signing key", False),
    ]
    problems = []
    present = []
    names = []
    for path, what, directory in items:
        if path.exists() or path.is_symlink():
            present.append(str(path))
            if not directory:
                names.append(what)
        found = _secret_problem(path, what, directory=directory)
        if found is not None:
            problems.append(found)
    facts = {"checked": present, "problems": [p for p, _ in problems]}
    if not root.is_dir():
        return Check("secrets", "info", "secrets: no home to check", facts=facts)
    if problems:
        return Check(
            "secrets",
            "fail",
            "; ".join(p for p, _ in problems),
            fix="; ".join(f for _, f in problems),
            facts=facts,
        )
    return Check("secrets", "ok", f"secrets owner-only: {', '.join(names) or 'none made yet'}", facts=facts)


def check_disk(root: Path) -> Check:
    """Free space where the home is (or would be)."""
    where = root
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        usage = shutil.disk_usage(where)
    except OSError as exc:
        return Check("disk", "warn", f"free space at {where}: unknown ({exc.strerror})", facts={"path": str(where)})
    free = usage.free
    facts = {"path": str(where), "freeBytes": free, "totalBytes": usage.total}
    text = f"{free / 1024**3:.1f} GiB free of {usage.total / 1024**3:.1f} GiB at {where}"
    if free < DISK_FAIL_BYTES:
        return Check("disk", "fail", text, fix=f"free space on the filesystem of {where}", facts=facts)
    if free < DISK_WARN_BYTES:
        return Check("disk", "warn", text, fix=f"free space on the filesystem of {where}", facts=facts)
    return Check("disk", "ok", text, facts=facts)


def check_runtime(runtime: Runtime, where: Location) -> Check:
    """A runtime's state where it keeps it: what is there, and whether a resident lost its past there."""
    root = where.path
    facts: dict[str, object] = {"path": str(root), "source": where.source, "exists": root.is_dir()}
    if not root.is_dir():
        return Check(runtime.name, "info", f"{runtime.state_words} {root} ({where.source}): none found", facts=facts)
    counts, told = runtime.inventory(root)
    facts.update(counts)
    summary = f"{runtime.state_words} {root} ({where.source}): {told}"
    own = _own_losses(runtime, root)
    if own is not None:
        # A runtime that finds its losses inside its session files: rescue lists them.
        facts["losses"] = own
        if own:
            return Check(
                runtime.name,
                "warn",
                f"{summary}; {own} loss(es): history the next resume no longer sends",
                fix=f"kurahi rescue --{runtime.name} {root}   (lists them, with the evidence)",
                facts=facts,
            )
        return Check(runtime.name, "ok", summary, facts=facts)
    if not runtime.keyed:
        return Check(runtime.name, "ok", summary, facts=facts)
    lost = _losses(root)
    facts["losses"] = lost
    if lost:
        return Check(
            runtime.name,
            "warn",
            f"{summary}; {lost} loss(es) of a resident's past (a reset or rollover the model no longer sees)",
            fix=f"kurahi rescue --{runtime.name} {root}   (lists them; `kurahi rescue apply ID` brings one back)",
            facts=facts,
        )
    return Check(runtime.name, "ok", summary, facts=facts)


def _own_losses(runtime: Runtime, root: Path) -> int | None:
    """How many losses ``runtime`` lists itself in its state (read-only); ``None`` when it lists none itself.

    A state it cannot read counts as none listed (the inventory above says what is there).
    """
    from kurahi.errors import KurahiError

    try:
        found = runtime.losses(root)
    except KurahiError:
        return None
    return None if found is None else len(found.losses)


def _losses(root: Path) -> int | None:
    """How many losses ``kurahi rescue`` would list here (read-only); ``None`` when it cannot tell."""
    from kurahi.errors import KurahiError
    from kurahi.lifecycle.rescue.losses import find_losses

    try:
        return len(find_losses(root).losses)
    except KurahiError:
        return None
