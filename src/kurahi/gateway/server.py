"""``kurahi gateway run``: the gateway on uvicorn, holding the home's single-instance lock.

Order matters: take the lock (or refuse with the running gateway's pid and port), bind the
socket (port 0 picks a free one), start the runtimes, and only then publish ``{"pid",
"port", "startedAt"}`` in the lock file. SIGTERM and SIGINT shut down gracefully: uvicorn stops accepting, the app's
lifespan gives running turns a grace period, interrupts and records the rest, and the lock
is released last.
"""

from __future__ import annotations

import gc
import logging
import socket
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kurahi.gateway.access_log import ARRIVED
from kurahi.gateway.bind import check_bind
from kurahi.gateway.hosts import allowed_hosts
from kurahi.gateway.lock import GatewayInfo, GatewayLock
from kurahi.resident.home import Home

if TYPE_CHECKING:
    from kurahi.gateway.app import Plugin
    from kurahi.store.base import Backend

__all__ = ["serve"]


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            # uvicorn re-raises the signal after its graceful shutdown, so the process would
            # die "by SIGTERM"; a graceful stop is a normal exit here (status 0).
            self._captured_signals.clear()

    return Server


def _http_protocol() -> Any:
    """The httptools protocol of uvicorn, stamping when each request's first bytes were parsed.

    The access log and the request-latency histogram then count from there, not from when
    the app got round to the request: under load a request waits in the event loop first,
    and a client feels that wait. Without httptools, uvicorn's default (the app's own clock).
    """
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - httptools is a dependency
        return "auto"

    class Stamping(HttpToolsProtocol):
        def on_message_begin(self) -> None:
            super().on_message_begin()
            extensions: dict[str, Any] = {ARRIVED: time.perf_counter()}
            self.scope["extensions"] = extensions

    return Stamping


def _log_access_to_stderr() -> None:
    from kurahi.gateway.access_log import ACCESS_LOGGER

    logger = logging.getLogger(ACCESS_LOGGER)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s access %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def serve(
    home: Home,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    grace: float = 5.0,
    on_ready: Callable[[GatewayInfo], None] | None = None,
    log_level: str = "warning",
    plugins: Sequence[Plugin] = (),
    backend: Backend | None = None,
    allow_remote: bool = False,
    access_log: bool = True,
    trust_proxy: Sequence[str] = (),
) -> None:
    """Run the gateway until SIGTERM/SIGINT.

    ``plugins`` are passed to :func:`kurahi.gateway.app.create_app` (routes of other rooms).
    ``backend`` stores sessions, logs and the audit chain (default: files in the home); it is
    closed when the gateway stops. ``host`` must be loopback unless ``allow_remote``
    (:mod:`kurahi.gateway.bind`); without it a request whose ``Host`` names another address
    is refused (:mod:`kurahi.gateway.hosts`, DNS rebinding). ``access_log`` writes a line per
    request to stderr (:mod:`kurahi.gateway.access_log`). ``trust_proxy``: addresses of a reverse
    proxy whose ``X-Forwarded-Proto`` and ``X-Forwarded-For`` are believed (the viewer's cookie
    is then ``Secure`` when the proxy says the request came over HTTPS, and rate limits count
    the forwarded client); from any other address these headers are ignored.

    Raises:
        UsageError: ``host`` is beyond loopback and ``allow_remote`` is false (nothing started).
        LockHeldError: another gateway runs on this home.
        UnknownAgentError, ConfigError: the home cannot be served.
        KurahiError: the gateway could not start (a damaged file it cannot do without; named).
    """
    import uvicorn

    _Server = _server_class()
    from kurahi.gateway.app import create_app
    from kurahi.gateway.service import Gateway

    warning = check_bind(host, allow_remote=allow_remote)
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)
    if access_log:
        _log_access_to_stderr()
    lock = GatewayLock(home.lock).acquire()
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(512)
        sock.set_inheritable(True)
        port_bound = sock.getsockname()[1]
        gateway = Gateway(home, backend=backend)
        gateway.stop_grace = grace

        def started() -> None:
            # Everything loaded so far lives as long as the process: keep it out of every GC pass.
            gc.collect()
            gc.freeze()
            # Published only once the runtimes are up and uvicorn handles SIGTERM: a client
            # that finds the port finds a gateway ready to answer and to stop gracefully.
            for problem in gateway.problems:
                print(f"warning: {problem}", file=sys.stderr, flush=True)
            info = lock.publish(port_bound)
            if on_ready is not None:
                on_ready(info)
            print(
                f"kurahi gateway listening on http://{host}:{info.port} (pid {info.pid})", file=sys.stderr, flush=True
            )

        gateway.on_started = started
        app = create_app(
            gateway,
            plugins=plugins,
            access_log=access_log,
            hosts=None if allow_remote else allowed_hosts(host),
        )
        config = uvicorn.Config(
            app,
            log_level=log_level,
            access_log=False,  # uvicorn's would log query strings; kurahi.gateway.access_log logs without them
            lifespan="on",
            timeout_graceful_shutdown=int(grace) + 5,
            h11_max_incomplete_event_size=16 * 1024,
            timeout_keep_alive=30,
            # Forwarded headers only from a proxy the operator named (none by default).
            proxy_headers=bool(trust_proxy),
            forwarded_allow_ips=list(trust_proxy) or None,
            server_header=False,
            http=_http_protocol(),
        )
        server = _Server(config)
        gateway.on_start_failed = lambda: setattr(server, "should_exit", True)
        server.run(sockets=[sock])
        for problem in gateway.stop_problems:  # the stop went on: said once, not a traceback
            print(f"warning: {problem}", file=sys.stderr, flush=True)
        if gateway.start_error is not None:
            raise gateway.start_error
    finally:
        if backend is not None:
            backend.close()
        lock.release()
