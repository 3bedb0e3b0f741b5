"""``kurahi completion SHELL``: the script that makes a shell complete kurahi's commands and options."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kurahi.cli.common import EXIT, fail

__all__ = ["COMPLETE_VAR", "completion_command"]

COMPLETE_VAR = "_KURAHI_COMPLETE"
"""The variable the script sets when it asks ``kurahi`` for completions."""


def completion_command(
    shell: Annotated[str, typer.Argument(help="bash, zsh, fish or powershell.", show_default=False)],
) -> None:
    """Print the shell completion script for SHELL.

    Load it in the current shell with `eval "$(kurahi completion bash)"` (zsh likewise;
    fish: `kurahi completion fish | source`), or add that line to the shell's startup file.
    """
    # typer's own completion (typer is pinned below 0.29); its public module does not re-export these names.
    from typer._completion_classes import completion_init
    from typer._completion_shared import Shells, get_completion_script

    names = [s.value for s in Shells]
    if shell not in names:
        fail(f"unknown shell {shell!r}: kurahi completes {', '.join(names)}", EXIT.USAGE)
    completion_init()
    sys.stdout.write(get_completion_script(prog_name="kurahi", complete_var=COMPLETE_VAR, shell=shell) + "\n")
