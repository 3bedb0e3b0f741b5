"""What the browser benchmarks share: chromium's flags and a real gateway subprocess for a home.

The flags are the browser tests' own (``tests/support/ui_server.py``), so a benchmark measures the
browser the tests check.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from kurahi.gateway.lock import gateway_info
from kurahi.resident.home import Home

_TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(_TESTS))  # the browser tests' server is in tests/support

from support.ui_server import CHROMIUM_ARGS as ARGS  # noqa: E402

__all__ = ["ARGS", "start_gateway"]


def start_gateway(home: Home, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``kurahi gateway run`` for ``home`` on a free loopback port, once it listens: the process and its URL.

    The gateway's output goes to ``log``.
    """
    env = {**os.environ, "KOLO_HOME": str(home.root)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kurahi.cli", "gateway", "run", "--port", "0"], stdout=out, stderr=out, env=env
        )
    deadline = time.monotonic() + 120
    while (info := gateway_info(home.lock)) is None or info.pid != proc.pid:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the gateway did not start: see {log}")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{info.port}"
