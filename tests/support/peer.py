"""Where the peers (the two Pis) live and how tests run them on real files.

``make peer`` installs both from the npm registry into ``.peer/`` (not committed):
Pi 0.73.1 (``@mariozechner/pi-coding-agent``) and the current Pi 1.6.0
(``@earendil-works/pi-coding-agent``), plus node 24 from the npm package ``node@24`` when
the system's node is older than 1.6.0 needs. Kurahi follows 1.6.0 where the two differ, so
:class:`PiPeer` defaults to it; ``PiPeer("0.73.1")`` runs the older one.

Everything the harness needs is in the repository: the one script ``tests/peers/pi_peer.mjs``
drives either Pi.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from support.tiers import no_peer_in_the_fast_tier

ROOT = Path(__file__).resolve().parents[2]
PEER_DIR = Path(os.environ.get("KURAHI_PEER_DIR", ROOT / ".peer")).resolve()
PEER_JS = ROOT / "tests" / "peers" / "pi_peer.mjs"
FIXTURES = ROOT / "tests" / "fixtures" / "pi"
"""Hand-made session files, each with what both Pis make of it (``NAME.pi-VERSION.json``).

``tests/fixtures/pi/regenerate.py`` writes the expected files by running both Pis; its
``--check`` says whether they still match what the installed Pis make.
"""

PiVersion = Literal["0.73.1", "1.6.0"]
CURRENT: PiVersion = "1.6.0"
PI_VERSIONS: tuple[PiVersion, ...] = ("0.73.1", "1.6.0")
PACKAGES: dict[PiVersion, str] = {
    "0.73.1": "@mariozechner/pi-coding-agent",
    "1.6.0": "@earendil-works/pi-coding-agent",
}
MIN_NODE: dict[PiVersion, tuple[int, int]] = {"0.73.1": (20, 0), "1.6.0": (22, 19)}


COMPARED = (
    "error",
    "leafId",
    "leafIdUndefined",
    "entryCount",
    "branch",
    "labels",
    "tree",
    "messages",
    "thinkingLevel",
    "model",
    "llmMessages",
    "llmMessagesError",
    "tokensPerMessage",
    "tokensPerMessageError",
    "tokens",
    "contextTokens",
    "contextTokensError",
)
"""The report fields that say what a Pi makes of a file (``rewritten`` and the error's wording
are about Pi's own side effects and messages, which Kurahi deliberately does not copy)."""


def fixture_files() -> list[Path]:
    """Every fixture session file (``tests/fixtures/pi/*.jsonl``), sorted by name."""
    return sorted(FIXTURES.glob("*.jsonl"))


def expected_path(fixture: Path, version: PiVersion) -> Path:
    """Where Pi ``version``'s report for ``fixture`` is stored: ``NAME.pi-VERSION.json`` beside it."""
    return fixture.with_name(f"{fixture.stem}.pi-{version}.json")


def expected(fixture: Path, version: PiVersion) -> dict[str, Any]:
    """Pi ``version``'s stored report for ``fixture``; a missing file names the script that writes it."""
    path = expected_path(fixture, version)
    try:
        return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing: run tests/fixtures/pi/regenerate.py") from None


# Where pi_peer.mjs's report mode puts its private copy of a file (mkdtemp + "<index>.jsonl").
_REPORT_COPY = re.compile(r"\S*pi-report-[^/\\\s]+[/\\]\d+\.jsonl")


def stable(report: dict[str, Any], fixture: Path) -> dict[str, Any]:
    """A report as it is stored: ``file`` is the fixture's name, not an absolute path, and the
    temporary copy's path in an error message is replaced by the fixture's name."""
    out = dict(report)
    out["file"] = fixture.name
    for key, value in out.items():
        if (key == "error" or key.endswith("Error")) and isinstance(value, str):
            out[key] = _REPORT_COPY.sub(fixture.name, value)
    return out


def outcome(report: dict[str, Any]) -> dict[str, Any]:
    """The part of a report that says what Pi makes of the file (:data:`COMPARED`), with each
    error's presence kept and its wording dropped."""
    out = {k: report[k] for k in COMPARED if k in report}
    for key in out:
        if key == "error" or key.endswith("Error"):
            out[key] = True
    return out


def pis_agree(fixture: Path) -> bool:
    """Whether both Pis' stored reports make the same of ``fixture``."""
    first, *rest = (outcome(expected(fixture, v)) for v in PI_VERSIONS)
    return all(first == other for other in rest)


def _node_version(node: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False).stdout
    except OSError:
        return None
    m = re.match(r"v(\d+)\.(\d+)", out.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _find_node() -> tuple[str | None, tuple[int, int] | None]:
    """The node that runs both Pis: ``.peer``'s own node 24 first, then the system's."""
    for candidate in (PEER_DIR / "node_modules" / ".bin" / "node", shutil.which("node")):
        if candidate is not None and Path(candidate).exists():
            version = _node_version(str(candidate))
            if version is not None:
                return str(candidate), version
    return None, None


NODE, NODE_VERSION = _find_node()


def package_dir(version: PiVersion) -> Path:
    """Where ``make peer`` puts this Pi."""
    return PEER_DIR / "node_modules" / PACKAGES[version]


def missing(version: PiVersion) -> str | None:
    """Why this Pi cannot run here, or ``None`` when it can."""
    pkg = package_dir(version)
    if NODE is None or NODE_VERSION is None:
        return "node is not installed (run `make peer`)"
    if MIN_NODE[version] > NODE_VERSION:
        need = ".".join(map(str, MIN_NODE[version]))
        return f"Pi {version} needs node >= {need}, found {NODE_VERSION[0]}.{NODE_VERSION[1]} (run `make peer`)"
    try:
        found = json.loads((pkg / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return f"Pi {version} is not installed at {pkg} (run `make peer`)"
    if found != version:
        return f"{pkg} holds Pi {found}, not {version} (run `make peer`)"
    return None


# Kept for the report header and the loud summary line.
PI_PKG = package_dir(CURRENT)
PI_MISSING = "; ".join(f"{v}: {why}" for v in PI_VERSIONS if (why := missing(v)) is not None) or None


class PiPeer:
    """Runs one Pi's own session code (through ``tests/peers/pi_peer.mjs``) on real files."""

    def __init__(self, version: PiVersion = CURRENT) -> None:
        no_peer_in_the_fast_tier(f"Pi {version}")
        why = missing(version)
        if why is not None:
            raise RuntimeError(why)
        self.version: PiVersion = version
        self.package = package_dir(version)
        self.env = {**os.environ, "PI_PKG": str(self.package)}

    def __repr__(self) -> str:
        return f"PiPeer({self.version!r})"

    def batch(self, mode: str, stdin: str, *flags: str) -> list[dict[str, Any]]:
        """Run ``pi_peer.mjs MODE`` over many files in one node process."""
        assert NODE is not None
        proc = subprocess.run(
            [NODE, str(PEER_JS), mode, *flags],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=900,
            env=self.env,
            check=False,
        )
        assert proc.returncode == 0, f"pi_peer.mjs {mode} (Pi {self.version}) failed:\n{proc.stderr}"
        # Split on "\n" only: JSON.stringify leaves U+2028/U+2029/U+0085 raw, and splitlines() splits on them.
        return [json.loads(line) for line in proc.stdout.split("\n") if line.strip()]

    def reports(self, paths: Sequence[Path], *, seed_ids: bool = True) -> list[dict[str, Any]]:
        """Everything Pi makes of each file (context, llm messages, tokens, tree, labels, rewritten)."""
        flags = ("--seed-ids",) if seed_ids else ()
        return self.batch("report", "\n".join(str(p) for p in paths), *flags)

    def context(self, path: Path, *, seed_ids: bool = True) -> dict[str, Any]:
        """Pi's report for one file; raises when Pi could not open it."""
        (out,) = self.reports([path], seed_ids=seed_ids)
        if "error" in out:
            raise RuntimeError(f"Pi {self.version} could not open {path}: {out['error']}")
        return out

    def context_bytes(self, paths: Sequence[Path]) -> list[bytes]:
        """The bytes of ``JSON.stringify({leafId, thinkingLevel, model, messages})`` per file.

        What ``kurahi session context FILE --json`` must print, byte for byte (``{"error": ...}``
        where Pi cannot open the file).
        """
        assert NODE is not None
        proc = subprocess.run(
            [NODE, str(PEER_JS), "context"],
            input="\n".join(str(p) for p in paths).encode(),
            capture_output=True,
            timeout=900,
            env=self.env,
            check=False,
        )
        assert proc.returncode == 0, f"pi_peer.mjs context (Pi {self.version}) failed:\n{proc.stderr.decode()}"
        return [line for line in proc.stdout.split(b"\n") if line.strip()]

    def contexts(self, paths: Sequence[Path]) -> list[dict[str, Any]]:
        """Pi's ``SessionManager.open`` + ``buildSessionContext`` for many files in one node process."""
        return self.batch("read", "\n".join(str(p) for p in paths))
