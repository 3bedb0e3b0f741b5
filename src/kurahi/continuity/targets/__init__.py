"""The continuity suite's targets: what it disrupts, each driven through its runtime's own surfaces.

:mod:`~kurahi.continuity.targets.kurahi` drives Kurahi's gateway over its HTTP API;
:mod:`~kurahi.continuity.targets.openclaw.target` an OpenClaw resident through OpenClaw's CLI and
gateway. Both satisfy :class:`kurahi.continuity.runner.Target`; what each offers is declared
in :mod:`kurahi.continuity.capabilities`, where ``verify`` reads it without importing them.
"""
