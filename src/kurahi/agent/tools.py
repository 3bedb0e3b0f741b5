"""Built-in tools, the path fence around the workspace, and the tool registry.

A tool is a name, a JSON Schema, a ``run`` and, for side effects, an optional ``lookup``
that inspects the world to tell whether an earlier call took effect. ``write`` answers
that by comparing the file's hash with the intended content; ``memory_append`` tags each
appended block with its action id, so it can both tell and refuse to append twice.

Every path argument goes through :func:`resolve_in_workspace`: relative, no ``..``, no
NUL or backslash, names of a usable length, and its real path (symlinks resolved) inside
the workspace's real path. A file-system error becomes a :class:`ToolError` naming the
path as the model gave it, never the workspace's absolute path.
"""

from __future__ import annotations

import abc
import contextlib
import datetime as dt
import fcntl
import hashlib
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kurahi.agent.types import ToolOutput, ToolSpec
from kurahi.errors import PathRefusedError, ToolError
from kurahi.fs import durable as fsio
from kurahi.fs.leftovers import is_leftover_name
from kurahi.fs.os_errors import os_error, os_errors
from kurahi.js.stringify import utf8_bytes

__all__ = [
    "BUILTIN_TOOLS",
    "ListTool",
    "MemoryAppendTool",
    "ReadTool",
    "Tool",
    "ToolContext",
    "WriteTool",
    "resolve_in_workspace",
]

_MAX_READ = 256 * 1024
_MAX_WRITE = 1024 * 1024
_MAX_PATH = 1024
"""Longest path argument, in UTF-8 bytes."""
_MAX_NAME = 255
"""Longest single name in a path argument, in UTF-8 bytes (``NAME_MAX``)."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool call may use."""

    workspace: Path
    action_id: str
    """``<sessionId>:<toolCallId>``: the idempotency key."""


class Tool(abc.ABC):
    """A tool the model can call.

    Attributes:
        name: the name the model uses.
        description: for the model.
        parameters: JSON Schema of the arguments.
        side_effecting: whether it changes the world (then the ledger records it).
    """

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {}  # noqa: RUF012 - class-level constant, never mutated
    side_effecting: bool = False

    def spec(self) -> ToolSpec:
        """How the model is told about this tool."""
        return ToolSpec(self.name, self.description, self.parameters)

    @abc.abstractmethod
    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Do the call. Raise :class:`ToolError` for a failure the model should read."""

    def lookup(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput | None:
        """Tell from the world whether the call with ``ctx.action_id`` took effect.

        Returns:
            The result to record, or ``None`` when the world cannot tell (the default).
        """
        return None


def resolve_in_workspace(workspace: Path, rel: Any, *, tool: str = "") -> Path:
    """The real path of ``rel`` inside ``workspace``.

    Raises:
        PathRefusedError: not a string, empty, absolute, with ``..``, NUL or a backslash, too
            long, or (after symlinks are resolved) outside the workspace.
    """
    if not isinstance(rel, str) or not rel.strip():
        raise PathRefusedError("path must be a non-empty string", tool=tool)
    encoded = rel.encode("utf-8", "surrogatepass")
    if len(encoded) > _MAX_PATH or any(len(part) > _MAX_NAME for part in encoded.split(b"/")):
        raise PathRefusedError(
            f"path {rel[:60]!r}... is too long (at most {_MAX_PATH} bytes, {_MAX_NAME} per name)", tool=tool
        )
    if "\x00" in rel or os.path.isabs(rel) or rel.startswith("~"):
        raise PathRefusedError(f"path {rel!r} must be relative to the workspace", tool=tool)
    if "\\" in rel:
        raise PathRefusedError(f"path {rel!r} may not contain a backslash; use '/'", tool=tool)
    if ".." in Path(rel).parts:
        raise PathRefusedError(f"path {rel!r} may not contain '..'", tool=tool)
    root = workspace.resolve()
    try:
        target = (root / rel).resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError up to Python 3.12)
        raise PathRefusedError(f"path {rel!r} cannot be resolved (a symlink loop?)", tool=tool) from None
    if target != root and root not in target.parents:
        raise PathRefusedError(f"path {rel!r} leaves the workspace", tool=tool)
    return target


@contextlib.contextmanager
def _fs_errors(rel: Any, tool: str) -> Iterator[None]:
    """Turn a file-system error into a :class:`ToolError` about ``rel`` (the error's own text names absolute paths)."""
    with os_errors(ToolError, "", path=rel, tool=tool):
        yield


def _make_dirs(d: Path) -> None:
    """Create ``d`` and its missing parents, each 0700 (``mkdir -p`` gives parents the umask's mode)."""
    missing = []
    while not d.is_dir():
        missing.append(d)
        d = d.parent
    for m in reversed(missing):
        m.mkdir(mode=0o700, exist_ok=True)


def _str_arg(args: dict[str, Any], key: str, tool: str, default: str | None = None) -> str:
    value = args.get(key, default)
    if not isinstance(value, str):
        raise ToolError(f"argument {key!r} must be a string", tool=tool)
    return value


class ReadTool(Tool):
    """Read a UTF-8 text file of the workspace."""

    name = "read"
    description = "Read a text file in the workspace. Argument: path (relative)."
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}  # noqa: RUF012

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Return the file's text (at most 256 KiB)."""
        p = resolve_in_workspace(ctx.workspace, args.get("path"), tool=self.name)
        try:
            # O_NONBLOCK: a FIFO planted in the workspace must not hang the tool.
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            raise ToolError(f"{args['path']}: no such file", tool=self.name) from None
        except IsADirectoryError:
            raise ToolError(f"{args['path']}: is a directory; use list", tool=self.name) from None
        except OSError as exc:
            raise os_error(ToolError, "", exc, path=args["path"], tool=self.name) from None
        try:
            with _fs_errors(args["path"], self.name):
                mode = os.fstat(fd).st_mode
                if stat.S_ISDIR(mode):
                    raise ToolError(f"{args['path']}: is a directory; use list", tool=self.name)
                if not stat.S_ISREG(mode):
                    raise ToolError(f"{args['path']}: not a regular file", tool=self.name)
                data = b""
                while len(data) <= _MAX_READ and (chunk := os.read(fd, _MAX_READ + 1 - len(data))):
                    data += chunk
        finally:
            os.close(fd)
        if len(data) > _MAX_READ:
            raise ToolError(f"{args['path']}: larger than {_MAX_READ} bytes", tool=self.name)
        return ToolOutput(data.decode("utf-8", "replace"))


