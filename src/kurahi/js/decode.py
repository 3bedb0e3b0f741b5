"""The exceptions that mean "these bytes are not a JSON document Kurahi can read".

msgspec raises ``DecodeError`` for bytes that are not JSON (``ValidationError``, a subclass,
for JSON of the wrong shape). JSON nested deeper than Python's recursion limit raises
``RecursionError`` instead, from msgspec and the standard library alike, although Node's
``JSON.parse`` reads it. Kurahi's own files (config, caches, keys) are read with this tuple
caught, so such a document is unusable input (a clear error), never a crash. Transcripts are
Pi's format and must be read at any depth, as Pi reads them: their readers catch it and go
on with :mod:`kurahi.js.deepjson`.
"""

from __future__ import annotations

import msgspec

__all__ = ["DECODE_ERRORS"]

DECODE_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, RecursionError)
