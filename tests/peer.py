"""Where the peer (Pi) lives and how tests run it on real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KURAHI_SHARED", ROOT.parent / "shared")).resolve()
PEERS = SHARED / "peers"
FIXTURES = PEERS / "fixtures"
PI_PKG = Path(os.environ.get("PI_PKG", ROOT / ".peer" / "node_modules" / "@mariozechner" / "pi-coding-agent"))
NODE = shutil.which("node")
BATCH_JS = ROOT / "tests" / "conformance" / "pi_write_batch.mjs"

_PI_MISSING = None
if NODE is None:
    _PI_MISSING = "node is not installed: Pi conformance tests are SKIPPED"
elif not (PI_PKG / "package.json").exists():
    _PI_MISSING = f"Pi is not installed at {PI_PKG} (run `make peer`): Pi conformance tests are SKIPPED"


class PiPeer:
    """Runs Pi's own code (through the shared harness scripts) on files."""

    env: ClassVar[dict[str, str]] = {**os.environ, "PI_PKG": str(PI_PKG)}

    def context(self, path: Path, *extra: str) -> dict[str, Any]:
        """``pi_context.mjs``: what Pi's SessionManager.open + buildSessionContext give."""
        out = subprocess.run(
            [str(NODE), str(PEERS / "pi_context.mjs"), *extra, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            env=self.env,
            check=True,
        )
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    def batch(self, mode: str, stdin: str) -> list[dict[str, Any]]:
        """Run ``tests/conformance/pi_write_batch.mjs MODE`` (many files, one node process)."""
        proc = subprocess.run(
            [str(NODE), str(BATCH_JS), mode],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=600,
            env=self.env,
            check=False,
        )
        assert proc.returncode == 0, f"pi_write_batch.mjs {mode} failed:\n{proc.stderr}"
        # Split on "\n" only: JSON.stringify leaves U+2028/U+2029/U+0085 raw, and splitlines() splits on them.
        return [json.loads(line) for line in proc.stdout.split("\n") if line.strip()]

    def contexts(self, paths: Sequence[Path]) -> list[dict[str, Any]]:
        """Pi's ``SessionManager.open`` + ``buildSessionContext`` for many files in one node process."""
        return self.batch("read", "\n".join(str(p) for p in paths))


PI_MISSING = _PI_MISSING
