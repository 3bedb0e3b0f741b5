"""The ``kurahi`` command: a thin shell over the library, one sub-app per room.

A run imports only the room it names: ``kurahi lineage check C.jsonl`` never loads the
session, sessions or demo commands (their modules and what they import cost about a
tenth of a second per run, as much as some commands' whole work). ``kurahi --help``,
an unknown name, and :data:`app` (for tests) have every room.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

from kurahi import __version__

__all__ = ["app", "build_app", "main"]

ROOMS = {
    "session": "kurahi.cli.session",
    "sessions": "kurahi.cli.sessions",
    "lineage": "kurahi.cli.lineage",
}
"""Sub-app name -> the module whose ``app`` it is."""


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kurahi {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Kurahi: sessions as lineage, continuity tools, and a resident gateway."""


def build_app(only: str | None = None) -> typer.Typer:
    """The command tree: every room, or just ``only`` (a name in :data:`ROOMS` or ``demo``)."""
    root = typer.Typer(
        name="kurahi",
        help="Keep a long-lived AI agent the same agent across resets, restarts, moves and model swaps.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    root.callback()(_root)
    for name, module in ROOMS.items():
        if only in (None, name):
            root.add_typer(importlib.import_module(module).app, name=name)
    if only in (None, "demo"):
        from kurahi.cli.demo import demo

        root.command("demo")(demo)
    return root


def __getattr__(name: str) -> Any:
    # ``app`` is built on first use, so the console script's import stays small.
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    full = build_app()
    globals()["app"] = full
    return full


def main() -> None:
    """Console-script entry point."""
    first = sys.argv[1] if len(sys.argv) > 1 else None
    build_app(first if first in ROOMS or first == "demo" else None)()
