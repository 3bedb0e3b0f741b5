"""The `mcp_server` room: ``kurahi mcp``, a resident reaching its own past over MCP.

The library half (:mod:`~kurahi.mcp_server.served`, :mod:`~kurahi.mcp_server.passages`,
:mod:`~kurahi.mcp_server.answers`) reads a state dir and answers the four tools and the
transcript-slice resource as plain JSON-ready dicts; :mod:`~kurahi.mcp_server.server` is the
thin layer over the official ``mcp`` SDK (the ``mcp`` extra) that serves them over stdio or
Streamable HTTP. Named ``mcp_server`` so that ``kurahi.mcp`` never reads as the SDK.
"""

from __future__ import annotations