class ListTool(Tool):
    """List a workspace directory."""

    name = "list"
    description = "List a directory in the workspace. Argument: path (relative, default '.')."
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}}  # noqa: RUF012

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Names one per line, directories with a trailing ``/``."""
        p = resolve_in_workspace(ctx.workspace, args.get("path", "."), tool=self.name)
        if not p.is_dir():
            raise ToolError(f"{args.get('path', '.')}: not a directory", tool=self.name)
        with _fs_errors(args.get("path", "."), self.name):
            # An interrupted write's temporary file is not the resident's (the gateway removes it at start).
            names = sorted(c.name + ("/" if c.is_dir() else "") for c in p.iterdir() if not is_leftover_name(c.name))
        return ToolOutput("\n".join(names) if names else "(empty)")


class WriteTool(Tool):
    """Write a whole file in the workspace, atomically."""

    name = "write"
    description = "Write a text file in the workspace (replaces it). Arguments: path, content."
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    }
    side_effecting = True

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Replace the file with ``content`` (temp file, fsync, rename)."""
        content = utf8_bytes(_str_arg(args, "content", self.name))
        if len(content) > _MAX_WRITE:
            raise ToolError(f"content larger than {_MAX_WRITE} bytes", tool=self.name)
        p = resolve_in_workspace(ctx.workspace, args.get("path"), tool=self.name)
        if p == ctx.workspace.resolve() or p.is_dir():
            raise ToolError(f"{args['path']}: is a directory; write names a file", tool=self.name)
        with _fs_errors(args["path"], self.name):
            _make_dirs(p.parent)
            fsio.atomic_write(p, content, mode=0o644)
        digest = hashlib.sha256(content).hexdigest()
        return ToolOutput(f"wrote {len(content)} bytes to {args['path']} (sha256 {digest[:16]})")

    def lookup(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput | None:
        """The file holds the intended bytes: written. It does not: not written (safe to retry)."""
        try:
            content = utf8_bytes(_str_arg(args, "content", self.name))
            p = resolve_in_workspace(ctx.workspace, args.get("path"), tool=self.name)
        except ToolError:
            return None
        try:
            actual = hashlib.sha256(p.read_bytes()).hexdigest()
        except FileNotFoundError:
            actual = None
        except OSError:
            return None
        intended = hashlib.sha256(content).hexdigest()
        if actual == intended:
            return ToolOutput(
                f"wrote {len(content)} bytes to {args['path']} (sha256 {intended[:16]}; "
                "verified after a restart: the file holds the intended content)"
            )
        return ToolOutput(
            f"not written: after a restart {args['path']} does not hold the intended content "
            f"({'missing' if actual is None else 'sha256 ' + actual[:16]}); the write did not take effect",
            is_error=True,
        )


MEMORY_LOCK_WAIT = 2.0
"""Seconds a ``memory_append`` run or lookup waits for the memory lock before it gives up (not run; unknown)."""


class MemoryAppendTool(Tool):
    """Append a note to a memory file (``memory/*.md``), once per action."""

    name = "memory_append"
    description = "Append a note to memory. Arguments: text, file (optional, e.g. 'notes.md'; default today's date)."
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"text": {"type": "string"}, "file": {"type": "string"}},
        "required": ["text"],
    }
    side_effecting = True

    def _target(self, args: dict[str, Any], ctx: ToolContext) -> Path:
        name = _str_arg(args, "file", self.name, dt.date.today().isoformat() + ".md")
        if "/" in name or "\\" in name or not name.endswith(".md"):
            raise PathRefusedError(f"file {name!r} must be a plain name ending in .md", tool=self.name)
        return resolve_in_workspace(ctx.workspace, "memory/" + name, tool=self.name)

    def _tag(self, ctx: ToolContext) -> bytes:
        return f"<!-- kurahi:action {ctx.action_id} -->".encode()

    def _void(self, ctx: ToolContext) -> bytes:
        return f"<!-- kurahi:void {ctx.action_id} -->".encode()

    @contextlib.contextmanager
    def _locked(self, p: Path) -> Iterator[bytes]:
        """The memory file's bytes (empty if none), with every run and lookup of memory kept out meanwhile.

        The lock is ``flock`` on the ``memory`` directory itself, which the gateways sharing
        a workspace share too: a lookup by a gateway settling a call (not found: "not done")
        and a late run of the same call by a gateway that lost the session (stalled, its
        database away) happen one after the other, never interleaved. It is waited for
        :data:`MEMORY_LOCK_WAIT` seconds at most: a process stopped while holding it must
        not stop the others.

        Raises:
            TimeoutError: the lock was not had in time.
        """
        _make_dirs(p.parent)
        fd = os.open(p.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            deadline = time.monotonic() + MEMORY_LOCK_WAIT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        why = f"memory/ is locked by another process for over {MEMORY_LOCK_WAIT:g} s"
                        raise TimeoutError(why) from None
                    time.sleep(0.01)
            try:
                held = p.read_bytes()
            except FileNotFoundError:
                held = b""
            yield held
        finally:
            os.close(fd)  # closing the descriptor lets the lock go

    def _append(self, p: Path, block: bytes) -> None:
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fsio.write_all(fd, block)
            fsio.ops.fdatasync(fd)
        finally:
            os.close(fd)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Append ``text`` and a tag naming the action; a second call with the same action id is a no-op.

        A call a lookup has already settled as not done (its void mark is in the file) is not
        run: the transcript says it was not done, and so it stays.
        """
        text = _str_arg(args, "text", self.name)
        p = self._target(args, ctx)
        with _fs_errors(f"memory/{p.name}", self.name):
            try:
                with self._locked(p) as held:
                    return self._append_once(p, text, held, ctx)
            except TimeoutError as exc:
                return ToolOutput(f"not appended: {exc}", is_error=True)

    def _append_once(self, p: Path, text: str, held: bytes, ctx: ToolContext) -> ToolOutput:
        if self._tag(ctx) in held:
            return ToolOutput(f"already appended to memory/{p.name} by this action")
        if self._void(ctx) in held:
            return ToolOutput(
                f"not appended: this call was settled as not done before it ran (memory/{p.name})", is_error=True
            )
        self._append(p, utf8_bytes(text.rstrip("\n")) + b"\n" + self._tag(ctx) + b"\n")
        return ToolOutput(f"appended {len(text)} characters to memory/{p.name}")

    def lookup(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput | None:
        """The tag is in the file: appended. It is not: not appended, and it never will be (a void mark).

        The mark makes "not appended" stay true: a run of this call that was still on its way
        (a gateway stalled between writing its intent and running it) finds it and does nothing.
        """
        try:
            p = self._target(args, ctx)
        except ToolError:
            return None
        try:
            with self._locked(p) as held:
                if self._tag(ctx) in held:
                    return ToolOutput(f"appended to memory/{p.name} (verified after a restart)")
                if self._void(ctx) not in held:
                    self._append(p, self._void(ctx) + b"\n")
        except (OSError, TimeoutError):  # cannot tell (TimeoutError is an OSError; named for the reader)
            return None
        return ToolOutput(f"not appended: memory/{p.name} has no block from this action", is_error=True)


BUILTIN_TOOLS: tuple[type[Tool], ...] = (ReadTool, WriteTool, ListTool, MemoryAppendTool)
"""The tools every agent has (subject to its tool policy)."""
