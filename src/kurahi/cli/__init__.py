"""The ``kurahi`` command: a thin shell over the library, one sub-app per room."""

from __future__ import annotations

import typer

from kurahi import __version__
from kurahi.cli import agent as agent_cmd
from kurahi.cli import audit as audit_cmd
from kurahi.cli import demo as demo_cmd
from kurahi.cli import gateway as gateway_cmd
from kurahi.cli import lifecycle as lifecycle_cmd
from kurahi.cli import lineage as lineage_cmd
from kurahi.cli import session as session_cmd
from kurahi.cli import sessions as sessions_cmd

__all__ = ["app", "main"]

app = typer.Typer(
    name="kurahi",
    help="Keep a long-lived AI agent the same agent across resets, restarts, moves and model swaps.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(session_cmd.app, name="session")
app.add_typer(sessions_cmd.app, name="sessions")
app.add_typer(lineage_cmd.app, name="lineage")
app.add_typer(agent_cmd.agent_app, name="agent")
app.add_typer(agent_cmd.actions_app, name="actions")
app.add_typer(gateway_cmd.gateway_app, name="gateway")
app.add_typer(gateway_cmd.devices_app, name="devices")
app.add_typer(audit_cmd.app, name="audit")
app.add_typer(lifecycle_cmd.app, name="lifecycle")
app.command("init")(gateway_cmd.init_command)
app.command("chat")(gateway_cmd.chat_command)
app.command("demo")(demo_cmd.demo)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kurahi {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Kurahi: sessions as lineage, continuity tools, and a resident gateway."""


def main() -> None:
    """Console-script entry point."""
    app()
