"""The exceptions that mean "these bytes are not a JSON document Kurahi can read".

msgspec raises ``DecodeError`` for bytes that are not JSON (``ValidationError``, a subclass,
for JSON of the wrong shape). JSON nested deeper than Python's recursion limit raises
``RecursionError`` instead, from msgspec and the standard library alike, although Node's
``JSON.parse`` reads it. Every reader of files Kurahi did not just write catches this tuple,
so such a document is unparseable input (a clear error, a skipped line), never a crash.
"""

from __future__ import annotations

import msgspec

__all__ = ["DECODE_ERRORS"]

DECODE_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, RecursionError)
