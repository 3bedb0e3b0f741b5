"""``kurahi session context --json`` on a large live context, against Pi and a plain decode + encode.

The file: a 200,000-entry linear path with no compaction (every entry is in the context),
generated once with :mod:`kurahi.testing.sessions` and cached under ``bench-data/``
(git-ignored). A resident with a 1M-token window projects thousands of messages on every
turn, so this is the constant that counts.

Each round runs, as fresh processes, stdout to a file:

* **kurahi**: ``kurahi session context FILE --json`` (the console script);
* **pi-1.6.0** and **pi-0.73.1**: ``tests/peers/pi_peer.mjs context --no-copy``, which imports
  Pi's session module, opens the file (``SessionManager.open``), builds the context and
  prints ``JSON.stringify({leafId, thinkingLevel, model, messages})``;
* **pi-1.6.0-cli**: the same after loading Pi's whole agent (``dist/index.js``), as Pi's own
  command does before it opens a session;
* **msgspec**: a Python process that reads the file, decodes every line with msgspec and
  encodes the list of message values: the floor for "decode and encode the same lines";
* **msgspec-decode**: the same without the encode: one JSON decode of the lines;
* **cat**: ``cat FILE`` into the same kind of output file: reading the bytes (and writing
  more than Kurahi writes).

Medians over ``--rounds`` (the order of the programs rotates each round). The run checks
that Kurahi's output is byte-identical to Pi 1.6.0's, that both Pis printed the same context
(parsed), and that no program changed the file; it exits 1 if a check fails.

Bars: Kurahi at least 8x faster than Pi 1.6.0 (issue 40; 5x before it), and within 3x of
msgspec. The peak RSS of each program is reported (``/usr/bin/time``: see :mod:`_rss`).

Usage::

    .venv/bin/python benchmarks/context_json.py [--entries 200000] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import _pi
from _rss import Failed, Run, spawn

from kurahi.testing.sessions import write_session

ROOT = Path(__file__).resolve().parents[1]
KURAHI = Path(sys.executable).with_name("kurahi")

DECODE_SRC = """
import sys, msgspec
decode = msgspec.json.Decoder().decode
with open(sys.argv[1], "rb") as f:
    values = [decode(line) for line in f.read().split(b"\\n") if line.strip()]
"""

MSGSPEC_SRC = """
import sys, msgspec
decode = msgspec.json.Decoder().decode
with open(sys.argv[1], "rb") as f:
    lines = f.read().split(b"\\n")
