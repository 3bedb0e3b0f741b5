"""``kurahi mcp``: serve one state's history to an agent over MCP (stdio, or Streamable HTTP)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import typer

from kurahi.cli.common import EXIT, fail, translate_errors

__all__ = ["mcp_command"]

TOKEN_ENV = "KURAHI_MCP_TOKEN"
"""The environment variable holding the HTTP bearer token (never an argument: argv is public)."""


MIN_TOKEN = 16
"""Characters a bearer token needs, from either route (``openssl rand -hex 24`` gives 48)."""
_MAX_TOKEN_FILE = 4096


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a plain file"


def _read_token_file(path: Path) -> str:
    """The token in ``path``, a regular file: opened without blocking, so a FIFO or device is refused at once."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        fail(f"--token-file {path}: cannot be opened ({exc.strerror or exc.__class__.__name__})", EXIT.NOT_FOUND)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            fail(f"--token-file {path}: not a regular file ({_kind(mode)}); put the token in a file", EXIT.USAGE)
        data = os.read(fd, _MAX_TOKEN_FILE + 1)
    except OSError as exc:
        fail(f"--token-file {path}: cannot be read ({exc.strerror or exc.__class__.__name__})", EXIT.NOT_FOUND)
    finally:
        os.close(fd)
    if len(data) > _MAX_TOKEN_FILE:
        fail(f"--token-file {path}: more than {_MAX_TOKEN_FILE:,} bytes; it should hold the token alone", EXIT.USAGE)
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        fail(f"--token-file {path}: not UTF-8 text", EXIT.USAGE)


def _token(token_file: Path | None) -> str:
    """The bearer token, from ``--token-file`` or the environment; the same rules for both."""
    if token_file is not None:
        text, where = _read_token_file(token_file), f"--token-file {token_file}"
    else:
        text, where = os.environ.get(TOKEN_ENV, "").strip(), TOKEN_ENV
        if not text:
            fail(f"--http needs a bearer token: set {TOKEN_ENV} or pass --token-file", EXIT.USAGE)
    if not text:
        fail(f"{where}: empty", EXIT.USAGE)
    if len(text) < MIN_TOKEN:
        fail(
            f"{where}: the token has {len(text)} characters; use at least {MIN_TOKEN} "
            "(e.g. from `openssl rand -hex 24`)",
            EXIT.USAGE,
        )
    return text


def mcp_command(
    openclaw: Path | None = typer.Option(None, "--openclaw", help="Serve this OpenClaw state dir (either era)."),
    home: Path | None = typer.Option(None, "--home", help="Serve this Kurahi home."),
    pi: Path | None = typer.Option(None, "--pi", help="Serve this folder of Pi sessions."),
    claude: Path | None = typer.Option(
        None, "--claude", help="Serve this Claude Code config dir (~/.claude): a key is a project folder."
    ),
    agent: str | None = typer.Option(None, "--agent", help="The agent to serve (default main, else the only one)."),
    http: bool = typer.Option(False, "--http", help="Streamable HTTP at /mcp instead of stdio."),
    port: int = typer.Option(8765, "--port", min=1, max=65535, help="HTTP port."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP address (a non-loopback one needs --allow-remote)."),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="Allow binding a non-loopback address."),
    token_file: Path | None = typer.Option(
        None, "--token-file", help=f"File holding the HTTP bearer token (default: ${TOKEN_ENV})."
    ),
) -> None:
    """Serve a resident's own history over MCP, read-only: tools lineage, recall, check, losses.

    The state is the one named, else the one `kurahi doctor` finds (OPENCLAW_STATE_DIR,
    KURAHI_HOME, ~/.openclaw, ~/.kolo, Pi's sessions folder). Nothing in it is written.
    """
    from kurahi.extras import require

    for option, named in (("--openclaw", openclaw), ("--home", home), ("--pi", pi), ("--claude", claude)):
        if named is not None and not named.exists():
            fail(f"{named}: no such directory ({option})", EXIT.NOT_FOUND)
    with translate_errors():
        require("mcp", "kurahi mcp")
        from kurahi.mcp_server.served import Served, find_state

        kind, root = find_state(openclaw=openclaw, home=home, pi=pi, claude=claude)
        served = Served(kind, root, agent)
        if not http:
            from kurahi.mcp_server.server import run_stdio

            run_stdio(served)
            return
        loopback = host in ("127.0.0.1", "localhost", "::1")
        if not loopback and not allow_remote:
            fail(f"--host {host}: not loopback; pass --allow-remote to serve other machines", EXIT.USAGE)
        token = _token(token_file)
        from kurahi.mcp_server.server import run_http

        run_http(served, token, host=host, port=port, allow_remote=allow_remote)
