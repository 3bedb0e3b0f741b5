"""The fast path for ``kurahi lineage stitch|check`` and ``kurahi session context --json``, without typer.

Scripts run these on whole histories (a 200k-entry tree is a few tenths of a second of
work) and gateways print a live context as JSON on every turn, so start-up is a large share
of a run: importing typer alone takes 70–100 ms on a small machine, and argparse (which did
this job before) 9 ms with its two parsers. A well-formed invocation is parsed here by a
deliberately small parser and run by the same code as the Typer command
(:mod:`kurahi.cli.fast.lineage`, :mod:`kurahi.cli.fast.context`). ``session context`` comes
here only for its JSON (``--json`` without ``--llm``); its tables are drawn by the full CLI.

The parser takes only the plainest forms: ``--option value``, ``--option=value``, flags,
and arguments that do not start with ``-``. Everything else (``--help``, ``--``, an
unknown or repeated option, a value or argument that starts with ``-`` or is empty, a
number that is not plain digits, a missing argument) returns ``None`` and goes to the full CLI, so help
and usage errors look the same as every other command's. ``tests/cli/test_fast.py``
checks that this parser takes exactly the Typer commands' options and, on any tokens it
accepts, reads them as Click does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["GROUPS", "SPECS", "Option", "parse", "run"]


class _Fallback(Exception):
    """Anything this parser will not decide: the full CLI takes over."""


def _count(text: str) -> int:
    # Plain digits only: Click's int() also takes "+5", " 5" and "1_000", and says what is wrong.
    if not (text.isascii() and text.isdigit()):
        raise _Fallback(text)
    return int(text)


def _positive(text: str) -> int:
    n = _count(text)
    if n < 1:
        raise _Fallback(text)  # Click's range message
    return n


class Option(NamedTuple):
    """One option of a command."""

    dest: str
    kind: str
    """``flag``, ``one`` (a value, at most once) or ``many`` (repeatable)."""
    type: Callable[[str], Any] = str
    required: bool = False


SPECS: dict[str, tuple[tuple[str, int, int | None], dict[str, Option]]] = {
    "stitch": (
        ("sources", 1, None),
        {
            "--out": Option("out", "one", Path, required=True),
            "--leaf": Option("leaf", "one"),
            "--report": Option("report", "one", Path),
            "--rename-colliding": Option("rename_colliding", "flag"),
            "--force": Option("force", "flag"),
            "--evidence": Option("evidence", "one", Path),
            "--json": Option("json", "flag"),
        },
    ),
    "check": (
        ("file", 1, 1),
        {
            "--marker": Option("marker", "many"),
            "--window": Option("window", "one", _positive),
            "--context-window": Option("window", "one", _positive),
            "--reserve": Option("reserve", "many", _count),
            "--system-prompt-tokens": Option("system_prompt_tokens", "many", _count),
            "--evidence": Option("evidence", "one", Path),
            "--runtime": Option("runtime", "one"),
            "--json": Option("json", "flag"),
        },
    ),
    "context": (
        ("file", 1, 1),
        {
            "--leaf": Option("leaf", "one"),
            "--json": Option("json", "flag"),
            "--llm": Option("llm", "flag"),
            "--context-window": Option("context_window", "one", _positive),
            "--reserve": Option("reserve", "one", _count),
            "--runtime": Option("runtime", "one"),
        },
    ),
}
"""Command -> ((positional name, fewest, most), option string -> :class:`Option`)."""

GROUPS = {"stitch": "lineage", "check": "lineage", "context": "session"}
"""The command group of each command served here."""


def parse(command: str, args: Sequence[str]) -> dict[str, Any] | None:
    """The values of ``args`` for ``command``, or ``None`` for the full CLI to decide."""
    (name, fewest, most), options = SPECS[command]
    values: dict[str, Any] = {
        o.dest: [] if o.kind == "many" else False if o.kind == "flag" else None for o in options.values()
    }
    seen: set[str] = set()
    positionals: list[str] = []
    try:
        i = 0
        while i < len(args):
            token = args[i]
            i += 1
            if not token:
                return None
            if not token.startswith("-"):
                positionals.append(token)
                continue
            key, eq, value = token.partition("=")
            opt = options.get(key)
            if opt is None or (eq and opt.kind == "flag"):
                return None
            if opt.kind == "flag":
                values[opt.dest] = True
                continue
            if not eq:
                if i == len(args):
                    return None
                value = args[i]
                i += 1
            if not value or value.startswith("-") or (opt.kind == "one" and opt.dest in seen):
                return None
            seen.add(opt.dest)
            if opt.kind == "many":
                values[opt.dest].append(opt.type(value))
            else:
                values[opt.dest] = opt.type(value)
    except _Fallback:
        return None
    if len(positionals) < fewest or (most is not None and len(positionals) > most):
        return None
    if any(o.required and o.dest not in seen for o in options.values()):
        return None
    values[name] = [Path(p) for p in positionals]
    return values


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
    """Run ``argv`` (without the program name) if it is one of the commands served here; else ``None``."""
    if len(argv) < 2 or GROUPS.get(argv[1]) != argv[0]:
        return None
    ns = parse(argv[1], argv[2:])
    if ns is None:
        return None
    if argv[1] == "context":
        if not ns["json"] or ns["llm"]:
            return None  # tables and the model's messages: the full CLI
        _import_msgspec_lean()
        from kurahi.cli.fast.context import run_context_json

        return run_context_json(ns["file"][0], leaf=ns["leaf"], runtime=ns["runtime"])
    _import_msgspec_lean()
    from kurahi.cli.fast.lineage import run_check, run_stitch

    if argv[1] == "stitch":
        return run_stitch(
            ns["sources"],
            ns["out"],
            leaf=ns["leaf"],
            report=ns["report"],
            rename_colliding=ns["rename_colliding"],
            force=ns["force"],
            evidence=ns["evidence"],
            as_json=ns["json"],
        )
    return run_check(
        ns["file"][0],
        markers=ns["marker"],
        window=ns["window"],
        reserves=ns["reserve"],
        system_prompt_tokens=ns["system_prompt_tokens"],
        evidence=ns["evidence"],
        runtime=ns["runtime"],
        as_json=ns["json"],
        one_shot=True,  # the caller (kurahi.cli._run) leaves by os._exit
    )
