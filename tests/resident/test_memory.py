"""A resident's memory: which files hold it, and deterministic recall over them."""

from __future__ import annotations

import os
from pathlib import Path

from kurahi.locations.memory_files import memory_files
from kurahi.resident.memory import recall


def workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    ws = tmp_path / "ws"
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text, encoding="utf-8")
    return ws


def test_memory_is_the_main_file_then_the_folder_by_name_and_nothing_else(tmp_path: Path) -> None:
    ws = workspace(
        tmp_path,
        {"memory/b.md": "b", "memory/a.md": "a", "MEMORY.md": "m", "memory/notes.txt": "t", "other.md": "o"},
    )
    assert [p.relative_to(ws).as_posix() for p in memory_files(ws)] == ["MEMORY.md", "memory/a.md", "memory/b.md"]


def test_a_memory_file_linked_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("the vault code is 4471\n", encoding="utf-8")
    ws = workspace(tmp_path, {"memory/a.md": "the garden gate is blue\n"})
    os.symlink(secret, ws / "memory" / "linked.md")
    assert [p.name for p in memory_files(ws)] == ["a.md"]
    assert recall(ws, "vault code") == []


def test_recall_ranks_by_distinct_words_and_keeps_file_then_line_order_on_ties(tmp_path: Path) -> None:
    ws = workspace(
        tmp_path,
        {
            "MEMORY.md": "Ava likes green tea\nthe tea is in the cupboard\n",
            "memory/a.md": "green tea for Ava, every morning\n",
        },
    )
    hits = recall(ws, "Ava green tea")
    assert [(h.file, h.line, h.score) for h in hits] == [
        ("MEMORY.md", 1, 3),
        ("memory/a.md", 1, 3),
        ("MEMORY.md", 2, 1),
    ]
    assert recall(ws, "Ava green tea") == hits  # the same files and query give the same answer


def test_recall_folds_case_and_accents_and_matches_prefixes_of_four_letters(tmp_path: Path) -> None:
    ws = workspace(tmp_path, {"MEMORY.md": "Renée's birthday is in MARCH\nthe cat is grey\n"})
    assert [h.line for h in recall(ws, "renee birthday")] == [1]
    assert [h.line for h in recall(ws, "birth")] == [1], "a word prefix of 4+ letters matches"
    assert recall(ws, "ca") == [], "a two-letter prefix does not"


def test_recall_skips_stop_words_markup_lines_and_action_tags(tmp_path: Path) -> None:
    ws = workspace(
        tmp_path,
        {"MEMORY.md": "<!-- kurahi:action id=1 the plan -->\n\n# \nwhat we said about the plan\n"},
    )
    assert recall(ws, "what was the") == [], "a query of stop words finds nothing"
    assert [(h.line, h.text) for h in recall(ws, "plan")] == [(4, "what we said about the plan")]
    assert recall(ws, "plan", limit=0) == []
