"""Claude Code's room: its config dir (``~/.claude``), its session rows, and a model of what ``--resume`` sends.

:mod:`.layout` spells every name of its files, :mod:`.versions` holds a row of facts per release,
:mod:`.rows` reads a session file as Claude Code reads it (tolerant of torn and unknown rows),
:mod:`.graph` and :mod:`.loader` model how ``claude --resume`` picks its leaf and walks back,
:mod:`.breaks` and :mod:`.elsewhere` find what that walk no longer reaches, :mod:`.losses`
lists them for ``kurahi rescue``, :mod:`.running` tells a running ``claude``, and
:mod:`.runtime` is the room's :class:`~kurahi.runtimes.base.Runtime`.
"""
