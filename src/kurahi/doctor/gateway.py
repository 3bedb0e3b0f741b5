"""Whether a gateway runs for the home, and whether it answers ``GET /api/health``.

The health probe is the standard library's HTTP client, proxies off: the gateway listens
on loopback, and doctor must work on the core install, without the gateway extra.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from kurahi.doctor.report import Check

__all__ = ["check_gateway", "probe_health"]


def probe_health(port: int, timeout: float = 3.0) -> tuple[bool, str]:
    """``(answering, detail)`` for the gateway on ``127.0.0.1:port``: its version, or why not."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/api/health", timeout=timeout) as resp:
            body = json.loads(resp.read(65536) or b"null")
    except urllib.error.HTTPError as exc:
        return False, f"answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"no answer ({reason})"
    except ValueError:
        return False, "answered something that is not JSON"
    if not isinstance(body, dict) or body.get("status") != "ok":
        return False, "answered, but not ok"
    return True, f"version {body.get('version')}, {body.get('agents')} agents"


def check_gateway(root: Path) -> Check:
    """A gateway holding the home's lock, and its health."""
    from kurahi.gateway.lock import gateway_info

    lock = root / "run" / "gateway.lock"
    info = gateway_info(lock)
    if info is None:
        return Check("gateway", "info", f"no gateway running for {root}", facts={"running": False, "lock": str(lock)})
    answering, detail = probe_health(info.port)
    facts = {"running": True, "answering": answering, **info.to_dict()}
    text = f"gateway pid {info.pid} on 127.0.0.1:{info.port}, started {info.started_at}: {detail}"
    if answering:
        return Check("gateway", "ok", text, facts=facts)
    return Check(
        "gateway",
        "fail",
        text,
        fix=f"kurahi gateway stop --home {root}, then kurahi gateway run --home {root}",
        facts=facts,
    )
