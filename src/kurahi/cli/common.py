"""Shared CLI plumbing: one place that turns library errors into a message and an exit code."""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

from kurahi.errors import EXIT, KurahiError

__all__ = [
    "EXIT",
    "LazyConsole",
    "console",
    "err_console",
    "fail",
    "print_json",
    "printable",
    "readable",
    "safe_streams",
    "shown",
    "stdin_files",
    "translate_errors",
    "warn",
    "write_json_bytes",
]

if TYPE_CHECKING:
    from rich.console import Console


_Command = TypeVar("_Command", bound=Callable[..., Any])


class LazyConsole:
    """A rich ``Console`` made on first use.

    Importing rich takes about 60 ms, a tenth of some commands' whole run, and a command
    that prints JSON (or fails before printing) never needs it.
    """

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr
        self._real: Console | None = None

    def get(self) -> Console:
        """The real console."""
        if self._real is None:
            from rich.console import Console

            self._real = Console(stderr=self._stderr, highlight=False)
        return self._real

    def print(self, *objects: Any, **options: Any) -> None:
        """``Console.print``."""
        self.get().print(*objects, **options)

    def rule(self, *args: Any, **options: Any) -> None:
        """``Console.rule``."""
        self.get().rule(*args, **options)


console = LazyConsole()
err_console = LazyConsole(stderr=True)


_STDIN_COPIES: dict[str, str] = {}
"""The path of each private copy of stdin (:func:`readable`) -> how messages name it."""


def _named(message: str) -> str:
    for path, name in _STDIN_COPIES.items():
        message = message.replace(path, name)
    return message


def shown(path: Any) -> str:
    """How output names ``path``: ``<stdin>`` for the private copy of stdin (:func:`readable`), else the path."""
    return _STDIN_COPIES.get(str(path), str(path))


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_OR_NEWLINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    c = match.group()
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (
        f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
    )


def printable(text: str, *, lines: bool = False) -> str:
    r"""``text`` safe to write to a terminal: each control character as its escape (``\x1b``, ``\n``).

    Keys, paths and phrases come from state a stranger may have written; raw, an escape
    sequence clears the screen or sets the window title, a newline forges a line of output,
    a bidi override reorders one. ``lines`` keeps newlines (a message of several lines of
    Kurahi's own). JSON output never goes through here: it is exact.
    """
    pattern = _CONTROL if lines else _CONTROL_OR_NEWLINE
    return pattern.sub(_escaped, text) if pattern.search(text) else text


def fail(message: str, code: int = EXIT.FAILED) -> NoReturn:
    """Print ``message`` to stderr and exit with ``code``."""
    from rich.markup import escape

    message = printable(_named(message), lines=True)
    # The message names files, keys and ids from the input: text, never rich markup.
    err_console.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
    # SystemExit rather than typer.Exit: Click turns its Exit into this anyway, and the
    # commands' fast path (kurahi.cli.fast.dispatch) runs without typer.
    raise SystemExit(code)


def warn(message: str) -> None:
    """Print ``warning: message`` to stderr.

    Plain text when stderr is not a terminal (what rich would print there too), so a
    command run by a script does not import rich just to say one line.
    """
    message = printable(_named(message), lines=True)
    if sys.stderr.isatty():
        from rich.markup import escape

        err_console.print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True)
    else:
        sys.stderr.write(f"warning: {message}\n")
        sys.stderr.flush()


@contextmanager
def translate_errors() -> Iterator[None]:
    """Turn Kurahi errors into a one-line message and the exit code their family carries."""
    try:
        yield
    except KurahiError as exc:
        fail(str(exc), exc.exit_code)


@contextmanager
def activation_errors() -> Iterator[None]:
    """:func:`translate_errors` for the commands that change live state (``activate``, ``rescue``).

    Two answers differ from the families': a SQLite store the user named that cannot be read
    is input that is not what it should be (exit 4; a busy one stays 5), and a precondition
    that no longer holds says that nothing was changed.
    """
    from kurahi.errors import PreconditionError, SqliteStoreBusyError, SqliteStoreError, SqliteStoreFullError

    with translate_errors():
        try:
            yield
        except (SqliteStoreBusyError, SqliteStoreFullError):
            raise  # busy, or a write the disk refused: as their families say
        except SqliteStoreError as exc:
            fail(str(exc), EXIT.INVALID)
        except PreconditionError as exc:
            fail(f"{exc}; the live state was left as it was", EXIT.FAILED)


