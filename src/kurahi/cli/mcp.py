"""``kurahi mcp``: serve one state's history to an agent over MCP (stdio, or Streamable HTTP)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from kurahi.cli.common import EXIT, fail, translate_errors

__all__ = ["mcp_command"]

TOKEN_ENV = "KURAHI_MCP_TOKEN"
"""The environment variable holding the HTTP bearer token (never an argument: argv is public)."""


def _token(token_file: Path | None) -> str:
    if token_file is not None:
        try:
            text = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"--token-file {token_file}: cannot be read ({exc.__class__.__name__})", EXIT.NOT_FOUND)
        if not text:
            fail(f"--token-file {token_file}: empty", EXIT.USAGE)
        return text
    text = os.environ.get(TOKEN_ENV, "").strip()
    if not text:
        fail(f"--http needs a bearer token: set {TOKEN_ENV} or pass --token-file", EXIT.USAGE)
    if len(text) < 16:
        fail(f"{TOKEN_ENV}: {len(text)} characters; use at least 16 (e.g. from `openssl rand -hex 24`)", EXIT.USAGE)
    return text


def mcp_command(
    openclaw: Path | None = typer.Option(None, "--openclaw", help="Serve this OpenClaw state dir (either era)."),
    home: Path | None = typer.Option(None, "--home", help="Serve this Kurahi home."),
    pi: Path | None = typer.Option(None, "--pi", help="Serve this folder of Pi sessions."),
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

    for option, named in (("--openclaw", openclaw), ("--home", home), ("--pi", pi)):
        if named is not None and not named.exists():
            fail(f"{named}: no such directory ({option})", EXIT.NOT_FOUND)
    with translate_errors():
        require("mcp", "kurahi mcp")
        from kurahi.mcp_server.served import Served, find_state

        kind, root = find_state(openclaw=openclaw, home=home, pi=pi)
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
