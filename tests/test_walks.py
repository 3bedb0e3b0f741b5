"""A walk through the rooms goes down and never back: issue 37's bar for ``rescue apply`` and ``lineage find``.

``tests/test_layers.py`` holds every *import* to the rooms' order (:mod:`kurahi._rooms`). An import
is not the only way back up: a room can hand a lower one a callback, a protocol object or a
function, and the lower room calls it, so the walk returns to a room it had left. This test
watches the calls themselves. While a command runs in-process (Typer's ``CliRunner``, on a copy
of a real OpenClaw sample), a profile hook (``sys.setprofile``, and ``threading.setprofile`` for
threads the command starts) looks at every Python call into a Kurahi module. Along the call
stack, read from the outermost Kurahi frame inwards, the rooms' ranks must never go up: once
the walk went from a room down into a lower one, no deeper frame is in a room above that lower
one. Each return is reported once, as ``outer room -> lower room -> back to room`` with the
functions at each step.

The stack is the interpreter's own (each new frame's ``f_back`` chain), not one kept by pairing
call and return events: exceptions, generators resumed from elsewhere and threads cannot put it
out of step. Frames outside ``kurahi`` are left out (typer, click, the standard library); the
modules at the package root (``kurahi.errors``, ``kurahi._lazy``, ...) sit below every room, as in
the import rule. A module's body running on import (``<module>``, any module's) starts a walk of
its own: what runs under it (class bodies, a dataclass's generated methods, the calls the body
makes) is judged from there, not against the function whose import set it off. What a module
imports is ``test_layers.py``'s business, and which modules a command still has to import
depends on what ran before it in the same process, which a walk must not.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi._rooms import ROOMS
from kurahi.cli import build_app
from support.testdata import JSON_ERA, SQLITE_ERA, data_path

RANK = {name: rank for rank, (name, _) in enumerate(ROOMS, start=1)}
"""Each room's rank; 0 is the package root's own modules, below every room."""

Step = tuple[str, str]
"""One Kurahi frame of a walk: its module and its function's qualified name."""


@functools.cache
def rank(module: str) -> int | None:
    """The rank of the room ``module`` is in (0 for the package root's modules); ``None`` outside Kurahi."""
    parts = module.split(".")
    if parts[0] != "kurahi":
        return None
    return RANK.get(parts[1], 0) if len(parts) > 1 else 0


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else "the package root"


def _part(step: Step) -> str:
    return f"{room(step[0])} ({step[0]}:{step[1]})"


def returned(stack: Sequence[Step]) -> str | None:
    """What the innermost step of ``stack`` (Kurahi frames, outermost first) did wrong, or ``None``.

    Only the innermost step is judged: every shorter stack was judged when its own last call
    was made. It is wrong when its room is above its caller's. The report names the outer room
    it came back to (the nearest caller at or above its room), the lower room the walk had gone
    down to (the function called from there, and the one that made the call back when another:
    ``a -> … -> b``, through any frames between), and the room it came back to.
    """
    if len(stack) < 2:
        return None
    ranks = [rank(module) or 0 for module, _ in stack]
    if ranks[-1] <= ranks[-2]:
        return None
    inner = len(stack) - 1
    outer = next((i for i in range(inner - 1, -1, -1) if ranks[i] >= ranks[-1]), None)
    if outer is None:  # the walk never was this high: up, not back (still against the rule)
        return f"{_part(stack[-2])} -> up to {_part(stack[-1])}"
    lower = _part(stack[outer + 1])
    if outer + 1 < inner - 1:  # the call back was made further down (`…`: through none or more frames)
        lower += f" -> … -> {_part(stack[-2])}"
    return f"{_part(stack[outer])} -> {lower} -> back to {_part(stack[-1])}"


_OUTSIDE, _BODY = -1, -2


