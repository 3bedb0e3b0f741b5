"""JSON and JavaScript semantics, as Pi (Node) reads and writes them.

Values, ``JSON.stringify``, the few operations Pi's helpers perform, decoding at any depth,
and RFC 8785 canonical JSON. The bottom room: it imports nothing of Kurahi but :mod:`kurahi.errors`.
"""
