"""The activation target of a runtime's SQLite store (OpenClaw 2026.9's per-agent store).

:mod:`.plan` is the package's plan, :mod:`.store` the reads, refusals and in-transaction
checks, :mod:`.target` applies, rolls back and verifies. Every statement against the store and
its location come from the runtime's room (:mod:`kurahi.runtimes.openclaw`).
"""
