"""The throwaway home Kurahi's gateway target runs in: a resident seeded with identity files and ten facts.

Its name ends in ``.kolo-test`` (or it is ``KOLO_SMOKE_HOME``, which must, and is deleted and
recreated), with the deterministic profiles ``alpha`` and ``beta``, a window small enough
that the rounds compact after a dozen turns, and ten facts in ``memory/facts.md`` for the
recall probe.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from kurahi.errors import UsageError
from kurahi.resident.home import Home

__all__ = ["FACTS", "SMOKE_SUFFIX", "seed_home", "smoke_home"]

SMOKE_SUFFIX = ".kolo-test"
SMOKE_WINDOW = 8000
SMOKE_RESERVE = 2000

FACTS = [
    ("The harbour lantern is painted cobalt blue.", "what colour is the harbour lantern", "cobalt"),
    ("The orchard gate code is 4471.", "orchard gate code", "4471"),
    ("Marina's favourite composer is Debussy.", "favourite composer", "Debussy"),
    ("The quartz clock in the study runs four minutes fast.", "quartz clock study", "four minutes fast"),
    ("The willow by the pond was planted in 2019.", "willow pond planted", "2019"),
    ("Backups go to the meridian drive every Sunday.", "backups meridian drive", "every Sunday"),
    ("The ember kiln needs forty minutes to heat.", "ember kiln heat", "forty minutes"),
    ("The lineage notebook lives on the third shelf.", "lineage notebook shelf", "third shelf"),
    ("Checklist item two is to book the ferry.", "checklist item two", "book the ferry"),
    ("The resident's tea is jasmine, no sugar.", "resident tea", "jasmine"),
]
"""Ten facts seeded in throwaway mode: (line in memory/facts.md, recall query, expected text)."""


def smoke_home() -> Path:
    """A fresh throwaway home's path: ``KOLO_SMOKE_HOME`` emptied, else a new temporary directory.

    Raises:
        UsageError: ``KOLO_SMOKE_HOME`` does not end in ``.kolo-test``.
    """
    given = os.environ.get("KOLO_SMOKE_HOME")
    if given:
        if not given.rstrip("/").endswith(SMOKE_SUFFIX):
            raise UsageError(f"KOLO_SMOKE_HOME must end in {SMOKE_SUFFIX!r} (it is deleted and recreated): {given}")
        path = Path(given)
        if path.exists():
            shutil.rmtree(path)
        return path
    return Path(tempfile.mkdtemp(suffix=SMOKE_SUFFIX))


def seed_home(home: Home, agent: str) -> list[dict[str, str]]:
    """Initialise ``home`` with resident ``agent``, its config and ten facts; the facts' ``[{query, expect}]``."""
    import msgspec

    from kurahi.resident.init import init_home

    init_home(home.root, agent)
    # A small window, so that the rounds (--rounds) compact after a dozen turns; the
    # disruptions' sessions stay far below it.
    window = {"provider": "deterministic", "contextWindow": SMOKE_WINDOW}
    config = {
        "models": {"alpha": window, "beta": window},
        "defaults": {"model": "alpha"},
        "agents": {
            agent: {
                "model": "alpha",
                "tools": {"allow": ["*"], "deny": []},
                "compaction": {"reserveTokens": SMOKE_RESERVE, "keepRecentTokens": 1200},
            }
        },
    }
    home.config.write_bytes(msgspec.json.format(msgspec.json.encode(config)) + b"\n")
    facts_file = home.agent(agent).workspace / "memory" / "facts.md"
    facts_file.write_text("# Facts\n\n" + "".join(f"- {line}\n" for line, _, _ in FACTS))
    return [{"query": q, "expect": e} for _, q, e in FACTS]
