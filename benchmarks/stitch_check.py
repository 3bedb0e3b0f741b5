"""``kurahi lineage stitch`` + ``kurahi lineage check`` against ``cat A B > C``, same run.

Issue 3's bar: with A a 200k-entry tree with branches and compactions and B a 20k-entry
session, stitch + check (both whole commands, Python start-up included) take at most
10× the time of ``cat A B > C`` on the same files.

Files (generated once with :mod:`kurahi.testing.sessions`, cached under ``bench-data/``):

* A: ``tree-e200000-s7-ks1.jsonl`` (the open + project benchmark's tree, ~110 MB);
* B: ``session-e20000-s11-ks1.jsonl`` (``--entries 20000 --seed 11``, ~11 MB; ``--entries`` scales both);
  with ``--live-b``, ``live-e20000-s11-ks1.jsonl`` (``--branch 0 --compact-every 0``: one path
  and no compaction, so all of B is live context and check projects every line of it).

The generator starts every file at the same moment, so B "starts before A ends" and
stitch needs ``--force`` (which only skips that order check; a warning remains).

Each round, in this order, every command a fresh process timed from spawn to exit:

1. ``cat A B > C.cat`` (into a new file in the same directory as C);
2. ``kurahi lineage stitch A B --out C --force --report R`` (C and R new files);
3. ``kurahi lineage check C``.

The ratio per round is (stitch + check) / cat; the median over ``--rounds`` is the
figure. Kurahi's bytecode is compiled first (``compileall``), as any normal install or
first run does: an environment with ``PYTHONDONTWRITEBYTECODE`` set would otherwise
compile every module of Kurahi on every start. ``--json-output`` times both commands
with ``--json`` (what scripts call: no table is drawn, so rich is never imported).

With ``--pi`` each round also times, after the stitch and in an order that rotates with
``check``, Pi 1.6.0's own open + context of C as a whole process (``tests/peers/pi_peer.mjs
context --no-copy C``, stdout to a file: node's start, ``SessionManager.open`` and
``buildSessionContext``, ``JSON.stringify`` of the context), and one JSON decode of C by
msgspec in a fresh Python (every line decoded, nothing else): issue 40's yardstick is
(stitch + check) / Pi, and the figures say how far Kurahi stays from one decode and from
``cat``. Pi's context of C must be byte-identical to ``kurahi session context C --json``.

Correctness is checked in the same run, untimed, and the script exits 1 if any check
fails: C's lines after its header are A's canonical-path lines and then B's lines, byte
for byte, except the one re-parented root; the report's per-line sha256 match C;
``kurahi lineage check C --json`` says both projections agree.

Usage::

    .venv/bin/python benchmarks/stitch_check.py [--rounds 5] [--json] [--no-report] [--json-output] [--live-b] [--pi]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import _pi
from _rss import Failed, spawn

from kurahi.testing.sessions import write_session

ROOT = Path(__file__).resolve().parents[1]
KURAHI = Path(sys.executable).with_name("kurahi")
PI_PKG = str(_pi.package_dir("1.6.0"))

MSGSPEC_SRC = """
import sys, msgspec
decode = msgspec.json.Decoder().decode
with open(sys.argv[1], "rb") as f:
    values = [decode(line) for line in f.read().split(b"\\n") if line.strip()]
"""


class BenchError(RuntimeError):
    """A check failed: the figures are not comparable."""


def ensure_file(data_dir: Path, name: str, options: dict[str, Any], log: Any) -> Path:
    """The cached transcript, generated (atomically, via a ``.part`` file) if missing."""
    out = data_dir / name
    if out.exists():
        return out
    data_dir.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    log(f"generating {out} ...")
    write_session(part, **options)
    os.replace(part, out)
    return out


PEAK_RSS_MB: dict[str, list[float]] = {}
"""Peak RSS of each timed command (by its program and first two words), from :mod:`_rss`."""
CPU_S: dict[str, list[float]] = {}
"""CPU seconds (user + system) of each timed command, the same way."""


def timed(
    cmd: list[str],
    stdout: Any = subprocess.DEVNULL,
    *,
    stdin: bytes | None = None,
    label: str = "",
    env: dict[str, str] | None = None,
) -> float:
    try:
        run = spawn(cmd, stdin=stdin, stdout=stdout, env=env)
    except Failed as exc:
        raise BenchError(str(exc)) from None
    name = label or " ".join([Path(cmd[0]).name, *cmd[1:3]])
    if run.peak_mb is not None and run.cpu_s is not None:
        PEAK_RSS_MB.setdefault(name, []).append(run.peak_mb)
        CPU_S.setdefault(name, []).append(run.cpu_s)
    return run.wall_s


def timed_pi(cmd: list[str], c: Path, out: Path) -> float:
    """Pi 1.6.0's whole process on C (its path on stdin), its context written to ``out``."""
    with out.open("wb") as f:
        return timed(cmd, f, stdin=str(c).encode(), label="pi-1.6.0 context C", env={**os.environ, "PI_PKG": PI_PKG})


