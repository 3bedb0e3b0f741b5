"""What differs between OpenClaw releases, as one table of facts per release.

Code that must behave as a release does asks :func:`facts` for the release's row, never
compares version strings. A release Kurahi has not been run against gets the row of its
line (``2026.9.x``), when Kurahi knows the line.
"""

from __future__ import annotations

import msgspec

from kurahi.runtimes.base import View

__all__ = [
    "DRIVEN_VERSIONS",
    "JSON_ERA",
    "KNOWN_VERSIONS",
    "OTHER_SCHEMA_WRITERS",
    "READ_SCHEMA_VERSIONS",
    "SCHEMA_WRITERS",
    "SQLITE_ERA",
    "VERSIONS",
    "WRITE_SCHEMA_VERSIONS",
    "Release",
    "facts",
    "known",
    "of_era",
]


class Release(msgspec.Struct, frozen=True, kw_only=True):
    """One OpenClaw release as Kurahi reads and drives it."""

    version: str
    """The release (``openclaw --version``)."""
    line: str
    """Its line (``2026.9``): releases of a line share every fact below."""
    era: str
    """``json`` (transcripts are files beside ``sessions.json``) or ``sqlite`` (rows of the agent's store)."""
    view: View
    """What it sends the model of a session's path (:mod:`kurahi.runtimes.view` has the rules)."""
    workspace_in_user_home: bool
    """Whether the default workspace is ``~/.openclaw/workspace`` whatever ``OPENCLAW_STATE_DIR`` says."""
    reset_by_rpc: bool
    """Whether a key is reset through the ``sessions.reset`` RPC: the ``agent`` connection of this
    release lacks the admin scope a typed ``/reset`` needs."""
    resets_by_itself: bool
    """Whether, without a ``session.reset`` block, the gateway resets sessions daily by itself."""
    rounds: bool
    """Whether the continuity suite's rounds run on it (they read the SQLite era's store)."""
    gateway_lock: str
    """Where a running gateway's lock lives: ``state-dir`` (``tmp/openclaw-<uid>/gateway.*.lock.sqlite``
    in the state dir, held by SQLite) or ``tmpdir`` (``$TMPDIR/openclaw-<uid>/gateway.<hash>.lock``, a pid)."""
    agent_schema: int | None = None
    """The agent store's schema version it writes (``schema_meta.schema_version``; ``None``: the JSON era)."""
    activation_writes: bool = False
    """Whether activation (``rescue apply``) writes into a store of this schema: only a schema whose
    meaning Kurahi checks a write against (:mod:`kurahi.runtimes.openclaw.sqlite.schema`)."""
    drives: bool = True
    """Whether the continuity suite drives a resident of this release (its CLI, gateway and resets
    were run and measured); a release read only for its stores is not driven."""


