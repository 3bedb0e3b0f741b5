"""OpenClaw 2026.9's SQLite agent store: a foreign store, not a :class:`~kurahi.store.base.Backend`.

Kurahi reads it and, for an activation, writes it: its exact schema, a consistent read-only
snapshot, the events' text, the checks before writing, and writing a session in and out.
"""
