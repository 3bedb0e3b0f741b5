"""Built-in tools: the workspace fence, lookups that tell what happened, idempotent memory appends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kurahi.agent.config import ToolPolicy
from kurahi.agent.tools import ListTool, MemoryAppendTool, ReadTool, ToolContext, WriteTool, resolve_in_workspace
from kurahi.errors import PathRefusedError, ToolError


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


@pytest.mark.parametrize("bad", ["../x", "a/../../x", "/etc/passwd", "~/x", "a\x00b", "", "  ", 7, None])
def test_paths_that_leave_the_workspace_are_refused(ws: Path, bad: object) -> None:
    with pytest.raises(PathRefusedError):
        resolve_in_workspace(ws, bad)


def test_a_symlink_out_of_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("s")
    os.symlink(tmp_path / "secret", ws / "link")
    os.symlink(tmp_path, ws / "dirlink")
    ctx = ToolContext(ws, "s:c")
    with pytest.raises(PathRefusedError, match="leaves the workspace"):
        ReadTool().run({"path": "link"}, ctx)
    with pytest.raises(PathRefusedError, match="leaves the workspace"):
        WriteTool().run({"path": "dirlink/new", "content": "x"}, ctx)
    assert not (tmp_path / "new").exists()


def test_write_then_read_and_list(ws: Path) -> None:
    ctx = ToolContext(ws, "s:c1")
    out = WriteTool().run({"path": "notes/todo.md", "content": "1. a\n"}, ctx)
    assert not out.is_error and "wrote 5 bytes" in out.text
    assert ReadTool().run({"path": "notes/todo.md"}, ctx).text == "1. a\n"
    assert ListTool().run({}, ctx).text == "notes/"
    with pytest.raises(ToolError, match="is a directory"):
        ReadTool().run({"path": "notes"}, ctx)


def test_write_lookup_compares_the_file_with_the_intended_content(ws: Path) -> None:
    tool, ctx = WriteTool(), ToolContext(ws, "s:c1")
    args = {"path": "a.md", "content": "intended"}
    missing = tool.lookup(args, ctx)
    assert missing is not None and missing.is_error and "did not take effect" in missing.text
    (ws / "a.md").write_text("something else")
    other = tool.lookup(args, ctx)
    assert other is not None and other.is_error
    tool.run(args, ctx)
    done = tool.lookup(args, ctx)
    assert done is not None and not done.is_error and "holds the intended content" in done.text


def test_memory_append_happens_once_per_action_and_lookup_sees_it(ws: Path) -> None:
    tool = MemoryAppendTool()
    a, b = ToolContext(ws, "s:c1"), ToolContext(ws, "s:c2")
    args = {"text": "The lantern is cobalt.", "file": "facts.md"}
    tool.run(args, a)
    # A call its lookup settled as not done never runs after it (a late run by a stalled
    # gateway would make the settlement false): it says so and writes nothing.
    late = ToolContext(ws, "s:c0")
    assert tool.lookup(args, late).is_error  # type: ignore[union-attr]
    refused = tool.run(args, late)
    assert refused.is_error and "settled as not done" in refused.text
    assert tool.lookup(args, late).is_error  # type: ignore[union-attr]
    again = tool.run(args, a)
    assert "already appended" in again.text
    tool.run(args, b)
    text = (ws / "memory" / "facts.md").read_text()
    assert text.count("The lantern is cobalt.") == 2  # two actions, two blocks; the repeat added nothing
    found = tool.lookup(args, a)
    assert found is not None and not found.is_error
    with pytest.raises(PathRefusedError):
        tool.run({"text": "x", "file": "../MEMORY.md"}, a)
    with pytest.raises(PathRefusedError):
        tool.run({"text": "x", "file": "notes.txt"}, a)


def test_tool_policy() -> None:
    assert ToolPolicy().permits("write")
    assert not ToolPolicy(deny=["write"]).permits("write")
    assert ToolPolicy(allow=["read"]).permits("read") and not ToolPolicy(allow=["read"]).permits("write")
    assert not ToolPolicy(deny=["*"]).permits("read")