class Walk:
    """Watches every Python call while it is installed and keeps each return to a room already left."""

    def __init__(self) -> None:
        self.returns: dict[str, int] = {}
        """Each return found, with how many times it was made."""
        self.calls = 0
        """How many calls into Kurahi were looked at (to tell a walk that ran from one that did not)."""
        self._codes: dict[CodeType, int] = {}

    def _rank(self, code: CodeType, frame: FrameType) -> int:
        """Its room's rank; -1 for a frame left out (outside Kurahi), -2 for a module's body (a walk starts there)."""
        try:
            return self._codes[code]
        except KeyError:
            pass
        found = rank(frame.f_globals.get("__name__") or "")
        value = _BODY if code.co_name == "<module>" else _OUTSIDE if found is None else found
        self._codes[code] = value
        return value

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        here = self._rank(frame.f_code, frame)
        if here < 0:
            return
        self.calls += 1
        up = frame.f_back
        while up is not None:
            above = self._rank(up.f_code, up)
            if above != _OUTSIDE:
                if here > above >= 0:
                    self._report(frame)
                return
            up = up.f_back

    def _report(self, frame: FrameType) -> None:
        stack: list[Step] = []
        f: FrameType | None = frame
        while f is not None and (here := self._rank(f.f_code, f)) != _BODY:
            if here >= 0:
                stack.append((f.f_globals["__name__"], f.f_code.co_qualname))
            f = f.f_back
        what = returned(stack[::-1])
        if what is not None:
            self.returns[what] = self.returns.get(what, 0) + 1

    @contextmanager
    def watching(self) -> Iterator[Walk]:
        before, before_threads = sys.getprofile(), threading.getprofile()
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)
        try:
            yield self
        finally:
            sys.setprofile(before)
            threading.setprofile(before_threads)


def walk(run: Callable[[], Any]) -> Walk:
    w = Walk()
    with w.watching():
        run()
    return w


