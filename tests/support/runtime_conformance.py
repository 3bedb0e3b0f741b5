"""What every runtime must do, as one class of tests bound once per runtime (the backend mixin's pattern).

A binding names the runtime, a real sample of its state (copied into ``tmp_path``), the key and
agent it holds, and the variable that moves its state. The tests drive the runtime only through
:class:`kurahi.runtimes.base.Runtime` and the registry, as the generic rooms do:

- **locate**: the runtime's own setting wins, and says so; without it, its default under ``HOME``;
- **own and count**: it recognises its state (and not an empty folder), and counts what is there;
- **list**: its agents and keys (a runtime without keys refuses to open an agent, clearly);
- **read pieces in order**: a key's lineage is in time order with the live session last, every
  piece readable, each boundary between two pieces or at a reset entry;
- **view**: the view it judges a key by is one ``lineage check --runtime`` knows;
- **activation round trip**: a loss brought back through the one driver, verified, rolled back
  to the very bytes it found;
- **refusal on running**: a running runtime is seen by the lock it really holds, and a repair
  is refused with nothing changed;
- **its own losses**: a runtime that finds losses inside its session files lists them with the
  fields rescue's listing promises, the same ids each time; the others leave them to rescue;
- **nothing written on read**: every read leaves the state's names and bytes as they were.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kurahi.errors import UsageError
from kurahi.runtimes.registry import RUNTIMES, for_state_dir, named
from kurahi.runtimes.views import NAMES


def tree(root: Path) -> dict[str, str]:
    """Every name under ``root`` and a hash of its bytes (a folder's is ``dir``, a link's its target)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