JSON_ERA = Release(
    version="2026.5.28",
    line="2026.5",
    era="json",
    view=View(
        name="openclaw-2026.5",
        label="OpenClaw 2026.5",
        after_last_reset=False,  # a reset starts a new file there
        overflow="compaction",
        empty_when_moved=True,
        request_runtimes=("openclaw-2026.5",),
        fold=(
            "OpenClaw 2026.5 compacts them into a summary on its next turn "
            "(`openclaw sessions compact` does it at once)"
        ),
    ),
    workspace_in_user_home=True,
    reset_by_rpc=True,
    resets_by_itself=True,
    rounds=False,
    gateway_lock="tmpdir",
)
_SQLITE_VIEW = View(
    name="openclaw-2026.9",
    label="OpenClaw 2026.9",
    after_last_reset=True,
    overflow="bytes",
    empty_when_moved=False,
    # It repairs tool pairing in memory as 2026.5 does (docs/session-doctor.md).
    request_runtimes=("openclaw-2026.5",),
    fold="`openclaw sessions compact` after this folds them into a summary the model sees",
)
SQLITE_2026_9_5 = Release(
    version="2026.9.5",
    line="2026.9",
    era="sqlite",
    view=_SQLITE_VIEW,
    workspace_in_user_home=False,
    reset_by_rpc=False,
    resets_by_itself=False,
    rounds=True,
    gateway_lock="state-dir",
    # Its store is read (listing losses); a write waits for 2026.9.6 to migrate it to 23, whose
    # transcript table activation writes (2026.9.5's has no event_zstd, no search-row map).
    agent_schema=21,
    activation_writes=False,
    drives=False,  # its stores are read (and migrated by 2026.9.6); the suite was never run on it
)
SQLITE_ERA = Release(
    version="2026.9.6",
    line="2026.9",
    era="sqlite",
    view=_SQLITE_VIEW,
    workspace_in_user_home=False,
    reset_by_rpc=False,
    resets_by_itself=False,
    rounds=True,
    gateway_lock="state-dir",
    agent_schema=23,
    activation_writes=True,
)
VERSIONS: tuple[Release, ...] = (JSON_ERA, SQLITE_2026_9_5, SQLITE_ERA)
"""Every release Kurahi has been run against, oldest first."""
KNOWN_VERSIONS = tuple(r.version for r in VERSIONS)
"""Their version strings."""
SCHEMA_WRITERS: dict[int, str] = {
    19: "OpenClaw 2026.8.1-2026.9.4",
    21: "OpenClaw 2026.9.5",
    23: "OpenClaw 2026.9.6",
}
"""Which releases write each agent-store schema version Kurahi reads: the ``OPENCLAW_AGENT_SCHEMA_VERSION``
of every 2026.8 and 2026.9 release and prerelease on the npm registry, and a real store of each
read in the tests (``tests/data/openclaw/``: ``2026.9.4-reset``, ``2026.9.5-reset``, the 2026.9.6
samples)."""
OTHER_SCHEMA_WRITERS: dict[int, str] = {
    16: "prereleases only (2026.7.2-beta.7 and 2026.8.1-beta.1 among them)",
    17: "the prereleases 2026.8.1-beta.2, 2026.8.1-beta.3 and 2026.9.1-beta.1 only",
    22: (
        "no published OpenClaw release or prerelease: only source builds between 2026.9.5 and 2026.9.6 "
        "(2026.9.6 calls it deployed and migrates it)"
    ),
}
"""Schema versions Kurahi does not read, and who writes them. 22 came with OpenClaw's pull request
153834, merged for 2026.9.6, which shipped 23: no package on the npm registry writes it, so no real
store of it was ever read here, and Kurahi does not claim to read it. 20 (cold archives) was never
published either, 16 and 17 only in prereleases. OpenClaw 2026.9.6 migrates each of them to 23."""
READ_SCHEMA_VERSIONS: tuple[int, ...] = tuple(sorted(SCHEMA_WRITERS))
"""Agent-store schema versions Kurahi reads (:data:`SCHEMA_WRITERS`). The readers select only the
columns all of them have, and the compressed event columns where they exist."""
WRITE_SCHEMA_VERSIONS: tuple[int, ...] = tuple(
    sorted({r.agent_schema for r in VERSIONS if r.activation_writes and r.agent_schema is not None})
)
"""Agent-store schema versions activation writes into (23: OpenClaw 2026.9.6's)."""


def facts(version: str) -> Release | None:
    """The row of ``version``, else the newest of its line (``2026.9.x``); ``None`` for a line Kurahi does not know."""
    for release in VERSIONS:
        if release.version == version:
            return release
    line = ".".join(version.split(".")[:2])
    return next((r for r in reversed(VERSIONS) if r.line == line), None)


DRIVEN_VERSIONS = tuple(r.version for r in VERSIONS if r.drives)
"""The releases the continuity suite drives."""


def known(version: str) -> bool:
    """Whether the continuity suite drives exactly this release (it was run and measured on it)."""
    return version in DRIVEN_VERSIONS


def of_era(era: str) -> Release:
    """The newest known release of ``era`` (``json`` or ``sqlite``)."""
    return next(r for r in reversed(VERSIONS) if r.era == era)