# ---- the walks -----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _quiet_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No state of this machine's: no KURAHI_/KOLO_/OPENCLAW_ variable, a HOME and XDG dirs of the test's own."""
    for name in list(os.environ):
        if name.startswith(("KOLO_", "KURAHI_", "OPENCLAW_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for xdg in ("XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(xdg, str(tmp_path / "home" / xdg.lower()))


def _copy(sample: str, dst: Path) -> Path:
    """A writable copy of ``tests/data/openclaw/<sample>/state``."""
    shutil.copytree(data_path("openclaw", sample, "state"), dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)
    return dst


def _kurahi(*args: str) -> Callable[[], str]:
    """``kurahi ARGS`` in this process, to be run under a :class:`Walk`; fails on a nonzero exit."""
    app = build_app()

    def run() -> str:
        res = CliRunner().invoke(app, list(args))
        assert res.exit_code == 0, f"kurahi {' '.join(args)}: exit {res.exit_code}\n{res.output}\n{res.exception!r}"
        return res.stdout

    return run


def _no_returns(w: Walk) -> None:
    assert w.calls > 100, f"the walk looked at only {w.calls} Kurahi call(s): did the command run?"
    found = "\n".join(f"  {what}   (x{n})" for what, n in sorted(w.returns.items()))
    assert not w.returns, f"{len(w.returns)} return(s) to a room already left:\n{found}"


@pytest.mark.parametrize("sample", ["2026.9.6-full", JSON_ERA])
def test_rescue_apply_walks_down_its_rooms_and_never_back(sample: str, tmp_path: Path) -> None:
    """``kurahi rescue apply`` on a copy of a real sample of each era (SQLite 2026.9, JSON 2026.5)."""
    state = _copy(sample, tmp_path / "state")
    listed = json.loads(CliRunner().invoke(build_app(), ["rescue", "--openclaw", str(state), "--json"]).stdout)
    loss = next(x for x in listed["losses"] if x["kind"] == "reset")
    apply = _kurahi("rescue", "apply", loss["id"], "--openclaw", str(state), "--yes", "--out", str(tmp_path / "pkg"))
    out: list[str] = []
    w = walk(lambda: out.append(apply()))
    assert "verified: yes" in out[0], out[0]
    _no_returns(w)


@pytest.mark.parametrize("era", [SQLITE_ERA, JSON_ERA])
def test_lineage_find_walks_down_its_rooms_and_never_back(era: str, tmp_path: Path) -> None:
    """``kurahi lineage find`` on a copy of each era's state dir."""
    state = _copy(era, tmp_path / "state")
    out: list[str] = []
    w = walk(lambda: out.append(_kurahi("lineage", "find", "--state-dir", str(state), "--json")()))
    assert json.loads(out[0])["pieces"], out[0]
    _no_returns(w)


# ---- the walker itself ---------------------------------------------------------------------------


def test_a_walk_that_only_goes_down_is_clean() -> None:
    stack = [
        ("kurahi.cli.rescue", "apply_cmd"),
        ("kurahi.lifecycle.rescue.apply", "apply_rescue"),
        ("kurahi.lifecycle.rescue.apply", "_write"),
        ("kurahi.runtimes.openclaw.sqlite.write", "install_session"),
        ("kurahi.fs.durable", "atomic_write"),
        ("kurahi.errors", "KurahiError.__init__"),
    ]
    assert [returned(stack[: n + 1]) for n in range(len(stack))] == [None] * len(stack)


def test_a_callback_into_a_room_already_left_is_named_with_each_step() -> None:
    stack = [
        ("kurahi.cli.rescue", "apply_cmd"),
        ("kurahi.lifecycle.rescue.apply", "apply_rescue"),
        ("kurahi.runtimes.openclaw.sqlite.write", "install_session"),
        ("kurahi.runtimes.openclaw.sqlite.write", "_swap"),
        ("kurahi.runtimes.openclaw.sqlite.write", "_checked"),
        ("kurahi.lifecycle.activation.check", "Verifier.verify"),
    ]
    assert returned(stack) == (
        "lifecycle (kurahi.lifecycle.rescue.apply:apply_rescue)"
        " -> runtimes (kurahi.runtimes.openclaw.sqlite.write:install_session)"
        " -> … -> runtimes (kurahi.runtimes.openclaw.sqlite.write:_checked)"
        " -> back to lifecycle (kurahi.lifecycle.activation.check:Verifier.verify)"
    )
    # Back to a room between the two: gateway's object called from lifecycle, under cli.
    assert returned(
        [
            ("kurahi.cli.rescue", "apply_cmd"),
            ("kurahi.lifecycle.rescue.apply", "apply_rescue"),
            ("kurahi.gateway.activation_host", "OfflineHost.audit"),
        ]
    ) == (
        "cli (kurahi.cli.rescue:apply_cmd) -> lifecycle (kurahi.lifecycle.rescue.apply:apply_rescue)"
        " -> back to gateway (kurahi.gateway.activation_host:OfflineHost.audit)"
    )
    # Up from a start lower than the room reached: against the rule too.
    assert returned([("kurahi.store.session", "Session.open"), ("kurahi.lineage.find", "find_lineage")]) == (
        "store (kurahi.store.session:Session.open) -> up to lineage (kurahi.lineage.find:find_lineage)"
    )


def _probe(module: str, source: str) -> dict[str, Any]:
    """Functions that run as if defined in ``module`` (its name in their globals), for a real walk."""
    space: dict[str, Any] = {"__name__": module}
    exec(compile(source, f"<{module}>", "exec"), space)
    return space


def test_the_tracer_catches_a_real_call_back_through_a_lower_room(tmp_path: Path) -> None:
    """A "lifecycle" function hands kurahi.fs.durable a sync watcher of its own room: fs calls it back."""
    from kurahi.fs import durable

    lifecycle = _probe(
        "kurahi.lifecycle._walk_probe",
        "from kurahi.fs import durable\n"
        "def heard(kind, seconds):\n    pass\n"
        "def save(path, watcher):\n"
        "    stop = durable.watch_syncs(watcher)\n"
        "    try:\n        durable.atomic_write(path, b'x')\n"
        "    finally:\n        stop()\n",
    )
    js = _probe("kurahi.js._walk_probe", "def heard(kind, seconds):\n    pass\n")
    if durable.ops.fsync.__module__ != "kurahi.fs.durable":
        pytest.fail("kurahi.fs.durable.ops.fsync is not the watched wrapper; the probe needs another callback")

    w = walk(lambda: lifecycle["save"](tmp_path / "a", lifecycle["heard"]))
    assert list(w.returns) == [
        "lifecycle (kurahi.lifecycle._walk_probe:save) -> fs (kurahi.fs.durable:atomic_write)"
        " -> … -> fs (kurahi.fs.durable:_timed.<locals>.call) -> back to lifecycle (kurahi.lifecycle._walk_probe:heard)"
    ], w.returns
    assert set(w.returns.values()) == {2}, "atomic_write syncs the file and its folder: two calls back, one report"

    # The same walk with a watcher from a room below fs is no return.
    w = walk(lambda: lifecycle["save"](tmp_path / "b", js["heard"]))
    assert w.returns == {}
    assert w.calls > 3
