"""The public surface: every room's ``__all__`` is real and complete, every command has help."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kurahi.cli import app

ROOMS = [
    "kurahi",
    "kurahi.errors",
    "kurahi.store",
    "kurahi.context",
    "kurahi.lineage",
    "kurahi.agent",
    "kurahi.lifecycle",
    "kurahi.resident",
    "kurahi.gateway",
    "kurahi.continuity",
    "kurahi.ui",
    "kurahi.js.jcs",
    "kurahi.js.values",
    "kurahi.testing",
    "kurahi.testing.sessions",
    "kurahi.testing.postgres",
    "kurahi.js.ops",
    "kurahi.js.deepjson",
]


@pytest.mark.parametrize("name", ROOMS)
def test_all_names_exist_and_public_names_are_listed(name: str) -> None:
    mod = importlib.import_module(name)
    exported = set(mod.__all__)
    assert all(hasattr(mod, n) for n in exported), sorted(n for n in exported if not hasattr(mod, n))
    public = {
        n
        for n, v in vars(mod).items()
        if not n.startswith("_")
        and (inspect.isclass(v) or inspect.isfunction(v))
        and getattr(v, "__module__", "").startswith(name)
    }
    assert public <= exported, f"{name}: public but not in __all__: {sorted(public - exported)}"


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    # Typer vendors Click privately; walk the command objects by their public attributes.
    out = []
    for cname, cmd in group.commands.items():
        out.append(((*prefix, cname), cmd))
        if hasattr(cmd, "commands"):
            out.extend(_commands(cmd, (*prefix, cname)))
    return out


COMMANDS = _commands(typer.main.get_group(app))


def test_there_are_commands() -> None:
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"session context", "session tree", "session stats", "session repair", "sessions ls", "demo"} <= names
    assert {"agent send", "agent jobs", "actions ls", "actions show"} <= names


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=lambda x: " ".join(x) if isinstance(x, tuple) else "")
def test_every_command_and_option_has_help(path: tuple[str, ...], cmd: Any) -> None:
    assert cmd.help, f"kurahi {' '.join(path)} has no help text"
    for param in cmd.params:
        if param.param_type_name == "option":
            assert param.help, f"kurahi {' '.join(path)} {param.opts[0]} has no help"
    res = CliRunner().invoke(app, [*path, "--help"])
    assert res.exit_code == 0 and "Usage" in res.output
