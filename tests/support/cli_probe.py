"""Run the console script's ``main`` in a fresh process and say which modules it imported."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

_PROBE = """
import json, sys
watch = json.loads(sys.argv[1])
sys.argv = ["kurahi", *sys.argv[2:]]
import kurahi.cli
from kurahi.cli import main
# main leaves by os._exit after the two fast-path commands; leave through SystemExit
# here instead, so the probe can still list what was imported.
kurahi.cli._exit_at_once = sys.exit
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps(sorted(m for m in watch if m in sys.modules)), file=sys.stderr)
sys.exit(code)
"""


@dataclass
class ProbeRun:
    code: int
    stdout: str
    stderr: str
    """Without the probe's own last line."""
    loaded: list[str]
    """The watched modules the run imported, sorted."""


def run_main(*args: str, watch: tuple[str, ...]) -> ProbeRun:
    """``kurahi ARGS`` through ``kurahi.cli.main`` in a new interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(watch), *args], capture_output=True, text=True, timeout=120
    )
    *err, last = out.stderr.splitlines()
    return ProbeRun(out.returncode, out.stdout, "\n".join(err), json.loads(last))
