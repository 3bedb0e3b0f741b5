"""``kurahi mcp`` does not serve Claude Code's sessions yet: a ``~/.claude`` beside another state changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kurahi.errors import UsageError
from kurahi.mcp_server.served import find_state
from support.claude_sessions import four_turns


def test_a_claude_dir_is_not_a_state_to_serve(tmp_path: Path) -> None:
    four_turns()[0].write(tmp_path / ".claude")
    with pytest.raises(UsageError, match="no state to serve"):
        find_state(env={"HOME": str(tmp_path)})
    sessions = tmp_path / ".pi" / "agent" / "sessions" / "--w--"
    sessions.mkdir(parents=True)
    assert find_state(env={"HOME": str(tmp_path)}) == ("pi", tmp_path / ".pi" / "agent" / "sessions")
