"""The ``kurahi`` command: a thin shell over the library, one sub-app per room.

A run imports only the group it names: ``kurahi lineage check C.jsonl`` never loads the
session, gateway or demo commands (their modules and what they import cost about a
tenth of a second per run, as much as some commands' whole work). ``kurahi --help``,
an unknown name, and :data:`app` (for tests) have every group. ``lineage stitch`` and
``lineage check`` go further: a well-formed run of either skips typer altogether
(:mod:`kurahi.cli.fast.dispatch`), so typer is imported only when a tree is built.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from kurahi import __version__

if TYPE_CHECKING:
    import typer

__all__ = ["COMMANDS", "GROUPS", "app", "build_app", "main"]

GROUPS = {
    "session": "kurahi.cli.session:app",
    "sessions": "kurahi.cli.sessions:app",
    "lineage": "kurahi.cli.lineage.commands:app",
    "lifecycle": "kurahi.cli.lifecycle:app",
    "agent": "kurahi.cli.agent:agent_app",
    "actions": "kurahi.cli.agent:actions_app",
    "gateway": "kurahi.cli.gateway:gateway_app",
    "devices": "kurahi.cli.gateway:devices_app",
    "audit": "kurahi.cli.audit:app",
    "continuity": "kurahi.cli.continuity:app",
    "activate": "kurahi.cli.activate:app",
    "evidence": "kurahi.cli.evidence:app",
    "store": "kurahi.cli.store:app",
    "rescue": "kurahi.cli.rescue:app",
}
"""Sub-app name -> ``module:attribute`` of its Typer app."""

COMMANDS = {
    "init": "kurahi.cli.gateway:init_command",
    "chat": "kurahi.cli.gateway:chat_command",
    "demo": "kurahi.cli.demo:demo",
    "doctor": "kurahi.cli.doctor:doctor_command",
    "completion": "kurahi.cli.completion:completion_command",
    "mcp": "kurahi.cli.mcp:mcp_command",
}
"""Top-level command name -> ``module:function``."""


def _load(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def build_app(only: str | None = None) -> typer.Typer:
    """The command tree: every group and command, or just ``only`` (a name in :data:`GROUPS` or :data:`COMMANDS`)."""
    import typer

    def _version(value: bool) -> None:
        if value:
            typer.echo(f"kurahi {__version__}")
            raise typer.Exit()

    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
        no_color: bool = typer.Option(False, "--no-color", help="No colour in the output (as NO_COLOR=1 does)."),
    ) -> None:
        """Kurahi: sessions as lineage, continuity tools, and a resident gateway."""
        if no_color:
            # Read by rich when a console is first made, which is after this (they are lazy).
            os.environ["NO_COLOR"] = "1"

    root = typer.Typer(
        name="kurahi",
        help="Keep a long-lived AI agent the same agent across resets, restarts, moves and model swaps.",
        no_args_is_help=True,
        # Completion is the `completion` command (an unknown shell is a clear error there).
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    root.callback()(_root)
    for name, spec in GROUPS.items():
        if only in (None, name):
            root.add_typer(_load(spec), name=name)
    for name, spec in COMMANDS.items():
        if only in (None, name):
            root.command(name)(_load(spec))
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
    from kurahi.cli.common import safe_streams

    safe_streams()
    try:
        _run()
    except BrokenPipeError:
        # The reader went away (``kurahi ... | head``): stop quietly, as a pipe's writer
        # should. Python would flush stdout again at exit and fail again, so point it at
        # /dev/null first. Exit code 1: the output was cut short.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os._exit(1)


def _run() -> None:
    if (sys.argv[1:2] == ["lineage"] and sys.argv[2:3] in (["stitch"], ["check"])) or (
        sys.argv[1:3] == ["session", "context"] and "--json" in sys.argv
    ):
        import gc

        from kurahi.cli.fast.dispatch import run  # only for the commands it serves

        # One command, then the process leaves without teardown: the cyclic collector would
        # only walk the million containers a large history decodes into (once the library's
        # own pause ends, its next pass took 7% of `lineage check`), and none of them is garbage.
        gc.disable()
        code = run(sys.argv[1:])
        if code is not None:
            _exit_at_once(code)
        gc.enable()
    if os.environ.get("_KURAHI_COMPLETE"):  # the shell asks for completions (`kurahi completion SHELL`)
        from typer._completion_classes import completion_init

        completion_init()
    first = sys.argv[1] if len(sys.argv) > 1 else None
    # The name fixed, so usage lines and the completion variable are the same however it was started.
    build_app(first if first in GROUPS or first in COMMANDS else None)(
        prog_name="kurahi", complete_var="_KURAHI_COMPLETE"
    )


def _exit_at_once(code: int) -> None:
    """Exit now, skipping the interpreter's teardown, once the output is flushed.

    After stitching or checking a large history the interpreter would spend 40–60 ms
    freeing objects one by one at exit, a sixth of the command. The work is complete by
    now: C is written, fsynced and linked, every file the command opened is only read, and
    the kernel releases descriptors and locks. Only a failed flush (a closed pipe) takes
    the ordinary way out, so it is reported as Python always reports it.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        sys.exit(code)
    os._exit(code)
