"""The rooms of the package, lowest first: a module imports only from its own room and the rooms before it.

``tests/test_layers.py`` walks every import of every module (at the top, inside functions,
under ``TYPE_CHECKING``, and module names given as strings to a lazy loader or to
``importlib``) and fails on an import against this order, or on any import cycle.
The modules at the package root (the error tree, the optional extras, a few private helpers)
sit below every room and import none.
"""

from __future__ import annotations

__all__ = ["ROOMS"]

ROOMS: tuple[tuple[str, str], ...] = (
    ("js", "JSON and JavaScript semantics as Pi (Node) reads and writes them"),
    ("fs", "durable files: atomic replace, fsync policy, no links out of a home, lock files"),
    ("pi", "the Pi session format, read-only: a transcript's bytes as Pi's loader reads them"),
    ("context", "what a model is sent: Pi's projection, token arithmetic, compaction budget"),
    ("store", "where transcripts, catalogs, logs and the audit chain are kept: one interface, three backends"),
    ("locations", "where Kurahi keeps state on this machine, and what a home's catalogs hold"),
    (
        "runtimes",
        "the foreign runtimes whose history Kurahi keeps (Pi, OpenClaw, Claude Code): a room each, one interface",
    ),
    ("testing", "builders, the backends' conformance suite, generated sessions, a throwaway PostgreSQL"),
    ("lineage", "one history across resets: find its pieces, stitch them, check what a runtime sends"),
    ("lifecycle", "session freshness, activation with rollback, and rescue, each in its own folder"),
    ("agent", "a resident's turns: the runtime, its queue, tools, providers and ledger"),
    ("resident", "a resident's home, memory and devices"),
    ("gateway", "the resident gateway over HTTP"),
    ("continuity", "the continuity suite: disruptions, invariants C0-C9, signed reports"),
    ("doctor", "checks of this installation and the state it would use"),
    ("ui", "the web viewer"),
    ("mcp_server", "``kurahi mcp``: a resident's own past over MCP, read-only (lineage, recall, check, losses)"),
    ("cli", "the ``kurahi`` command, a thin shell over the rooms"),
)
"""Each room's name (a subpackage of ``kurahi``) and what it holds."""
