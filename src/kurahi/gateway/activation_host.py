"""The host an activation runs against when a Kurahi home's gateway may be running.

:class:`GatewayHost` stops the home's gateway through the pid in ``run/gateway.lock``
(SIGTERM, then wait until the lock is free), starts it again as a detached
``kurahi gateway run --home H --port P`` and reads the live session through its HTTP API;
audit records go to ``audit/chain.jsonl``.

:class:`OfflineHost` has no gateway (an OpenClaw JSON-era state directory, or a home whose
gateway is known to be down): the gateway steps do nothing and audit records go to the
home's chain only when it has one.

:class:`StoreHost` is for sessions in a database that gateways on other machines share: no
gateway is stopped (none could be, from here); the activation takes the sessions' leases
instead, which fences every gateway off them until it is done, and audit records go to the
store's own chain.

This module is the thin layer that does; :mod:`kurahi.lifecycle.activation` decides.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kurahi.errors import ActivationError, GatewayStopError
from kurahi.lifecycle.activation.hosts import OfflineHost, StoreHost, append_once

__all__ = ["GatewayHost", "OfflineHost", "StoreHost"]


class GatewayHost(OfflineHost):
    """The home's gateway process and its audit chain.

    Args:
        home: the state directory.
        start_timeout: seconds a restarted gateway gets to publish its port.
    """

    def __init__(self, home: str | os.PathLike[str], *, start_timeout: float = 30.0) -> None:
        super().__init__(home)
        self.start_timeout = start_timeout

    @property
    def _lock(self) -> Path:
        from kurahi.resident.home import Home

        return Home(self.root).lock

    def _info(self) -> Any:
        from kurahi.gateway.lock import gateway_info

        return gateway_info(self._lock)

    def gateway_port(self) -> int | None:
        """The running gateway's port (from its lock, checked to be held), or ``None``."""
        info = self._info()
        return None if info is None else int(info.port)

    def stop_gateway(self, timeout: float) -> None:
        """SIGTERM the gateway named by the lock and wait until the lock is free.

        Raises:
            GatewayStopError: it cannot be signalled or is still running after ``timeout`` seconds.
        """
        info = self._info()
        if info is None:
            return
        try:
            os.kill(info.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        except PermissionError as exc:
            raise GatewayStopError(f"not allowed to signal the gateway (pid {info.pid}); nothing was changed") from exc
        deadline = time.monotonic() + timeout
        while self._info() is not None:
            if time.monotonic() >= deadline:
                raise GatewayStopError(
                    f"the gateway (pid {info.pid}) did not stop within {timeout:g} s; nothing was changed "
                    "(stop it with `kurahi gateway stop`, or give --timeout more)"
                )
            time.sleep(0.05)

    def start_gateway(self, port: int) -> None:
        """Start ``kurahi gateway run`` detached on the same home and port; wait until it serves.

        The process is started through ``sh`` and left behind (its parent exits at once), so it
        outlives this command; its output is appended to ``run/gateway.log``.

        Raises:
            ActivationError: it did not publish its port within ``start_timeout`` seconds.
        """
        log = self._lock.parent / "gateway.log"
        log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        cmd = [sys.executable, "-m", "kurahi.cli", "gateway", "run", "--home", str(self.root), "--port", str(port)]
        subprocess.run(
            ["/bin/sh", "-c", 'log="$1"; shift; "$@" >>"$log" 2>&1 </dev/null &', "sh", str(log), *cmd],
            check=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.start_timeout
        while self._info() is None:
            if time.monotonic() >= deadline:
                tail = log.read_text(errors="replace")[-600:] if log.exists() else ""
                raise ActivationError(
                    f"the gateway did not start within {self.start_timeout:g} s (log {log}): {tail.strip()}; "
                    "the activation is installed: rerun `kurahi activate apply` to retry, or roll back"
                )
            time.sleep(0.05)

    def read_live_transcript(self, agent: str, key: str) -> bytes:
        """``GET /api/agents/{agent}/session/transcript?key=`` on the running gateway.

        Raises:
            GatewayUnavailableError, GatewayRequestError: it cannot be reached or refuses.
        """
        from kurahi.gateway.client import GatewayClient
        from kurahi.resident.home import Home

        with GatewayClient.for_home(Home(self.root), timeout=60) as client:
            body = client.request("GET", f"/api/agents/{agent}/session/transcript", params={"key": key})
        return body.encode("utf-8") if isinstance(body, str) else bytes(body)

    def audit(self, action: str, details: dict[str, Any], *, nonce: str) -> bool:
        """Append to ``audit/chain.jsonl`` (created if missing), once per nonce."""
        append_once(self._chain(), action, details, nonce)
        return True
