"""Memory files and deterministic keyword recall over them.

A resident's memory is ``MEMORY.md`` and ``memory/*.md`` in its workspace. Recall splits the
query into words, scores each line by how many distinct query words it holds (case- and
accent-insensitive, whole words or word prefixes of 4+ letters), and returns the best lines
in a stable order: the same files and query give the same answer, always. Markup-only lines
and the runtime's action tags (``<!-- kurahi:action ... -->``) are never returned.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kurahi.locations.memory_files import memory_files

__all__ = ["STOP_WORDS", "RecallHit", "recall"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
"""Words a query is not searched for: they are in nearly every line (``kurahi mcp``'s recall skips them too)."""
_MAX_FILE = 4 * 1024 * 1024


@dataclass(frozen=True)
class RecallHit:
    """One recalled line."""

    file: str
    """Relative to the workspace (``MEMORY.md``, ``memory/facts.md``)."""
    line: int
    """1-based."""
    text: str
    score: int
    """Distinct query words found."""

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"file": self.file, "line": self.line, "text": self.text, "score": self.score}


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _words(text: str) -> list[str]:
    return _WORD.findall(_fold(text))


def recall(workspace: Path, query: str, limit: int = 5) -> list[RecallHit]:
    """The memory lines that best match ``query`` (at most ``limit``, best first).

    Ties keep file order then line order. A query with no usable words finds nothing.
    """
    terms = sorted({w for w in _words(query) if w not in STOP_WORDS and len(w) > 1})
    if not terms or limit <= 0:
        return []
    hits: list[RecallHit] = []
    for path in memory_files(workspace):
        try:
            with path.open("rb") as f:
                text = f.read(_MAX_FILE).decode("utf-8", "replace")
        except OSError:
            continue
        rel = path.relative_to(workspace).as_posix()
        for n, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("<!--"):
                continue
            words = set(_words(stripped))
            if not words:
                continue
            score = sum(1 for t in terms if t in words or (len(t) >= 4 and any(w.startswith(t) for w in words)))
            if score:
                hits.append(RecallHit(rel, n, stripped, score))
    hits.sort(key=lambda h: -h.score)  # stable: file and line order kept within a score
    return hits[:limit]