values = [decode(line) for line in lines if line.strip()]
messages = [v["message"] for v in values[1:] if v.get("type") == "message"]
sys.stdout.buffer.write(msgspec.json.encode(messages))
"""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _commands(data: Path) -> dict[str, tuple[list[str], dict[str, str], str | None]]:
    node = _pi.node()
    pi = str(_pi.PI_PEER)

    def pi_env(version: str) -> dict[str, str]:
        return {**os.environ, "PI_PKG": str(_pi.package_dir(version))}

    return {
        "kurahi": ([str(KURAHI), "session", "context", str(data), "--json"], dict(os.environ), None),
        "pi-1.6.0": ([node, pi, "context", "--no-copy"], pi_env("1.6.0"), str(data)),
        "pi-1.6.0-cli": ([node, pi, "context", "--no-copy", "--full-import"], pi_env("1.6.0"), str(data)),
        "pi-0.73.1": ([node, pi, "context", "--no-copy"], pi_env("0.73.1"), str(data)),
        "msgspec": ([sys.executable, "-c", MSGSPEC_SRC, str(data)], dict(os.environ), None),
        "msgspec-decode": ([sys.executable, "-c", DECODE_SRC, str(data)], dict(os.environ), None),
        "cat": (["cat", str(data)], dict(os.environ), None),
    }


def _run(argv: list[str], env: dict[str, str], stdin: str | None, out: Path) -> Run:
    """Wall seconds from spawn to exit, the program's peak RSS in MB and its CPU seconds (:mod:`_rss`)."""
    with open(out, "wb") as f:
        try:
            return spawn(argv, stdin=None if stdin is None else stdin.encode(), stdout=f, env=env)
        except Failed as exc:
            raise SystemExit(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--data-dir", type=Path, default=ROOT / "bench-data")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args(argv)

    for version in _pi.VERSIONS:
        _pi.check(version)
    a.data_dir.mkdir(exist_ok=True)
    data = a.data_dir / f"context-linear-{a.entries}-s8-nocompaction-ks1.jsonl"
    if not data.exists():
        print(f"generating {data.name} ...", file=sys.stderr)
        write_session(data, entries=a.entries, seed=8, branch=0, compact_every=0)
    before = _sha256(data)
    commands = _commands(data)
    names = list(commands)
    times: dict[str, list[float]] = {n: [] for n in names}
    rss: dict[str, list[float | None]] = {n: [] for n in names}
    cpu: dict[str, list[float | None]] = {n: [] for n in names}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kurahi-bench-") as tmp:
        outs = {n: Path(tmp) / f"{n}.out" for n in names}
        for r in range(a.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for n in order:
                cmd, env, stdin = commands[n]
                run = _run(cmd, env, stdin, outs[n])
                times[n].append(run.wall_s)
                rss[n].append(run.peak_mb)
                cpu[n].append(run.cpu_s)
            print(f"round {r + 1}: " + "  ".join(f"{n} {times[n][-1]:.2f}s" for n in names), file=sys.stderr)
        mine = outs["kurahi"].read_bytes().rstrip(b"\n")
        theirs = outs["pi-1.6.0"].read_bytes().rstrip(b"\n")
        if mine != theirs:
            problems.append("Kurahi's output is not byte-identical to Pi 1.6.0's")
        if json.loads(outs["pi-0.73.1"].read_bytes())["messages"] != json.loads(theirs)["messages"]:
            problems.append("Pi 0.73.1 and Pi 1.6.0 printed different messages")
        messages = len(json.loads(theirs)["messages"])
    if _sha256(data) != before:
        problems.append(f"{data} changed during the run")

    med = {n: statistics.median(v) for n, v in times.items()}
    result: dict[str, Any] = {
        "file": data.name,
        "bytes": data.stat().st_size,
        "entries": a.entries,
        "messages": messages,
        "rounds": a.rounds,
        "median_s": med,
        "samples_s": times,
        "peak_rss_mb": {n: None if None in v else statistics.median(v) for n, v in rss.items()},
        "cpu_s": {n: None if None in v else statistics.median(v) for n, v in cpu.items()},
        "load_average": os.getloadavg(),
        "kurahi_vs_pi_1_6_0": med["pi-1.6.0"] / med["kurahi"],
        "kurahi_vs_pi_1_6_0_cli": med["pi-1.6.0-cli"] / med["kurahi"],
        "kurahi_vs_pi_0_73_1": med["pi-0.73.1"] / med["kurahi"],
        "kurahi_over_msgspec": med["kurahi"] / med["msgspec"],
        "kurahi_over_msgspec_decode": med["kurahi"] / med["msgspec-decode"],
        "kurahi_over_cat": med["kurahi"] / med["cat"],
        "kurahi_vs_pi_1_6_0_cpu": (
            statistics.median(cpu["pi-1.6.0"]) / statistics.median(cpu["kurahi"])
            if None not in cpu["kurahi"] + cpu["pi-1.6.0"]
            else None
        ),
        "byte_identical_to_pi_1_6_0": not any("byte-identical" in p for p in problems),
        "problems": problems,
    }
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{data.name}: {result['bytes'] / 1e6:.0f} MB, {messages} messages in the context; load average "
            + " ".join(f"{x:.1f}" for x in result["load_average"])
        )
        for n in names:
            print(
                f"  {n:14} median {med[n]:.2f} s   ({', '.join(f'{t:.2f}' for t in times[n])}), "
                f"CPU {result['cpu_s'][n] or 0:.2f} s, peak RSS {result['peak_rss_mb'][n] or 0:.0f} MB"
            )
        print(
            f"  Kurahi is {result['kurahi_vs_pi_1_6_0']:.1f}x faster than Pi 1.6.0 "
            f"({result['kurahi_vs_pi_1_6_0_cli']:.1f}x counting Pi's agent load; bar 8x, issue 40), "
            f"{result['kurahi_vs_pi_0_73_1']:.1f}x faster than Pi 0.73.1, "
            f"{result['kurahi_over_msgspec']:.2f}x msgspec's decode + encode (bar: within 3x); "
            f"{result['kurahi_vs_pi_1_6_0_cpu'] or 0:.1f}x less CPU than Pi 1.6.0; "
            f"{result['kurahi_over_msgspec_decode']:.2f}x one msgspec decode of the lines, "
            f"{result['kurahi_over_cat']:.1f}x cat of the file"
        )
    for p in problems:
        print(f"!!! {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