def pi_identical(c: Path, pi_out: Path) -> bool:
    """Whether Pi's context of C is byte for byte ``kurahi session context C --json``."""
    mine = subprocess.run([str(KURAHI), "session", "context", str(c), "--json"], capture_output=True, check=False)
    theirs = pi_out.read_bytes()
    if b'"error"' in theirs[:20]:
        raise BenchError(f"Pi could not open C: {theirs[:500]!r}")
    return mine.returncode == 0 and mine.stdout.rstrip(b"\n") == theirs.rstrip(b"\n")


def verify(a: Path, b: Path, c: Path, report: Path | None) -> dict[str, Any]:
    """C is A's path then B, byte for byte but one line; the report and check agree."""
    a_lines = set(a.read_bytes().split(b"\n"))
    b_lines = b.read_bytes().rstrip(b"\n").split(b"\n")[1:]
    c_lines = c.read_bytes().rstrip(b"\n").split(b"\n")
    header = json.loads(c_lines[0])
    if header.get("type") != "session" or "lineage" not in header:
        raise BenchError("C does not start with a stitched session header")
    from_a, from_b = c_lines[1 : len(c_lines) - len(b_lines)], c_lines[len(c_lines) - len(b_lines) :]
    if not from_a or any(line not in a_lines for line in from_a):
        raise BenchError("C's first part is not made of A's lines")
    changed = [i for i, (x, y) in enumerate(zip(from_b, b_lines, strict=True)) if x != y]
    if len(changed) != 1:
        raise BenchError(f"{len(changed)} of B's lines differ in C (expected exactly the re-parented root)")
    if report is not None:
        rep = json.loads(report.read_text())
        rows = [row for s in rep["sources"] for row in s["lines"]]
        for out_line, _, sha, change in rows:
            if change is None and hashlib.sha256(c_lines[out_line - 1]).hexdigest() != sha:
                raise BenchError(f"report: line {out_line} of C does not have the sha256 the report gives")
        if rep["outSha256"] != hashlib.sha256(c.read_bytes()).hexdigest():
            raise BenchError("report: outSha256 is not C's sha256")
    out = subprocess.run([str(KURAHI), "lineage", "check", str(c), "--json"], capture_output=True, check=False)
    check = json.loads(out.stdout)
    if out.returncode != 0 or not check["projectionsAgree"] or not check["messages"]:
        raise BenchError(f"check does not pass on C: exit {out.returncode}, {check.get('projectionsAgree')}")
    return {"c_lines": len(c_lines), "from_a": len(from_a), "from_b": len(from_b), "messages": check["messages"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5, help="rounds of cat, stitch, check (default 5)")
    ap.add_argument("--entries", type=int, default=200_000, help="entries of A; B has a tenth (default 200000)")
    ap.add_argument("--data-dir", type=Path, default=ROOT / "bench-data", help="cache of generated files")
    ap.add_argument("--no-report", action="store_true", help="stitch without --report")
    ap.add_argument("--live-b", action="store_true", help="B is one path without compactions (all of it live context)")
    ap.add_argument("--json-output", action="store_true", help="time both commands with --json")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    ap.add_argument("--pi", action="store_true", help="also time Pi 1.6.0's open + context of C, and msgspec's decode")
    args = ap.parse_args(argv)
    if args.pi:
        _pi.check("1.6.0")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    pkg = subprocess.run(
        [sys.executable, "-c", "import kurahi, os; print(os.path.dirname(kurahi.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run([sys.executable, "-m", "compileall", "-q", pkg], check=True)
    a_entries, b_entries = args.entries, max(1, args.entries // 10)
    a = ensure_file(args.data_dir, f"tree-e{a_entries}-s7-ks1.jsonl", {"entries": a_entries, "seed": 7}, log)
    if args.live_b:
        # Issue 30's B: one path, no compaction, so every line of it is live context.
        live = {"entries": b_entries, "seed": 11, "branch": 0, "compact_every": 0}
        b = ensure_file(args.data_dir, f"live-e{b_entries}-s11-ks1.jsonl", live, log)
    else:
        b = ensure_file(args.data_dir, f"session-e{b_entries}-s11-ks1.jsonl", {"entries": b_entries, "seed": 11}, log)
    work = Path(tempfile.mkdtemp(prefix="stitch-bench-", dir=args.data_dir))
    rows: list[dict[str, float]] = []
    try:
        facts: dict[str, Any] = {}
        for k in range(args.rounds):
            c, cat_out, rep = work / f"C{k}.jsonl", work / f"cat{k}.jsonl", work / f"r{k}.json"
            with cat_out.open("wb") as f:
                t_cat = timed(["cat", str(a), str(b)], stdout=f, label="cat A B")
            stitch_cmd = [str(KURAHI), "lineage", "stitch", str(a), str(b), "--out", str(c), "--force"]
            if not args.no_report:
                stitch_cmd += ["--report", str(rep)]
            check_cmd = [str(KURAHI), "lineage", "check", str(c)]
            if args.json_output:
                stitch_cmd.append("--json")
                check_cmd.append("--json")
            t_stitch = timed(stitch_cmd)
            after: dict[str, list[str]] = {"check_s": check_cmd}
            pi_out = work / f"pi{k}.json"
            if args.pi:
                after["pi_s"] = [_pi.node(), str(_pi.PI_PEER), "context", "--no-copy"]
                after["msgspec_s"] = [sys.executable, "-c", MSGSPEC_SRC, str(c)]
            names = list(after)
            row = {"cat_s": t_cat, "stitch_s": t_stitch}
            for name in names[k % len(names) :] + names[: k % len(names)]:
                if name == "pi_s":
                    row[name] = timed_pi(after[name], c, pi_out)
                else:
                    row[name] = timed(after[name], label="msgspec decode C" if name == "msgspec_s" else "")
            rows.append(row)
            log(f"round {k + 1}: " + ", ".join(f"{n[:-2]} {v:.3f} s" for n, v in row.items()))
            if k == 0:
                facts = verify(a, b, c, None if args.no_report else rep)
                if args.pi:
                    facts["pi_identical"] = pi_identical(c, pi_out)
            for p in (c, cat_out, rep, pi_out):
                p.unlink(missing_ok=True)
    except BenchError as exc:
        log(f"!!! {exc}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ratios = [(r["stitch_s"] + r["check_s"]) / r["cat_s"] for r in rows]
    pi_ratios = [(r["stitch_s"] + r["check_s"]) / r["pi_s"] for r in rows if "pi_s" in r]
    result = {
        "a": {"path": str(a), "mb": a.stat().st_size / 1e6},
        "b": {"path": str(b), "mb": b.stat().st_size / 1e6},
        "rounds": rows,
        "median_cat_s": statistics.median(r["cat_s"] for r in rows),
        "median_stitch_s": statistics.median(r["stitch_s"] for r in rows),
        "median_check_s": statistics.median(r["check_s"] for r in rows),
        "median_ratio": statistics.median(ratios),
        "median_pi_s": statistics.median(r["pi_s"] for r in rows) if pi_ratios else None,
        "median_msgspec_s": statistics.median(r["msgspec_s"] for r in rows) if pi_ratios else None,
        "median_ratio_to_pi": statistics.median(pi_ratios) if pi_ratios else None,
        "pi_ratios": pi_ratios,
        "load_average": os.getloadavg(),
        "peak_rss_mb": {k: statistics.median(v) for k, v in PEAK_RSS_MB.items()},
        "cpu_s": {k: statistics.median(v) for k, v in CPU_S.items()},
        "json_output": args.json_output,
        "ratios": ratios,
        "verified": facts,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"A {result['a']['mb']:.0f} MB + B {result['b']['mb']:.0f} MB -> C: {facts['c_lines']} lines "
            f"({facts['from_a']} from A's path, {facts['from_b']} from B), {facts['messages']} messages, verified"
        )
        print(
            f"median over {len(rows)} rounds: cat {result['median_cat_s']:.3f} s | stitch "
            f"{result['median_stitch_s']:.3f} s + check {result['median_check_s']:.3f} s"
        )
        if pi_ratios:
            print(
                f"Pi 1.6.0 open + context of C {result['median_pi_s']:.3f} s, msgspec decode of C "
                f"{result['median_msgspec_s']:.3f} s: (stitch + check) / Pi median {result['median_ratio_to_pi']:.2f}x "
                f"(rounds: {', '.join(f'{r:.2f}' for r in pi_ratios)}; bar 1.0x); Pi's context of C "
                f"{'is' if facts.get('pi_identical') else 'is NOT'} byte-identical to Kurahi's; load average "
                + " ".join(f"{x:.1f}" for x in result["load_average"])
            )
        print(
            "peak RSS and CPU (medians): "
            + ", ".join(
                f"{k.split('/')[-1]} {v:.0f} MB {result['cpu_s'][k]:.2f} s" for k, v in result["peak_rss_mb"].items()
            )
        )
        cat_rounds = ", ".join(f"{r:.1f}" for r in ratios)
        if args.live_b:
            # Issue 40 retired the 10x-cat bar for an all-live B (cat makes nothing durable); its
            # yardstick is Pi's own open + context of C.
            print(f"(stitch + check) / cat: median {result['median_ratio']:.1f}x (rounds: {cat_rounds})")
            if pi_ratios:
                ok = result["median_ratio_to_pi"] <= 1.0
                print(
                    f"{'PASS' if ok else 'FAIL'} stitch + check <= 1.0x Pi 1.6.0's open + context of C: "
                    f"median {result['median_ratio_to_pi']:.2f}x"
                )
        else:
            ok = result["median_ratio"] <= 10
            print(
                f"{'PASS' if ok else 'FAIL'} stitch + check <= 10x cat: median ratio {result['median_ratio']:.1f}x "
                f"(rounds: {cat_rounds})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
