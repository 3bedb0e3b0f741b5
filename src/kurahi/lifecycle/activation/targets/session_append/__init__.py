"""The activation target that appends rows to one append-only session file (:mod:`.target`, :mod:`.plan`).

It knows no runtime: the rows, the running check and the loader's verdict come from the
runtime's :class:`~kurahi.runtimes.base.SessionAppend`, found by the package's ``store``.
"""
