"""SIGKILL a process appending in a loop: every acknowledged entry survives, the file opens.

Runs the campaign of ``benchmarks/crash_append.py`` (200 rounds there) with fewer rounds.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "crash_append.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crash_append", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("crash_append", module)
    spec.loader.exec_module(module)
    return module


def test_sigkill_while_appending_loses_nothing(tmp_path: Path) -> None:
    crash = _load()
    summary = crash.run_campaign(25, directory=tmp_path)
    detail = summary.to_dict()
    assert summary.rounds == 25, detail
    assert summary.lost == 0, detail
    assert summary.unreadable == 0, detail
    assert summary.damaged == 0, detail
    assert summary.reopen_failures == 0, detail
    assert summary.child_errors == 0, detail
    # the children did append (kills are not all landing before the first append)
    assert summary.acknowledged > 25 + 1, detail
    assert summary.entries_in_file >= summary.acknowledged, detail
