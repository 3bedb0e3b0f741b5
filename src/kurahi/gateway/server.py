"""``kurahi gateway run``: the gateway on uvicorn, holding the home's single-instance lock.

Order matters: take the lock (or refuse with the running gateway's pid and port), bind the
socket (port 0 picks a free one), start the runtimes, and only then publish ``{"pid",
"port", "startedAt"}`` in the lock file. SIGTERM and SIGINT shut down gracefully: uvicorn stops accepting, the app's
lifespan gives running turns a grace period, interrupts and records the rest, and the lock
is released last.
"""

from __future__ import annotations

import gc
import socket
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kurahi.gateway.lock import GatewayInfo, GatewayLock
from kurahi.resident.home import Home

if TYPE_CHECKING:
    from kurahi.gateway.app import Plugin
    from kurahi.store.backend import Backend

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
) -> None:
    """Run the gateway until SIGTERM/SIGINT.

    ``plugins`` are passed to :func:`kurahi.gateway.app.create_app` (routes of other rooms).
    ``backend`` stores sessions, logs and the audit chain (default: files in the home); it is
    closed when the gateway stops.

    Raises:
        LockHeldError: another gateway runs on this home.
        UnknownAgentError, ConfigError: the home cannot be served.
        KurahiError: the gateway could not start (a damaged file it cannot do without; named).
    """
    import uvicorn

    _Server = _server_class()
    from kurahi.gateway.app import create_app
    from kurahi.gateway.service import Gateway

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
        app = create_app(gateway, plugins=plugins)
        config = uvicorn.Config(
            app,
            log_level=log_level,
            access_log=False,  # paths and headers stay out of logs
            lifespan="on",
            timeout_graceful_shutdown=int(grace) + 5,
            h11_max_incomplete_event_size=16 * 1024,
            timeout_keep_alive=30,
            proxy_headers=False,  # bound to loopback by default; no proxy to trust
            server_header=False,
        )
        server = _Server(config)
        gateway.on_start_failed = lambda: setattr(server, "should_exit", True)
        server.run(sockets=[sock])
        if gateway.start_error is not None:
            raise gateway.start_error
    finally:
        if backend is not None:
            backend.close()
        lock.release()
