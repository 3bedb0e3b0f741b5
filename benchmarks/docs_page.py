"""The API reference at ``/docs`` in headless Debian chromium: time to every operation drawn, bytes.

A throwaway home (a temp dir) is served by a real ``kurahi gateway run`` subprocess on loopback.
Chromium (``/usr/bin/chromium``, driven by Playwright; ``make browser``) opens ``/docs``
``--runs`` times, each in a fresh browser context (an empty cache: *cold*), then reloads it in
the same context (*warm*: the browser asks with ``If-None-Match`` and the gateway answers 304).
The time is from navigation to every operation of ``/openapi.json`` drawn by Swagger UI, as the
page measures it (``performance.now()`` on the first animation frame that shows them all); the
bytes are what the page's resources transferred (``PerformanceResourceTiming.transferSize``),
and the 304 answers are counted as the browser received them. No bar: the figures go in the README.

Usage::

    .venv/bin/python benchmarks/docs_page.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
from _browser import ARGS, start_gateway

from kurahi.resident.home import Home
from kurahi.resident.init import init_home

DRAWN = """(n) => new Promise((done) => {
  const look = () => document.querySelectorAll("#swagger-ui .opblock").length >= n
    ? done(performance.now()) : requestAnimationFrame(look);
  look();
})"""
TRANSFER = """() => performance.getEntriesByType("resource")
  .concat(performance.getEntriesByType("navigation"))
  .reduce((s, e) => s + e.transferSize, 0)"""


def summary(xs: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(xs), 1), "min": round(min(xs), 1), "max": round(max(xs), 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chromium", default=os.environ.get("KURAHI_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        init_home(home.root, "alice", marker="ALICE-7F3A")
        proc, url = start_gateway(home, Path(tmp) / "gateway.log")
        try:
            schema = httpx.get(f"{url}/openapi.json").json()
            ops = sum(1 for p in schema["paths"].values() for m in p if m in ("get", "post", "put", "delete", "patch"))
            runs: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=a.chromium, args=ARGS)
                for _ in range(a.runs):
                    context = browser.new_context(viewport={"width": 1366, "height": 900})
                    page = context.new_page()
                    statuses: list[int] = []  # of the current load: cleared before each
                    page.on("response", lambda r, seen=statuses: seen.append(r.status))
                    for kind in ("cold", "warm"):
                        statuses.clear()
                        if kind == "cold":
                            page.goto(f"{url}/docs", wait_until="commit")
                        else:
                            page.reload(wait_until="commit")
                        drawn = page.evaluate(DRAWN, ops)
                        page.wait_for_load_state("load")
                        runs[kind].append({"ms": drawn, "bytes": page.evaluate(TRANSFER), "304": statuses.count(304)})
                    context.close()
                browser.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    out: dict[str, Any] = {"operations": ops}
    for kind, rs in runs.items():
        out[kind] = {
            "drawn_ms": summary([r["ms"] for r in rs]),
            "bytes": int(statistics.median(r["bytes"] for r in rs)),
            "not_modified": int(statistics.median(r["304"] for r in rs)),
        }
    out["load_average"] = os.getloadavg()[0]
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        for kind in ("cold", "warm"):
            d = out[kind]
            print(
                f"{kind}: every one of {ops} operations drawn in {d['drawn_ms']['median']} ms median "
                f"({d['drawn_ms']['min']}-{d['drawn_ms']['max']}), {d['bytes']:,} bytes transferred, "
                f"{d['not_modified']} answers 304"
            )
        print(f"load average {out['load_average']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
