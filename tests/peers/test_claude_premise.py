"""Issue 39's premise, checked on the real Claude Code 2.1.332 rather than assumed.

One base session is made with the real CLI (five turns, a Bash tool call, a subagent, under a
Stop hook; :mod:`support.claude_damage`), and one compacted copy of it. Every kind of damage in
the issue's table is then made, as users meet it, on a copy of one of them, and the next
``claude --resume SID -p next`` (or what the user runs: ``--continue`` from another folder) is
read off the stand-in API: it exits 0 with nothing on stderr, and its request lacks exactly the
words the table says and holds every other one. What 2.1.332 bridges or does by design (a
missing parent, a torn line, an orphan tool result, a compaction, a rewind, a subagent,
``--resume`` from elsewhere) loses nothing.

All tests share one stand-in (``claude_api``) and the two sessions (``claude_base``,
``claude_compacted``), built once for the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.claude_api import prompt_of
from support.claude_damage import (
    LOSSES,
    NON_LOSSES,
    ON_COMPACTED,
    ON_COMPACTED_NON_LOSSES,
    Damaged,
    Session,
)
from support.claude_peer import phrases_in

pytestmark = pytest.mark.claude


def _seen(damaged: Damaged, body: dict[str, Any]) -> set[str]:
    return phrases_in(body, damaged.session.words())


def test_the_undamaged_session_sends_every_word(claude_base: Session, tmp_path: Path) -> None:
    s = claude_base.copy(tmp_path)
    body = s.next_request()
    assert phrases_in(body, s.words()) == s.words()
    assert len(s.words()) == 12  # five prompts and five replies (a subagent's among them), a command and its output


@pytest.mark.parametrize("kind", list(LOSSES))
def test_each_loss_leaves_out_what_the_table_says(
    kind: str, claude_base: Session, claude_compacted: Session, tmp_path: Path
) -> None:
    damaged = LOSSES[kind]((claude_compacted if kind in ON_COMPACTED else claude_base).copy(tmp_path))
    assert damaged.lost, kind
    body = damaged.next_request()  # exit 0, nothing on stderr, the API took it: ClaudePeer checks
    seen = _seen(damaged, body)
    assert not damaged.lost & seen, f"{kind}: still sent {sorted(damaged.lost & seen)}"
    assert damaged.kept <= seen, f"{kind}: lost more than the table says: {sorted(damaged.kept - seen)}"
    typed = [prompt_of(m) for m in body["messages"]]
    for prompt in damaged.injected:
        assert prompt in typed, f"{kind}: {prompt!r} is not sent as a user message"


@pytest.mark.parametrize("kind", list(NON_LOSSES))
def test_what_the_cli_bridges_or_means_loses_nothing(
    kind: str, claude_base: Session, claude_compacted: Session, tmp_path: Path
) -> None:
    damaged = NON_LOSSES[kind]((claude_compacted if kind in ON_COMPACTED_NON_LOSSES else claude_base).copy(tmp_path))
    body = damaged.next_request()
    seen = _seen(damaged, body)
    assert damaged.kept <= seen, f"{kind}: lost {sorted(damaged.kept - seen)}"
    kept_anyway = damaged.session.dropped & seen
    assert not kept_anyway, f"{kind}: sends what it leaves by design: {sorted(kept_anyway)}"
