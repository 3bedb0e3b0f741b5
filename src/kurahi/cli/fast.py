"""The fast path for ``kurahi lineage stitch`` and ``kurahi lineage check``, without typer.

Scripts run these two on whole histories (a 200k-entry tree is a few tenths of a second of
work), so start-up is a large share of a run: importing typer alone takes 70–100 ms on a
small machine. A well-formed invocation of either is parsed here with the standard
library's ``argparse`` and run by the same code as the Typer command
(:mod:`kurahi.cli.lineage_run`). Everything else (``--help``, a usage error, anything this
parser does not know) returns ``None`` and goes to the full CLI, so help and usage errors
look the same as every other command's. ``tests/cli/test_fast.py`` checks that this
parser and the Typer commands take the same options and give the same results.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["PARSERS", "run"]


class _Fallback(Exception):
    """Anything this parser will not decide: the full CLI takes over."""


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=100)


class _Parser(argparse.ArgumentParser):
    def __init__(self, prog: str) -> None:
        # No abbreviations (Click has none) and no help (Click's is the one to show). A fixed
        # width: argparse builds a formatter for every add_argument, and one that measures
        # the terminal imports shutil (5 ms) for a help text this parser never prints.
        super().__init__(prog=prog, add_help=False, allow_abbrev=False, exit_on_error=False, formatter_class=_Formatter)

    def error(self, message: str) -> NoReturn:
        raise _Fallback(message)


def _stitch_parser() -> _Parser:
    p = _Parser("kurahi lineage stitch")
    p.add_argument("sources", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--leaf")
    p.add_argument("--report", type=Path)
    p.add_argument("--rename-colliding", action="store_true")
    p.add_argument("--force", action="store_true")
    p.add_argument("--evidence", type=Path)
    p.add_argument("--json", action="store_true")
    return p


def _check_parser() -> _Parser:
    p = _Parser("kurahi lineage check")
    p.add_argument("file", type=Path)
    p.add_argument("--marker", action="append", default=[])
    p.add_argument("--window", type=int, default=200_000)
    p.add_argument("--reserve", action="append", type=int, default=[])
    p.add_argument("--system-prompt-tokens", action="append", type=int, default=[])
    p.add_argument("--evidence", type=Path)
    p.add_argument("--json", action="store_true")
    return p


PARSERS = {"stitch": _stitch_parser, "check": _check_parser}
"""Command name -> its parser (the parity test compares these with the Typer commands)."""


def _import_msgspec_lean() -> None:
    """Import msgspec without letting it import ``typing_extensions``.

    msgspec only prefers ``typing_extensions.get_type_hints`` when that package happens to
    be installed (typer and rich bring it) and falls back to ``typing``'s own, which reads
    every annotation Kurahi's structs use the same way. Importing it costs 6 ms, and it
    pulls in ``inspect`` (another 12), which nothing on these two commands' way needs.
    The block is lifted at once, so a later ``import typing_extensions`` works as usual.
    """
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # an import of it now raises ImportError
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]


def run(argv: list[str]) -> int | None:
    """Run ``argv`` (without the program name) if it is one of the two commands; else ``None``."""
    if len(argv) < 2 or argv[0] != "lineage" or argv[1] not in PARSERS:
        return None
    rest = argv[2:]
    if "--help" in rest or "-h" in rest:
        return None
    try:
        ns: Any = PARSERS[argv[1]]().parse_args(rest)
    except (_Fallback, argparse.ArgumentError):
        return None
    _import_msgspec_lean()
    from kurahi.cli.lineage_run import run_check, run_stitch

    if argv[1] == "stitch":
        if len(ns.sources) < 2:
            return None  # Click says what is missing
        return run_stitch(
            ns.sources,
            ns.out,
            leaf=ns.leaf,
            report=ns.report,
            rename_colliding=ns.rename_colliding,
            force=ns.force,
            evidence=ns.evidence,
            as_json=ns.json,
        )
    if ns.window < 1:
        return None  # Click's range message
    return run_check(
        ns.file,
        markers=ns.marker,
        window=ns.window,
        reserves=ns.reserve,
        system_prompt_tokens=ns.system_prompt_tokens,
        evidence=ns.evidence,
        as_json=ns.json,
    )
