"""An OpenClaw resident for the continuity suite's tests: a state dir, its stand-in model, the user's shell.

:func:`make_resident` prepares what a user of either release would have (a config whose
stand-in provider offers two models, so a model swap has somewhere to go; a workspace with
memory files) and the environment their shell would have; :func:`kurahi` runs the console
script in it. Who starts the OpenClaw gateway is the test's choice: the suite itself
(supervised) or the test, before the suite attaches to it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from support.openclaw_model import MODEL_ID
from support.openclaw_peer import JSON_ERA, OpenClawPeer, OpenClawVersion, require
from support.peer import PEER_DIR

SECOND_MODEL = "stand-in-b"
DEADLINE = 1200.0


@dataclass
class Resident:
    """A state dir ready for the suite, with its stand-in model running."""

    peer: OpenClawPeer
    state: Path
    env: dict[str, str]
    binary: str
    kurahi_home: Path


def openclaw_binary(version: str) -> str:
    """The ``openclaw`` command ``make peer`` installed for ``version``."""
    return str(PEER_DIR / f"openclaw-{version}" / "node_modules" / ".bin" / "openclaw")


def make_resident(version: OpenClawVersion, root: Path) -> Resident:
    """An OpenClaw state dir (config, workspace memory) and the environment a user's shell would have.

    The environment is the harness's sealed one (no network, no channels) without the state
    dir and token: Kurahi sets those itself for a gateway it supervises, and a test that
    starts the gateway itself adds the token, as its user would.
    """
    require(version)
    peer = OpenClawPeer(version, root, models=(MODEL_ID, SECOND_MODEL))
    peer.model.start()
    config_path = peer.write_config()
    config = json.loads(config_path.read_text())
    # OpenClaw's own default workspace (<state>/workspace), so the workspace moves with the dir.
    config["agents"]["defaults"].pop("workspace")
    config["gateway"].pop("port")
    config_path.write_text(json.dumps(config, indent=2) + "\n")
    # Where each release keeps the default workspace: 2026.5 in the user's home, 2026.9 in the state dir.
    workspace = peer.home / ".openclaw" / "workspace" if version == JSON_ERA else peer.state_dir / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\n- The harbour lantern is painted cobalt blue.\n")
    (workspace / "memory" / "facts.md").write_text("# Facts\n\n- The orchard gate code is 4471.\n")
    env = {k: v for k, v in peer.env().items() if k not in ("OPENCLAW_STATE_DIR", "OPENCLAW_GATEWAY_TOKEN")}
    kurahi_home = root / "kurahi-home"
    env |= {"KOLO_HOME": str(kurahi_home), "COLUMNS": "200", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return Resident(peer, peer.state_dir, env, openclaw_binary(version), kurahi_home)


def kurahi(res: Resident, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``kurahi ARGS`` as the console script runs it, in the resident's environment (plus ``env``)."""
    code = "import sys; from kurahi.cli import main; sys.argv[0] = 'kurahi'; sys.exit(main())"
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        env=res.env | (env or {}),
    )
    assert "Traceback" not in out.stderr, out.stderr
    return out
