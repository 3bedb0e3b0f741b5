"""Every file Kurahi reads from a home, and the ways a file can be damaged, for the generated sweep.

:data:`HOME_FILES` lists each file of a lived-in home (made once by :func:`lived_in_home`,
which drives a real gateway: chat turns with tool calls, a job, a paired device, a config
apply, a continuity manifest) with the scope of what depends on it. :data:`DAMAGES` are the
ways to break one: a symlink to a copy outside the home, a directory in its place, emptied,
cut in the middle, values of the wrong type, nested 100,000 deep, invalid UTF-8.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Scope = Literal["home", "agent", "session", "record", "cache"]
"""What depends on the file: the gateway may refuse to start only for ``home`` and ``agent``."""

DEEP = b"[" * 100_000 + b"]" * 100_000


@dataclass(frozen=True)
class HomeFile:
    """One file of the home."""

    rel: str
    """Path under the home (``{session}`` is the main session's transcript)."""
    kind: Literal["json", "jsonl", "text"]
    scope: Scope


HOME_FILES = [
    HomeFile("config.json", "json", "home"),
    HomeFile("devices.json", "json", "home"),
    HomeFile("secrets/gateway.token", "text", "home"),
    HomeFile("identity/continuity-signing.json", "json", "home"),
    HomeFile("run/hash-cache.json", "json", "cache"),
    HomeFile("run/gateway.lock", "json", "home"),
    HomeFile("audit/chain.jsonl", "jsonl", "home"),
    HomeFile("agents/alice/sessions/sessions.json", "json", "agent"),
    HomeFile("agents/alice/sessions/{session}", "jsonl", "session"),
    HomeFile("agents/alice/actions/ledger.jsonl", "jsonl", "record"),
    HomeFile("agents/alice/jobs/jobs.jsonl", "jsonl", "record"),
    HomeFile("agents/alice/queue/queue.jsonl", "jsonl", "record"),
    HomeFile("agents/alice/workspace/IDENTITY.md", "text", "session"),
    HomeFile("agents/alice/workspace/SOUL.md", "text", "session"),
    HomeFile("agents/alice/workspace/AGENTS.md", "text", "session"),
    HomeFile("agents/alice/workspace/MEMORY.md", "text", "session"),
    HomeFile("agents/alice/workspace/memory/notes.md", "text", "session"),
    HomeFile("agents/alice/workspace/todo.md", "text", "session"),
]
"""Every file a lived-in home holds that Kurahi reads back."""


def _wrong(value: Any) -> Any:
    """A value of another JSON type."""
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, int | float):
        return "abc"
    if isinstance(value, str):
        return 5
    if isinstance(value, list):
        return {"x": 1}
    if isinstance(value, dict):
        return [1.5]
    return {"null": True}


def _records(v: Any) -> bool:
    """A list of objects (the devices of a registry): changed inside, one record."""
    return isinstance(v, list) and bool(v) and isinstance(v[0], dict)


def _wrong_types(doc: Any) -> Any:
    """The document with every value one level down replaced by one of another type."""
    if isinstance(doc, dict):
        return {
            k: (_wrong_types(v) if isinstance(v, list) and v and isinstance(v[0], dict) else _wrong(v))
            for k, v in doc.items()
        }
    if isinstance(doc, list):
        return [_wrong_types(doc[0]) if doc else 5, *doc[1:]]
    return _wrong(doc)


def _last_record(data: bytes, change: Callable[[bytes], bytes]) -> bytes:
    """JSONL: change the last complete line only (one record)."""
    lines = data.rstrip(b"\n").split(b"\n")
    lines[-1] = change(lines[-1])
    return b"\n".join(lines) + b"\n"


def _bad_utf8(data: bytes) -> bytes:
    at = data.find(b'"', 1)
    at = at + 1 if at > 0 else len(data) // 2
    return data[:at] + b"\xff\xfe\xc0" + data[at:]


def _content_damage(name: str, kind: str, data: bytes) -> bytes | None:
    """New bytes for a content damage; ``None`` where it means nothing for this kind of file."""
    if name == "empty":
        return b""
    if name == "truncated":
        return data[: max(1, len(data) // 2 + 1)] if data else b"{"
    if name == "invalid-utf8":
        return _last_record(data, _bad_utf8) if kind == "jsonl" else _bad_utf8(data)
    if kind == "text":
        return None  # plain text has no types and no nesting
    if name == "wrong-types":
        if kind == "json":
            return json.dumps(_wrong_types(json.loads(data))).encode()
        return _last_record(data, lambda line: json.dumps(_wrong_types(json.loads(line))).encode())
    if name == "deep-nesting":
        return DEEP if kind == "json" else data + DEEP + b"\n"
    raise AssertionError(name)


DAMAGES = ["symlink", "directory", "empty", "truncated", "wrong-types", "deep-nesting", "invalid-utf8"]


def applies(f: HomeFile, damage: str) -> bool:
    """Whether ``damage`` means something for ``f`` (types and nesting mean nothing for plain text)."""
    return not (f.kind == "text" and damage in ("wrong-types", "deep-nesting"))


def damage_file(path: Path, kind: str, damage: str, outside: Path) -> Path | None:
    """Damage ``path`` in place; for ``symlink``, returns the target (a copy outside the home)."""
    data = path.read_bytes()
    mode = os.stat(path).st_mode & 0o777
    if damage == "symlink":
        # The link points at an intact copy, so a reader that follows it would succeed: only
        # refusing to follow (or leaving the target alone) passes.
        # A secret's copy sits in a ``secrets/`` folder of its own: the suite's leak scan
        # rightly flags a token anywhere else.
        where = outside / "secrets" if "secrets" in path.parts else outside
        where.mkdir(exist_ok=True, mode=0o700)
        target = where / (path.name + ".target")
        target.write_bytes(data)
        os.chmod(target, 0o644 if mode & 0o077 else mode)
        os.utime(target, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
        path.unlink()
        os.symlink(target, path)
        return target
    if damage == "directory":
        path.unlink()
        path.mkdir(mode=0o700)
        (path / "inside").write_text("x")
        return None
    new = _content_damage(damage, kind, data)
    assert new is not None, (path, damage)
    path.write_bytes(new)
    os.chmod(path, mode)
    return None


def snapshot(directory: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under ``directory``: bytes, mode, mtime (to prove nothing outside the home changed)."""
    out = {}
    for p in sorted(directory.rglob("*")):
        if p.is_file() and not p.is_symlink():
            st = os.stat(p)
            out[str(p)] = (p.read_bytes(), st.st_mode, st.st_mtime_ns)
    return out


def copy_home(src: Path, dst: Path) -> None:
    """A copy of a home, modes kept, symlinks copied as links."""
    shutil.copytree(src, dst, symlinks=True)