def print_json(value: Any) -> None:
    r"""Write ``value`` on stdout as Node writes ``JSON.stringify(value)``: compact UTF-8, one line.

    Every command's JSON leaves through here. The bytes go to the binary stream, so the
    terminal's encoding never matters: JSON is UTF-8, and a lone surrogate in a transcript
    is written as the ``\udXXX`` escape JavaScript writes (:func:`kurahi.js.stringify.js_json`).
    """
    from kurahi.js.stringify import js_json

    write_json_bytes(js_json(value))


def write_json_bytes(data: bytes) -> None:
    """Write JSON already encoded as :func:`print_json` encodes it, and a newline, on stdout."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (a test's StringIO): the same characters
        sys.stdout.write(data.decode("utf-8") + "\n")
    else:
        buffer.write(data)  # two writes rather than a copy of a large document
        buffer.write(b"\n")
        buffer.flush()
    sys.stdout.flush()


def write_context_json(ctx: Any, source: str) -> None:
    """Write a projected context as JSON and a newline on stdout (``session context --json``).

    Where stdout is a real descriptor the JSON is streamed to it, the stored messages copied
    from the transcript a few MB at a time, never one document in memory (a live context
    can be 100 MB); elsewhere (a test's captured stream) it is built and written whole.
    """
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd < 0 or getattr(sys.stdout, "buffer", None) is None:
        write_json_bytes(ctx.to_json())
        return
    sys.stdout.flush()
    try:
        ctx.write_json(fd)
    except BrokenPipeError:
        raise
    except OSError as exc:
        # A stored message could not be read back (the file shrank or went away since it
        # was scanned); what was written so far is cut short, and the exit code says so.
        fail(f"{source}: reading the transcript failed while printing it: {exc.strerror or exc}", EXIT.FAILED)


_REPLACE = "kurahi.replace"


def _replace_unencodable(exc: UnicodeError) -> tuple[bytes, int]:
    """Codec error handler: U+FFFD for each character the stream cannot encode, ``?`` where it cannot encode that."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    try:
        # Bytes, not text: Python's UTF-8 encoder takes only ASCII text from a handler.
        mark = "\ufffd".encode(exc.encoding)
    except (UnicodeError, LookupError):
        mark = b"?"
    return mark * (exc.end - exc.start), exc.end


codecs.register_error(_REPLACE, _replace_unencodable)


def safe_streams() -> None:
    """Make stdout and stderr print what they cannot encode as a replacement character.

    Text for people comes from transcripts and state files: a lone surrogate (which
    ``JSON.parse`` accepts) cannot be encoded in UTF-8, and under ``LANG=C`` or
    ``PYTHONIOENCODING=ascii`` neither can most of the world's text. Printing it must never
    end in a traceback, on a terminal or in a pipe. The console script calls this once.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=_REPLACE)


@contextmanager
def readable(path: Any) -> Iterator[Any]:
    """``path``, or for ``-`` a private copy of stdin: every command that only reads a file takes ``-``.

    Stdin is copied to a file in a new private temporary directory (removed afterwards)
    because the readers scan by offset, on two threads, from the end: a pipe cannot be read
    that way. A terminal on stdin is refused rather than waited on.
    """
    if str(path) != "-":
        yield path
        return
    import shutil
    import tempfile
    from pathlib import Path

    if sys.stdin is None or sys.stdin.isatty():
        fail("- reads the file from stdin, which is a terminal: pipe or redirect the file in", EXIT.USAGE)
    with tempfile.TemporaryDirectory(prefix="kurahi-stdin-") as folder:
        copy = Path(folder) / "stdin"
        with open(copy, "wb") as out:
            shutil.copyfileobj(getattr(sys.stdin, "buffer", sys.stdin), out, 1 << 20)
        _STDIN_COPIES[str(copy)] = "<stdin>"
        try:
            yield copy
        finally:
            _STDIN_COPIES.pop(str(copy), None)


def stdin_files(*names: str) -> Callable[[_Command], _Command]:
    """Decorate a command so its parameters ``names`` (a path or a list of paths) take ``-`` for stdin.

    See :func:`readable`. The signature is kept (``functools.wraps``), so Typer sees the
    command's own parameters.
    """
    import functools
    from contextlib import ExitStack

    def decorate(command: _Command) -> _Command:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with ExitStack() as stack:
                for name in names:
                    value = kwargs.get(name)
                    if isinstance(value, list):
                        kwargs[name] = [stack.enter_context(readable(v)) for v in value]
                    elif value is not None:
                        kwargs[name] = stack.enter_context(readable(value))
                return command(*args, **kwargs)

        return cast("_Command", wrapper)

    return decorate
