"""The kept fuzz corpus as a regression suite: every file through every target, under the fuzzing rule.

``tests/fuzz/run.py`` fuzzes with atheris; this replays what it kept (seeds, inputs that
found new coverage, and every input that once crashed) without atheris, so ``make test``
catches a regression in any target on any of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kurahi.errors import KurahiError
from support.fuzz_targets import TARGETS, Mismatch, Target, use_scratch

CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file())


@pytest.fixture(autouse=True)
def scratch(tmp_path: Path) -> Iterator[Path]:
    use_scratch(tmp_path / "scratch")
    yield tmp_path / "scratch"


def replay(target: Target, files: list[Path]) -> list[str]:
    """Run every file through a target; one line per file that broke the rule."""
    broken = []
    for f in files:
        try:
            target.run(f.read_bytes())
        except Exception as exc:  # the rule: nothing may escape a target, not even a KurahiError it let through
            broken.append(f"{f.relative_to(CORPUS)}: {type(exc).__name__}: {exc}"[:500])
    return broken


def test_every_target_has_a_corpus_and_the_corpus_stays_small() -> None:
    for name in TARGETS:
        files = list((CORPUS / name).iterdir())
        assert 0 < len(files) <= 400, (name, len(files))
    assert {p.name for p in CORPUS.iterdir()} == set(TARGETS)
    assert sum(f.stat().st_size for f in FILES) < 2 * 1024 * 1024


@pytest.mark.parametrize("name", list(TARGETS))
def test_corpus_replays_under_the_rule(name: str) -> None:
    broken = replay(TARGETS[name], FILES)
    assert not broken, f"{len(broken)} of {len(FILES)} inputs broke the rule:\n" + "\n".join(broken[:20])


def test_replay_reports_a_foreign_error_and_a_mismatch() -> None:
    # The replay must be able to fail: a target that lets a foreign error or a mismatch out is
    # reported, one that raises only Kurahi errors inside and returns is not.
    files = FILES[:3]

    def foreign(data: bytes) -> None:
        raise ValueError("not ours")

    def wrong(data: bytes) -> None:
        raise Mismatch("two answers")

    def clean(data: bytes) -> None:
        try:
            raise KurahiError("ours, and caught")
        except KurahiError:
            return

    assert len(replay(Target("foreign", "", foreign), files)) == 3
    assert len(replay(Target("wrong", "", wrong), files)) == 3
    assert replay(Target("clean", "", clean), files) == []
