"""Where Kurahi keeps its state on this machine, and why there; the pieces every finder shares.

Each finder answers a :class:`Location`: the directory and the source of that answer (an
option, an environment variable, or the default), so ``kurahi doctor`` can say where it
looked and a user can tell which setting won. Kurahi's rule: ``--home``, else ``KURAHI_HOME``,
else the seed's ``KOLO_HOME``, else ``~/.kolo``; both variables set to different directories
is an error, not a guess. Where a foreign runtime keeps its state is that runtime's own
(:meth:`kurahi.runtimes.base.Runtime.locate`), found with :func:`env_path` and :func:`user_home`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kurahi.errors import UsageError
from kurahi.fs.os_errors import os_errors

__all__ = [
    "HOME_ENVS",
    "Location",
    "count_files",
    "env_path",
    "kurahi_home",
    "read_no_follow",
    "subdirs",
    "user_home",
    "variables",
]

HOME_ENVS = ("KURAHI_HOME", "KOLO_HOME")
"""The environment variables naming a Kurahi home, in order of precedence."""


@dataclass(frozen=True)
class Location:
    """A directory and where that answer came from."""

    path: Path
    source: str
    """``--home``, the environment variable's name, or ``default``."""

    @property
    def explicit(self) -> bool:
        """Whether someone asked for this directory (an option or a variable), rather than the default."""
        return self.source != "default"


def variables(env: Mapping[str, str] | None) -> Mapping[str, str]:
    """``env``, else the process's environment."""
    return os.environ if env is None else env


def user_home(env: Mapping[str, str]) -> Path:
    """The user's home: ``HOME`` in ``env``, else the account's."""
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def env_path(value: str, env: Mapping[str, str]) -> Path:
    """A path from a setting, ``~`` expanded against ``env``'s home."""
    if value == "~" or value.startswith("~/"):
        return user_home(env) / value[2:]
    return Path(value)


def kurahi_home(option: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Location:
    """The Kurahi home: the ``--home`` option, else ``KURAHI_HOME``, else ``KOLO_HOME``, else ``~/.kolo``.

    Raises:
        UsageError: ``KURAHI_HOME`` and ``KOLO_HOME`` name different directories.
    """
    e = variables(env)
    if option is not None and str(option) != "":
        return Location(env_path(str(option), e), "--home")
    values = {name: e[name] for name in HOME_ENVS if e.get(name)}
    if len(values) == 2:
        a, b = (env_path(v, e) for v in values.values())
        if os.path.normpath(a) != os.path.normpath(b):
            raise UsageError(
                f"KURAHI_HOME ({a}) and KOLO_HOME ({b}) name different homes; unset one of them or pass --home"
            )
    for name, value in values.items():
        return Location(env_path(value, e), name)
    return Location(user_home(e) / ".kolo", "default")


_O_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def read_no_follow(path: Path) -> bytes:
    """A state file's bytes, opened without following a symlink.

    Raises:
        UsageError: it cannot be read (a link, missing, unreadable), naming it.
    """
    with os_errors(UsageError, "cannot read", path=path):
        fd = os.open(path, _O_FLAGS)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def count_files(root: Path, suffix: str, depth: int) -> int:
    """Files named ``*suffix`` under ``root``, at most ``depth`` levels down, symlinks not followed."""
    n = 0
    stack = [(root, 0)]
    while stack:
        d, level = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=False):
                        if level < depth:
                            stack.append((Path(e.path), level + 1))
                    elif e.name.endswith(suffix) and e.is_file(follow_symlinks=False):
                        n += 1
        except OSError:
            continue
    return n


def subdirs(root: Path) -> list[Path]:
    """The folders in ``root``, sorted, symlinks not followed (none when it cannot be read)."""
    try:
        with os.scandir(root) as it:
            return sorted(Path(e.path) for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
