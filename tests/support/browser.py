"""Driving the viewer in headless Debian chromium: pages that record every request, dialog and
console error, an axe-core scan per page, screenshots, and the scripted scroll that measures frames."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from support.ui_server import AXE

AXE_SOURCE = AXE.read_text(encoding="utf-8") if AXE.is_file() else ""

# Scrolls the tree by `step` px per animation frame for `frames` frames; returns the gaps
# between frames (ms), as the browser timed them.
SCROLL = """async ([step, frames]) => {
  const box = document.getElementById("tree");
  const gaps = [];
  let last = await new Promise((r) => requestAnimationFrame(r));
  for (let i = 0; i < frames; i++) {
    box.scrollTop += step;
    const now = await new Promise((r) => requestAnimationFrame(r));
    gaps.push(now - last);
    last = now;
  }
  return {gaps, rowsInDom: document.querySelectorAll("#tree li").length, top: box.scrollTop};
}"""


# Run before any script of each page (through DevTools, which the page's policy does not govern):
# keeps every Content-Security-Policy violation the page reports, whether or not it is logged.
RECORD_CSP = """window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => window.__cspViolations.push(
  `${e.effectiveDirective} blocked ${e.blockedURI || "?"} at ${e.sourceFile}:${e.lineNumber}:${e.columnNumber}`));"""


@dataclass
class Watched:
    """One page and everything it did."""

    page: Any
    origin: str
    shots: Path
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    scans: dict[str, int] = field(default_factory=dict)

    def goto(self, path: str) -> None:
        self.page.goto(self.origin + path)

    def wait_page(self, name: str) -> None:
        self.page.wait_for_selector(f"body[data-page={json.dumps(name)}]", state="attached", timeout=60_000)

    def until(self, js: str, arg: Any = None, timeout: float = 60.0) -> Any:
        """Poll the function ``js`` in the page until it returns something truthy.

        Playwright's own ``wait_for_function`` evaluates a string, which the page's policy
        (no ``unsafe-eval``) forbids; ``evaluate`` goes through DevTools instead.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = self.page.evaluate(js, arg)
            if value:
                return value
            assert time.monotonic() < deadline, f"timed out waiting for {js}"
            self.page.wait_for_timeout(20)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{len(list(self.shots.iterdir())):02d}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def axe(self, name: str) -> list[dict[str, Any]]:
        """Run axe-core on the page (injected through DevTools, which the page's policy does not govern)."""
        if not self.page.evaluate("typeof window.axe !== 'undefined'"):
            self.page.evaluate(AXE_SOURCE)
        result = self.page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations")
        bad = [
            {"id": v["id"], "impact": v["impact"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"][:3]]}
            for v in result
            if v["impact"] in ("serious", "critical")
        ]
        self.scans[name] = len(result)
        return bad

    def csp_violations(self) -> list[str]:
        """Every policy violation the current document reported (see :data:`RECORD_CSP`)."""
        found: list[str] = self.page.evaluate("window.__cspViolations || []")
        return found

    def foreign_requests(self) -> list[str]:
        here = urlsplit(self.origin).netloc
        return [u for u in self.requests if urlsplit(u).netloc != here and not u.startswith(("data:", "about:"))]


def watch(context: Any, origin: str, shots: Path) -> Watched:
    page = context.new_page()
    page.add_init_script(RECORD_CSP)
    w = Watched(page, origin, shots)
    page.on("request", lambda r: w.requests.append(r.url))

    def dialog(d: Any) -> None:
        w.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.on("console", lambda m: w.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    return w
