"""``kurahi mcp``'s server on the official MCP SDK (``mcp`` 2.x, the ``mcp`` extra): tools, resource, transports.

Only glue: every answer is made by :mod:`kurahi.mcp_server.answers`. A refusal a model can act
on (a bad key, a control character, a corrupt store) is a tool error carrying its message
(:class:`ToolError`; any other exception would reach the client as a bare "Error executing
tool"); a bad resource URI is a JSON-RPC ``-32602``. The SDK checks arguments against each
tool's schema before a tool runs (types, bounds, a 1 MB query), and the server keeps serving
after every refusal.

Over HTTP the server binds loopback unless ``allow_remote``, keeps the SDK's Host and Origin
checks (DNS rebinding), and requires ``Authorization: Bearer <token>`` on every request,
compared in constant time by a plain ASGI wrapper (Starlette's ``BaseHTTPMiddleware`` would
buffer the streamed answers).
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Annotated, Any

from pydantic import Field

from kurahi import __version__
from kurahi.errors import KurahiError
from kurahi.mcp_server import answers
from kurahi.mcp_server.safety import MAX_KEY, MAX_QUERY, Refusal, quoted, scrub
from kurahi.mcp_server.served import Served

__all__ = ["build_server", "http_app", "run_http", "run_stdio", "unreadable_answer"]

_log = logging.getLogger("kurahi.mcp")

INSTRUCTIONS = (
    "Kurahi reads this agent's own session history across resets, compactions and rollovers "
    "(read-only). Use recall to remember what was said before a reset or compaction, lineage to see "
    "what the model's view holds now and what left it, check to test whether a phrase is in what is "
    "sent next, losses to list history a reset took away."
)

# The tools' argument types, at module level: the SDK reads them from the signatures'
# (string) annotations, which resolve against this module's names.
Key = Annotated[
    str | None,
    Field(default=None, max_length=MAX_KEY, description="Session key, e.g. agent:main:main (default: the main key)."),
]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY, description="Words or an exact phrase to remember.")]
Limit = Annotated[int, Field(ge=1, le=20, description="Most passages to return.")]
Before = Annotated[
    str | None, Field(default=None, max_length=64, description="Only passages before this ISO-8601 time.")
]
After = Annotated[str | None, Field(default=None, max_length=64, description="Only passages after this ISO-8601 time.")]
Markers = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=500)]],
    Field(min_length=1, max_length=20, description="Phrases to look for."),
]

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


LOGGED_ARG = 200
"""Characters of one value (a URI, an error) a log line quotes."""


class _BoundedLogArgs(logging.Filter):
    """Log lines quote requests in a bounded, redacted form.

    The SDK logs a failed resource read at INFO with its whole URI and error: a 100 KB URI
    wrote 440 KB of log, and a URI may carry a secret. Each quoted value is scrubbed
    (:func:`~kurahi.mcp_server.safety.scrub`) and cut to :data:`LOGGED_ARG` characters.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        record.args = tuple(_bounded(a) if isinstance(a, str) else a for a in args) if args else record.args
        if isinstance(record.msg, str) and len(record.msg) > LOGGED_ARG * 4:
            record.msg = _bounded(record.msg, LOGGED_ARG * 4)
        return True


def _bounded(text: str, limit: int = LOGGED_ARG) -> str:
    text = scrub(text)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


_SDK_LOGGERS = ("mcp.server.mcpserver.server", "mcp.server.lowlevel.server", "mcp.server.runner")


def _bound_sdk_logs() -> None:
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _BoundedLogArgs) for f in logger.filters):
            logger.addFilter(_BoundedLogArgs())


