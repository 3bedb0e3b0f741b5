"""The activation target of a Kurahi backend, and of the file layouts that share it.

A home's files, memory or PostgreSQL, and an OpenClaw 2026.5 state dir.

:mod:`.plan` plans, :mod:`.state` reads and hashes the live state, :mod:`.gateway` stops and
restarts a gateway around the switch, :mod:`.target` applies, rolls back and verifies.
"""
