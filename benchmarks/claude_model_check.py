"""Hold ``kurahi rescue --claude`` and its model of ``--resume`` to the real Claude Code 2.1.332, by hand.

On every kind of issue 39's table and every thing that is not a loss, made by the peer
harness on a real session (``tests/support/claude_damage.py``: five turns, a Bash call, a
subagent, a Stop hook), this checks three things before the next ``claude --resume SID -p next``
runs, then runs it:

1. the listing names exactly the kind the damage is (nothing for a non-loss);
2. the loader model's messages, flattened by :func:`kurahi.runtimes.claude.loader.comparable`,
   equal the request the CLI then sends (its new prompt aside);
3. a running ``claude``, held mid-turn by the stand-in, is seen by ``running()``, and not once it exits.

It needs ``make peer`` (Claude Code 2.1.332 in ``.peer/``) and takes about two minutes; it is not
part of the suite (the peer tests are the harness's). Exit 1 on any mismatch.

Usage::

    .venv/bin/python benchmarks/claude_model_check.py [--json] [KIND ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kurahi.runtimes.claude.loader import comparable, resume_view  # noqa: E402
from kurahi.runtimes.claude.losses import find_losses  # noqa: E402
from kurahi.runtimes.claude.rows import parse_rows  # noqa: E402
from kurahi.runtimes.claude.running import running  # noqa: E402
from support import claude_damage as damage  # noqa: E402
from support.claude_api import messages_standin  # noqa: E402
from support.claude_peer import ClaudePeer, unavailable  # noqa: E402

KIND = {
    "null_parent": "null-parent",
    "progress_parent": "progress-parent",
    "sidechain_parent": "sidechain-parent",
    "wrong_parent": "wrong-parent",
    "stop_hook_fork": "sibling-fork",
    "compact_null": "compact-null",
    "preserved_missing": "preserved-missing",
    "continue_elsewhere": "continue-elsewhere",
}
"""The harness's name for each loss, and Kurahi's."""
PROBED_ELSEWHERE = frozenset({"continue_elsewhere", "resume_elsewhere"})
"""Cases whose request is not the session's own ``--resume`` (no model to compare)."""


def check(work: Path, only: set[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with messages_standin(work / "requests.jsonl") as api:
        base = damage.build_base(ClaudePeer(api, work / "base"))
        compacted = damage.compacted(base.copy(work / "compacted-base"))
        cases = [(k, f, k in damage.ON_COMPACTED) for k, f in damage.LOSSES.items()]
        cases += [(k, f, k in damage.ON_COMPACTED_NON_LOSSES) for k, f in damage.NON_LOSSES.items()]
        for name, make, on_compacted in cases:
            if only and name not in only:
                continue
            made = make((compacted if on_compacted else base).copy(work / "cases" / name))
            model = comparable(resume_view(parse_rows(made.session.path.read_bytes())).message_dicts())
            body = made.next_request("next")
            real = comparable(body["messages"])
            if real[-1:] == [("user", "text", "next")]:
                real = real[:-1]
            listed = find_losses(made.session.peer.config_dir).losses
            kinds = [x.kind for x in listed]
            expected = [KIND[name]] if name in KIND else []
            same = None if name in PROBED_ELSEWHERE else model == real
            out.append(
                {
                    "case": name,
                    "expected": expected,
                    "listed": [(x.kind, x.confidence, x.lost_messages) for x in listed],
                    "kindsOk": kinds == expected,
                    "modelEqualsRequest": same,
                }
            )
        s = base.copy(work / "running")
        with api.hold():
            run = s.peer.spawn("-p", "held", "--output-format", "json", "--resume", s.sid, cwd=s.cwd)
            run.wait_for_request()
            seen = running(s.peer.config_dir)
        run.finish()
        out.append({"case": "running", "whileHeld": seen, "afterExit": running(s.peer.config_dir)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("kinds", nargs="*", help="only these cases (the harness's names)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    why = unavailable()
    if why is not None:
        sys.exit(f"Claude Code cannot run here: {why}")
    with tempfile.TemporaryDirectory(prefix="kurahi-claude-check-") as tmp:
        results = check(Path(tmp), set(args.kinds))
    failed = [
        r
        for r in results
        if r.get("kindsOk") is False
        or r.get("modelEqualsRequest") is False
        or (r["case"] == "running" and (r["whileHeld"] is None or r["afterExit"] is not None))
    ]
    if args.json:
        print(json.dumps({"results": results, "failed": len(failed)}))
    else:
        for r in results:
            if r["case"] == "running":
                print(
                    f"{'running':20} while held: {'seen' if r['whileHeld'] else 'NOT SEEN'}; after exit: "
                    f"{'gone' if r['afterExit'] is None else 'STILL SEEN'}"
                )
                continue
            model = {None: "-", True: "equal", False: "DIFFERENT"}[r["modelEqualsRequest"]]
            print(
                f"{r['case']:20} listed {r['listed'] or 'nothing'!s:48} kinds {'ok' if r['kindsOk'] else 'WRONG'}; "
                f"model vs request: {model}"
            )
        print(f"{len(failed)} mismatch(es)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
