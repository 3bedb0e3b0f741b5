"""What Kurahi knows of each Claude Code release, as one row of facts per release.

Code that must behave as a release does asks for the release's row, never compares version
strings. The facts are those measured on the real CLI (offline, against a stand-in of the
Messages API); a fact not measured is ``None`` and the code that needs it says so.
"""

from __future__ import annotations

import msgspec

__all__ = ["CLAUDE_CODE_2_1_332", "KNOWN_VERSIONS", "VERSIONS", "Release", "facts", "newest"]


class Release(msgspec.Struct, frozen=True, kw_only=True):
    """One Claude Code release, as its ``--resume`` loader was measured."""

    version: str
    """The release (``claude --version``)."""
    line: str
    """Its line (``2.1``): a release Kurahi has not run is read with the newest row of its line."""
    view: str
    """The name of what its ``--resume`` sends, in reports (``claude-code-2.1.332``)."""
    label: str
    """Its name in sentences."""
    leaf_from_last_prompt: bool
    """``--resume`` starts from the row the last ``last-prompt`` row's ``leafUuid`` names when it is a
    leaf (one naming an inner row is ignored), else from the newest leaf in file order."""
    bridges_missing_parent: bool
    """A ``parentUuid`` naming a uuid the file lacks is bridged to the nearest earlier row in file order."""
    drops_invalid_line: bool
    """A torn or invalid line drops that row only."""
    drops_orphan_results: bool
    """A tool result whose tool call is not sent is left out (nothing else is lost)."""
    torn_reply_text: str | None
    """What stands for a reply that is missing after the last prompt (a torn final reply)."""
    splices_preserved_tail: bool
    """After ``/compact``, the rows ``compactMetadata`` names as preserved are sent after the summary."""
    later_duplicate_wins: bool | None
    """Of two rows with one uuid, the later wins, parent and content (``None``: not measured)."""
    merges_message_id: bool
    """Assistant rows sharing ``message.id`` are sent as one message, whichever branch holds them."""
    numbers_turns: bool
    """Each prompt row records ``turnPosition.turnIndex``: one more than the last numbered row on the
    path it was written on (a rewind numbers its prompt for the path it rewound to; the compaction's
    summary keeps the number of the turn it ended)."""
    running_notes: str | None
    """Where a running ``claude`` announces itself in the config dir (``sessions/<pid>.json``), if it does."""
    takes_lock: bool
    """Whether it locks a session file while writing it (a running one can then be seen by its lock)."""


CLAUDE_CODE_2_1_332 = Release(
    version="2.1.332",
    line="2.1",
    view="claude-code-2.1.332",
    label="Claude Code 2.1.332",
    leaf_from_last_prompt=True,
    bridges_missing_parent=True,
    drops_invalid_line=True,
    drops_orphan_results=True,
    torn_reply_text="No response requested.",
    splices_preserved_tail=True,
    later_duplicate_wins=True,
    merges_message_id=True,
    numbers_turns=True,
    running_notes="sessions",
    takes_lock=False,
)
VERSIONS: tuple[Release, ...] = (CLAUDE_CODE_2_1_332,)
"""Every release Kurahi has been run against, oldest first."""
KNOWN_VERSIONS = tuple(r.version for r in VERSIONS)


def newest() -> Release:
    """The newest release Kurahi knows: the loader the next ``claude --resume`` is assumed to run."""
    return VERSIONS[-1]


def facts(version: str) -> Release | None:
    """The row of ``version``, else the newest of its line; ``None`` for a line Kurahi does not know."""
    for release in VERSIONS:
        if release.version == version:
            return release
    line = ".".join(version.split(".")[:2])
    return next((r for r in reversed(VERSIONS) if r.line == line), None)
