"""kurahi._aside: work in a forked child, and the same answer whenever the child cannot give it."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from kurahi._aside import Aside, can_fork

PARENT = os.getpid()

needs_fork = pytest.mark.skipif(not can_fork(), reason="needs fork(), one thread and two processors")


def _no_child_left(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@needs_fork
def test_the_work_runs_in_a_child_and_its_answer_comes_back() -> None:
    with Aside(os.getpid, int, fork=True) as aside:
        assert aside.forked
        pid = aside._pid
        got = aside.result()
    assert got != PARENT and got == pid
    assert _no_child_left(got)


def test_without_fork_the_work_runs_here_when_asked() -> None:
    calls: list[int] = []

    def work() -> int:
        calls.append(os.getpid())
        return 7

    with Aside(work, int, fork=False) as aside:
        assert not aside.forked and calls == []
        assert aside.result() == 7
    assert calls == [PARENT]


@needs_fork
def test_a_child_that_fails_leaves_the_work_to_the_parent() -> None:
    def work() -> int:
        if os.getpid() != PARENT:
            raise RuntimeError("the child breaks")
        return 42

    with Aside(work, int, fork=True) as aside:
        assert aside.forked
        assert aside.result() == 42


@needs_fork
def test_a_child_that_is_killed_leaves_the_work_to_the_parent() -> None:
    def work() -> int:
        if os.getpid() != PARENT:
            os.kill(os.getpid(), signal.SIGKILL)
        return 5

    with Aside(work, int, fork=True) as aside:
        assert aside.result() == 5


@needs_fork
def test_an_answer_of_the_wrong_type_is_not_taken() -> None:
    def work() -> int:
        return "not an int" if os.getpid() != PARENT else 9  # type: ignore[return-value]

    with Aside(work, int, fork=True) as aside:
        assert aside.result() == 9


@needs_fork
def test_leaving_without_asking_stops_and_reaps_the_child() -> None:
    gate_r, gate_w = os.pipe()

    def work() -> int:
        os.read(gate_r, 1)  # waits for ever: only the kill ends it
        return 0

    try:
        with Aside(work, int, fork=True) as aside:
            pid = aside._pid
            assert pid is not None
        assert _no_child_left(pid)
    finally:
        os.close(gate_r)
        os.close(gate_w)


@pytest.fixture
def second_thread() -> Iterator[None]:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


def test_a_process_with_another_thread_never_forks(second_thread: None) -> None:
    assert not can_fork()
    with Aside(os.getpid, int, fork=True) as aside:
        assert not aside.forked
        assert aside.result() == PARENT
