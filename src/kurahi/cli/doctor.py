"""``kurahi doctor``: check the installation and the state it would use; exit 1 when something is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kurahi.cli.common import EXIT, print_json, translate_errors

__all__ = ["doctor_command"]

_MARK = {"ok": ("ok", "green"), "info": ("--", "dim"), "warn": ("warn", "yellow"), "fail": ("FAIL", "bold red")}


def doctor_command(
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            show_default="$KURAHI_HOME, else $KOLO_HOME, else ~/.kolo",
            help="The Kurahi home to check.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help='Print {"ok", "checks": [...]} as JSON.')] = False,
) -> None:
    """Check this installation and the state it would use, naming the fix of each problem.

    Version, native scanner, extras, where Kurahi, Pi and OpenClaw keep state and what is
    there, a running gateway's health, secrets' permissions, free disk space. Exits 1 when a
    check fails; every warning and failure names its fix.
    """
    from kurahi.cli.output import say
    from kurahi.doctor import run_doctor

    with translate_errors():
        report = run_doctor(home)
    if as_json:
        print_json(report.to_dict())
    else:
        for c in report.checks:
            mark, style = _MARK[c.status]
            say((f"{mark:<4}", style), f"  {c.name:<9} {c.summary}")
        if report.fixes:
            say("")
        for c in report.fixes:
            label = "hint" if c.status == "info" else c.status
            say((label, _MARK[c.status][1]), f" {c.name}: {c.fix}")
        if not report.problems:
            say(("no problems found", "green"))
    if not report.ok:
        raise typer.Exit(EXIT.FAILED)