def build_server(served: Served) -> Any:
    """An ``MCPServer`` with the four tools and the transcript-slice resource over ``served``."""
    from mcp import MCPError
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
    from mcp.types import INVALID_PARAMS, ToolAnnotations

    class _Server(MCPServer):
        async def read_resource(self, uri: Any, context: Any = None) -> Any:
            # The SDK's refusal of a URI no template matches repeats the URI twice (message and
            # data), whole: a 100 KB URI came back as 200 KB, secrets and all. Quote it as every
            # refusal here does.
            try:
                return await super().read_resource(uri, context)
            except ResourceNotFoundError:
                raise MCPError(code=INVALID_PARAMS, message=f"unknown resource {quoted(str(uri))}") from None

    server = _Server("kurahi", instructions=INSTRUCTIONS, version=__version__)
    _bound_sdk_logs()
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    def tool_call(make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            return make()
        except Refusal as exc:
            raise ToolError(str(exc)) from None
        except KurahiError as exc:
            raise ToolError(f"the state could not be read: {exc}") from None
        except Exception as exc:
            _log.exception("kurahi mcp: unexpected error")
            raise ToolError(f"internal error ({type(exc).__name__}); the server keeps serving") from None

    @server.tool(annotations=read_only)
    def lineage(key: Key = None) -> dict[str, Any]:
        """Show this session's history across resets: its pieces, boundaries, what is in view now and what left it."""
        return tool_call(lambda: answers.lineage_answer(served, key))

    @server.tool(annotations=read_only)
    def recall(
        query: Query,
        key: Key = None,
        limit: Limit = 5,
        before: Before = None,
        after: After = None,
    ) -> dict[str, Any]:
        """Recall what was said earlier in this session, including before a reset or compaction (memory search)."""
        return tool_call(lambda: answers.recall_answer(served, query, key=key, limit=limit, before=before, after=after))

    @server.tool(annotations=read_only)
    def check(
        markers: Markers,
        key: Key = None,
    ) -> dict[str, Any]:
        """Check whether each phrase is in what the runtime will send the model next (is it in my active memory?)."""
        return tool_call(lambda: answers.check_answer(served, list(markers), key))

    @server.tool(annotations=read_only)
    def losses() -> dict[str, Any]:
        """List history that resets or rollovers took out of the model's view (what kurahi rescue would offer)."""
        return tool_call(lambda: answers.losses_answer(served))

    @server.resource(
        "kurahi://transcript/{key}/{piece}/{span}",
        name="transcript-slice",
        description="Entries START-END (END excluded, at most 40) of a piece of a session key's history.",
        mime_type="application/json",
    )
    def transcript_slice(key: str, piece: str, span: str) -> str:
        """A piece's transcript slice by entry range (the URIs recall and lineage give)."""
        try:
            # The text itself: the cap was measured on exactly this text.
            return answers.answer_text(answers.slice_answer(served, key, piece, span))
        except Refusal as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        except KurahiError as exc:
            raise MCPError(code=INVALID_PARAMS, message=f"the state could not be read: {exc}") from None

    return server


def unreadable_answer(exc: Exception) -> Any:
    r"""The JSON-RPC error for a line the SDK could not read, or ``None`` to leave it to the SDK.

    The SDK's stdio reader hands such a line on as an exception, and nothing answers it: a
    client waits forever. JSON-RPC wants an answer: a parse error (``id`` null) for a line
    that is not JSON, and for a request the SDK refuses though it is JSON (a lone surrogate,
    ``"\ud800"`` escaped in JSON, which pydantic will not read), an invalid-request error with its id.
    A notification (no id) gets no answer, as JSON-RPC says.
    """
    from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    line = next((e.get("input") for e in exc.errors() if isinstance(e.get("input"), str)), None)
    if line is None:
        return None
    try:
        request = json.loads(line)
    except ValueError:
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error: not JSON"))
    rid = request.get("id") if isinstance(request, dict) else None
    if not isinstance(rid, str | int) or isinstance(rid, bool):
        return None
    where = _lone_surrogate(request)
    message = (
        f"Invalid request: a lone surrogate ({where}) in the request; send valid Unicode text"
        if where
        else "Invalid request: not a JSON-RPC request this server can read"
    )
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=INVALID_REQUEST, message=message))


def _lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in a decoded JSON value, as ``U+D800`` (``json`` joins a valid pair)."""
    if isinstance(value, str):
        return next((f"U+{ord(ch):04X}" for ch in value if 0xD800 <= ord(ch) <= 0xDFFF), None)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        found = _lone_surrogate(k) or _lone_surrogate(v)
        if found:
            return found
    return None


def run_stdio(served: Served) -> None:
    """Serve over stdio until the client closes it; every request gets an answer (:func:`unreadable_answer`)."""
    import anyio

    anyio.run(_serve_stdio, build_server(served))


async def _serve_stdio(server: Any) -> None:
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    # MCPServer.run_stdio_async, with a screen between the reader and the server. The SDK has no
    # public way to put one there: its low-level server is a private attribute (2.3). Should a
    # release rename it, serve as the SDK does, without the screen, and say so once on stderr
    # (tests/mcp_server's lone-surrogate test then fails, naming this).
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None or not hasattr(lowlevel, "run"):
        _log.warning("kurahi mcp: this MCP SDK hides its low-level server; unreadable requests may go unanswered")
        await server.run_stdio_async()
        return
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def screen() -> None:
            async with send:
                async for item in read_stream:
                    answer = unreadable_answer(item) if isinstance(item, Exception) else None
                    if answer is None:
                        await send.send(item)
                    else:
                        await write_stream.send(SessionMessage(answer))

        async with anyio.create_task_group() as tg:
            tg.start_soon(screen)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())


def http_app(served: Served, token: str, *, host: str = "127.0.0.1", allow_remote: bool = False) -> ASGIApp:
    """The Streamable HTTP app at ``/mcp``, behind the bearer-token check."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Mount

    server = build_server(served)
    security = None
    if allow_remote:
        # A non-loopback host turns the SDK's own Host check off; name the hosts it may be reached by.
        security = TransportSecuritySettings(
            allowed_hosts=[f"{host}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=[f"http://{host}:*", "http://127.0.0.1:*", "http://localhost:*"],
        )
    inner = server.streamable_http_app(host=host, transport_security=security)
    expected = token.encode()

    @asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        async with server.session_manager.run():
            yield

    app = Starlette(routes=[Mount("/", app=inner)], lifespan=lifespan)

    async def guarded(
        scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            ok = given[:7].lower() == b"bearer " and hmac.compare_digest(given[7:].strip(), expected)
            if not ok:
                reply = JSONResponse(
                    {"error": "invalid_token", "error_description": "Authorization: Bearer <token> required"},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="kurahi"'},
                )
                await reply(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded


def run_http(served: Served, token: str, *, host: str, port: int, allow_remote: bool = False) -> None:
    """Serve Streamable HTTP on ``host:port`` until interrupted."""
    import uvicorn

    app = http_app(served, token, host=host, allow_remote=allow_remote)
    # Bound here, before "serving" is said: a port in use is an error, never a false start.
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise KurahiError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; nothing was started") from None
    print(f"kurahi mcp: serving http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    with sock:
        uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])