class RuntimeConformance:
    """Bind by subclassing: set the class attributes and :meth:`make_state`."""

    runtime_name: ClassVar[str]
    """The runtime's name in the registry."""
    variable: ClassVar[str]
    """The environment variable that moves its state, and how the path follows from it."""
    agent: ClassVar[str | None] = None
    """An agent of the sample (keyed runtimes)."""
    key: ClassVar[str | None] = None
    """A key of that agent with at least one loss (keyed runtimes)."""

    def make_state(self, dst: Path) -> Path:
        """A writable copy of a real sample of the runtime's state at ``dst``."""
        raise NotImplementedError

    def located(self, value: Path) -> Path:
        """Where the state is when :attr:`variable` is ``value``."""
        return value

    def fingerprint(self, state: Path) -> dict[str, str]:
        """What a rollback must give back exactly (default: every name and its bytes)."""
        return tree(state)

    def hold_running(self, state: Path) -> Any:
        """A context manager that holds the lock the running runtime holds (``None``: it takes none)."""
        return None

    # -- fixtures ---------------------------------------------------------------------------------

    @pytest.fixture
    def runtime(self) -> Any:
        return named(self.runtime_name)

    @pytest.fixture
    def state(self, tmp_path: Path) -> Path:
        return self.make_state(tmp_path / "state")

    # -- locate, own, count -----------------------------------------------------------------------

    def test_is_in_the_registry_once(self, runtime: Any) -> None:
        assert [r for r in RUNTIMES if r.name == self.runtime_name] == [runtime]

    def test_locate_follows_its_variable_and_says_so(self, runtime: Any, tmp_path: Path) -> None:
        moved = tmp_path / "elsewhere"
        found = runtime.locate({"HOME": str(tmp_path / "home"), self.variable: str(moved)})
        assert (found.path, found.source, found.explicit) == (self.located(moved), self.variable, True)
        default = runtime.locate({"HOME": str(tmp_path / "home")})
        assert default.source == "default" and not default.explicit
        assert default.path.is_relative_to(tmp_path / "home")

    def test_owns_its_state_and_not_an_empty_folder(self, runtime: Any, state: Path, tmp_path: Path) -> None:
        empty = tmp_path / "empty"
        empty.mkdir()
        assert runtime.owns(state)
        assert not runtime.owns(empty)

    def test_inventory_counts_what_is_there(self, runtime: Any, state: Path) -> None:
        counts, words = runtime.inventory(state)
        assert counts and all(isinstance(v, int) for v in counts.values())
        assert any(v > 0 for v in counts.values()), counts
        assert all(str(v) in words for v in counts.values()), (counts, words)

    # -- list, read, view -------------------------------------------------------------------------

    def test_lists_its_agents_and_keys(self, runtime: Any, state: Path) -> None:
        if not runtime.keyed:
            assert runtime.agents(state) == []
            with pytest.raises(UsageError):
                runtime.open_agent(state)
            return
        assert self.agent in runtime.agents(state)
        assert for_state_dir(state) is runtime
        with runtime.open_agent(state, self.agent) as agent:
            assert self.key in agent.keys

    def test_reads_a_keys_pieces_in_time_order_live_last(self, runtime: Any, state: Path) -> None:
        if not runtime.keyed:
            assert runtime.signature(state)  # a folder of sessions is still watched
            return
        with runtime.open_agent(state, self.agent) as agent:
            lineage = agent.lineage(self.key)
            pieces = list(lineage.pieces)
            assert lineage.boundaries, "the sample holds a reset: a boundary between pieces or inside one"
            assert pieces[-1].current and not any(p.current for p in pieces[:-1])
            older = [p.sort_ms for p in pieces[:-1]]
            assert older == sorted(older)
            for piece in pieces:
                assert agent.transcript_bytes(piece).startswith(b'{"type":"session"'), piece.source
                with agent.open_piece(piece) as t:
                    assert t.session_id == piece.session_id
            between = [b for b in lineage.boundaries if b.kind == "between-pieces"]
            assert len(between) == len(pieces) - 1
            inside = sum(len(p.reset_entries) for p in pieces)
            assert len(lineage.boundaries) == len(between) + inside

    def test_judges_a_key_by_a_view_check_knows(self, runtime: Any, state: Path) -> None:
        if not runtime.keyed:
            assert runtime.loading_view(state, "any") == (None, None)
            return
        with runtime.open_agent(state, self.agent) as agent:
            view = agent.view(agent.lineage(self.key))
            window, where = agent.window(self.key)
        assert view.name in NAMES
        assert isinstance(window, int) and window > 0 and where
        loading, limit = runtime.loading_view(state, self.agent)
        # An activation checks a candidate under the view the key is judged by, or, where the
        # state names no runtime config, under Pi's projection of the whole path without a window.
        # (Its window is the config's or the default, never the contextTokens a key's entry
        # recorded, which rescue's estimate also reads.)
        if loading is None:
            assert limit is None and not view.after_last_reset
        else:
            assert loading == view.name and isinstance(limit, int) and limit > 0

    def test_lists_its_own_losses_or_leaves_them_to_rescue(self, runtime: Any, state: Path) -> None:
        found = runtime.losses(state)
        if found is None:
            return  # rescue reads its lineages (a keyed state), or it loses nothing by itself (its no_losses says why)
        assert not runtime.keyed, "a keyed runtime's losses are its lineages'"
        assert found.losses, "the sample holds a loss"
        ids = [loss.id for loss in found.losses]
        assert len(set(ids)) == len(ids)
        assert ids == [loss.id for loss in runtime.losses(state).losses]
        for loss in found.losses:
            listed = loss.to_dict()
            assert {"id", "agent", "key", "at", "kind", "confidence", "evidence", "lostMessages"} <= set(listed)
            assert loss.lost_messages > 0 and loss.evidence

    def test_reading_writes_nothing(self, runtime: Any, state: Path) -> None:
        before = tree(state)
        runtime.owns(state)
        runtime.inventory(state)
        runtime.signature(state)
        runtime.running(state)
        runtime.losses(state)
        if runtime.keyed:
            for agent_id in runtime.agents(state):
                with runtime.open_agent(state, agent_id) as agent:
                    for key in agent.keys:
                        for piece in agent.lineage(key).pieces:
                            agent.transcript_bytes(piece)
                    agent.reset_policy()
            from kurahi.lifecycle.rescue.losses import find_losses

            find_losses(state)
        assert tree(state) == before

    # -- running, and the activation round trip ----------------------------------------------------

    def test_sees_itself_running_by_the_lock_it_holds(self, runtime: Any, state: Path) -> None:
        assert runtime.running(state) is None
        held = self.hold_running(state)
        if held is None:
            assert runtime.running(state) is None  # it takes no lock: the docs say to quit it first
            return
        with held:
            assert runtime.running(state) is not None
            if runtime.keyed:
                from kurahi.errors import OpenClawRunningError
                from kurahi.lifecycle.rescue.apply import refuse_if_running

                before = tree(state)
                with pytest.raises(OpenClawRunningError, match=runtime.label):
                    refuse_if_running(state)
                assert tree(state) == before
        assert runtime.running(state) is None

    def test_activation_round_trip_through_the_one_driver(self, runtime: Any, state: Path, tmp_path: Path) -> None:
        if not runtime.keyed:
            assert runtime.activation_store(state, "any") == "files"
            return
        from kurahi.lifecycle.activation import rollback_package
        from kurahi.lifecycle.activation.hosts import OfflineHost
        from kurahi.lifecycle.rescue.apply import apply_rescue
        from kurahi.lifecycle.rescue.losses import find_losses

        losses = [x for x in find_losses(state, agent=self.agent, key=self.key).losses if x.confidence != "guess"]
        assert losses, "the sample holds a loss"
        before = self.fingerprint(state)
        result = apply_rescue(state, losses[0].id, OfflineHost(state), tmp_path / "pkg")
        assert result.verified, result
        assert self.fingerprint(state) != before
        rollback_package(tmp_path / "pkg", state, OfflineHost(state))
        assert self.fingerprint(state) == before


@contextmanager
def sqlite_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive SQLite lock on ``path`` (what a running OpenClaw 2026.9 gateway holds)."""
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("CREATE TABLE IF NOT EXISTS held (x)")
        con.execute("BEGIN EXCLUSIVE")
        yield
        con.execute("ROLLBACK")
    finally:
        con.close()
        shutil.rmtree(path.parent.parent, ignore_errors=True)
