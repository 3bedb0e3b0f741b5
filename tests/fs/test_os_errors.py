"""One context manager turns an ``OSError`` into the Kurahi error a site names (issue 31)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kurahi.errors import ContinuityError, ToolError, TranscriptReadError
from kurahi.fs.os_errors import os_error, os_errors


def test_an_os_error_becomes_the_named_error_with_its_path_and_cause(tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    with pytest.raises(TranscriptReadError) as info, os_errors(TranscriptReadError, "read failed", path=missing):
        os.open(missing, os.O_RDONLY)
    assert str(info.value) == f"{missing}: read failed: No such file or directory"
    assert info.value.path == str(missing)
    assert isinstance(info.value.__cause__, FileNotFoundError)
    assert info.value.exit_code == 3


def test_an_error_without_a_path_field_names_the_path_first(tmp_path: Path) -> None:
    with pytest.raises(ContinuityError) as info, os_errors(ContinuityError, "cannot read", path=tmp_path):
        os.read(os.open(tmp_path, os.O_RDONLY), 1)  # a directory: EISDIR
    assert str(info.value) == f"{tmp_path}: cannot read: Is a directory"


def test_other_fields_and_an_empty_doing(tmp_path: Path) -> None:
    err = os_error(ToolError, "", FileNotFoundError(2, "No such file or directory"), path="notes.md", tool="read")
    assert (str(err), err.tool) == ("read: notes.md: No such file or directory", "read")


def test_an_error_without_errno_text_is_named_by_its_type_never_its_own_text(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.write_text("x")
    with pytest.raises(TranscriptReadError) as info, os_errors(TranscriptReadError, "cannot copy", path="a"):
        shutil.copyfile(a, a)  # SameFileError: its text names both absolute paths
    assert str(info.value) == "a: cannot copy: SameFileError"
    assert str(tmp_path) not in str(info.value)


def test_anything_else_passes_through_and_a_clean_block_is_left_alone(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an OSError"), os_errors(TranscriptReadError, "read failed", path="x"):
        raise ValueError("not an OSError")
    with os_errors(TranscriptReadError, "read failed", path=tmp_path):
        assert tmp_path.is_dir()
