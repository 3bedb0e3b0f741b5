"""Run the atheris fuzz targets under libFuzzer and report executions, crashes, hangs and time.

    .venv/bin/python tests/fuzz/run.py                      # every target, 10,000 inputs each
    .venv/bin/python tests/fuzz/run.py http stitch --runs 200000 --timeout 5
    .venv/bin/python tests/fuzz/run.py --merge               # fold new finds into tests/fuzz/corpus

Each target runs in a child process of its own, one after the other (libFuzzer exits the
process when it is done, and one at a time keeps a small machine usable). New inputs go to
a work corpus (``--work``, ``.fuzz/`` by default, not committed); the kept corpus under
``tests/fuzz/corpus/<target>/`` is read as seeds and only changes with ``--merge``. Its
named files (``seed-*``, ``crash-*``) always stay; of the rest, libFuzzer's ``-merge=1``
keeps the inputs that add coverage, smallest first, up to the target's size budget. A
crash or hang leaves libFuzzer's ``crash-*`` / ``timeout-*`` file in
``<work>/<target>/artifacts/``; once it is fixed, copy it into the kept corpus as
``crash-<what>``.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
ROOT = HERE.parents[1]


@dataclass
class Outcome:
    """What one libFuzzer run of one target did."""

    target: str
    runs: int
    seconds: float
    crashes: int
    hangs: int
    corpus_files: int
    exit_code: int
    artifacts: list[str]

    @property
    def rate(self) -> float:
        """Executions per second."""
        return self.runs / self.seconds if self.seconds else 0.0


def _child(target: str, libfuzzer_args: list[str]) -> None:
    """The fuzzing process: instrument Kurahi, warm up on the seeds, hand over to libFuzzer."""
    import atheris

    scratch = Path(os.environ["KURAHI_FUZZ_SCRATCH"])
    # Only modules imported inside this block are instrumented: import every Kurahi module a
    # target reaches, and run each seed once, so lazily imported ones load here too.
    with atheris.instrument_imports(include=["kurahi"]):
        from support import fuzz_targets

        fuzz_targets.use_scratch(scratch)
        run = fuzz_targets.TARGETS[target].run
        for seed in sorted((CORPUS / target).glob("*")):
            run(seed.read_bytes())

    def one_input(data: bytes) -> None:
        run(data)

    # libFuzzer's -merge=1 runs argv[0] again for each pass: give it a command that comes back here.
    argv0 = os.environ.get("KURAHI_FUZZ_ARGV0", sys.argv[0])
    atheris.Setup([argv0, *libfuzzer_args], one_input)
    atheris.Fuzz()


_DONE = re.compile(rb"Done (\d+) runs in (\d+) second")
_EXECS = re.compile(rb"#(\d+)\s+(?:DONE|pulse|NEW|REDUCE|INITED)")


def _fuzz(target: str, args: argparse.Namespace) -> Outcome:
    work = args.work / target
    found = work / "corpus"
    artifacts = work / "artifacts"
    for d in (found, artifacts):
        d.mkdir(parents=True, exist_ok=True)
    before = set(artifacts.iterdir())
    libfuzzer = [
        f"-runs={args.runs}",
        f"-timeout={args.timeout}",
        f"-max_len={args.max_len or args.max_lens[target]}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        f"-artifact_prefix={artifacts}/",
        "-print_final_stats=1",
        str(found),
        str(CORPUS / target),
    ]
    scratch = Path(tempfile.mkdtemp(prefix=f"kurahi-fuzz-{target}-", dir=_scratch_base()))
    env = {**os.environ, "KURAHI_FUZZ_SCRATCH": str(scratch), "PYTHONPATH": str(HERE.parent)}
    cmd = ["nice", "-n", str(args.nice), sys.executable, str(Path(__file__)), "--child", target, "--", *libfuzzer]
    log = work / "libfuzzer.log"
    start = time.monotonic()
    try:
        with log.open("wb") as out:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env, check=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.monotonic() - start
    text = log.read_bytes()
    done = _DONE.search(text)
    execs = [int(x) for x in _EXECS.findall(text)]
    runs = int(done.group(1)) if done else max(execs, default=0)
    new = sorted(set(artifacts.iterdir()) - before)
    crashes = [p for p in new if p.name.startswith(("crash-", "oom-", "leak-"))]
    hangs = [p for p in new if p.name.startswith(("timeout-", "slow-unit-"))]
    if proc.returncode != 0 and not crashes and not hangs:
        sys.stderr.write(text[-3000:].decode(errors="replace"))
        crashes = [log]  # it died without an artifact: count it, and show why
    return Outcome(
        target,
        runs,
        seconds,
        len(crashes),
        len(hangs),
        len(list(found.iterdir())),
        proc.returncode,
        [str(p) for p in crashes + hangs],
    )


def _is_named(p: Path) -> bool:
    # Seeds and inputs that once crashed are named by hand and always kept; libFuzzer names
    # the inputs it finds by their SHA-1.
    return p.name.startswith(("seed-", "crash-"))


def _merge(target: str, args: argparse.Namespace) -> tuple[int, int]:
    """Fold the work corpus into the kept one; returns (files before, files after).

    The named files always stay. Of the rest (earlier finds and the work corpus), libFuzzer's
    ``-merge=1`` keeps, smallest first, the inputs that add coverage to what the named files
    cover; of those, the smallest are kept up to the target's size budget.
    """
    kept = CORPUS / target
    found = args.work / target / "corpus"
    found.mkdir(parents=True, exist_ok=True)
    before = len(list(kept.iterdir()))
    named = {p.name for p in kept.iterdir() if _is_named(p)}
    merged = Path(tempfile.mkdtemp(prefix=f"kurahi-merge-{target}-", dir=args.work))
    for name in named:
        shutil.copyfile(kept / name, merged / name)
    scratch = Path(tempfile.mkdtemp(prefix=f"kurahi-fuzz-{target}-", dir=_scratch_base()))
    again = args.work / target / "child.sh"
    again.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(__file__)} --child {target} -- "$@"\n'
    )
    again.chmod(0o755)
    env = {
        **os.environ,
        "KURAHI_FUZZ_SCRATCH": str(scratch),
        "PYTHONPATH": str(HERE.parent),
        "KURAHI_FUZZ_ARGV0": str(again),
    }
    libfuzzer = [
        "-merge=1",
        f"-timeout={args.timeout}",
        f"-max_len={args.max_len or args.max_lens[target]}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        str(merged),
        str(kept),
        str(found),
    ]
    cmd = ["nice", "-n", str(args.nice), sys.executable, str(Path(__file__)), "--child", target, "--", *libfuzzer]
    try:
        proc = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-3000:].decode(errors="replace"))
            raise SystemExit(f"merge of {target} failed (exit {proc.returncode}); the kept corpus is unchanged")
        finds = sorted((p for p in merged.iterdir() if p.name not in named), key=lambda p: (p.stat().st_size, p.name))
        room = args.budgets[target]
        for p in kept.iterdir():
            if not _is_named(p):
                p.unlink()
        for p in finds:
            size = p.stat().st_size
            if size > room:
                break
            room -= size
            shutil.copyfile(p, kept / p.name)
    finally:
        shutil.rmtree(merged, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return before, len(list(kept.iterdir()))


def _scratch_base() -> str | None:
    # tmpfs makes the fsyncs of stitch and config apply free; any temporary directory works.
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        sep = argv.index("--")
        _child(argv[1], argv[sep + 1 :])
        return 0
    sys.path.insert(0, str(HERE.parent))  # tests/: the targets are in support
    from support.fuzz_targets import TARGETS

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("targets", nargs="*", help=f"targets to run (default: all of {', '.join(TARGETS)})")
    p.add_argument("--runs", type=int, default=10_000, help="inputs per target (default 10,000)")
    p.add_argument("--timeout", type=int, default=5, help="seconds before an input counts as a hang (default 5)")
    p.add_argument("--max-len", type=int, default=0, help="longest input libFuzzer makes (default: the target's)")
    p.add_argument("--rss-limit-mb", type=int, default=2048, help="memory limit per process (default 2048)")
    p.add_argument("--nice", type=int, default=10, help="niceness of the fuzzing process (default 10)")
    p.add_argument("--work", type=Path, default=ROOT / ".fuzz", help="work corpus and artifacts (default .fuzz/)")
    p.add_argument("--merge", action="store_true", help="only merge the work corpus into the kept corpus")
    args = p.parse_args(argv)
    targets = args.targets or list(TARGETS)
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        p.error(f"unknown target {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    args.work = args.work.resolve()
    args.max_lens = {name: t.max_len for name, t in TARGETS.items()}
    args.budgets = {name: t.corpus_budget for name, t in TARGETS.items()}
    if args.merge:
        for t in targets:
            before, after = _merge(t, args)
            print(f"{t:<11} kept corpus {before} -> {after} files")
        return 0
    print(f"{'target':<11} {'executions':>11} {'seconds':>8} {'exec/s':>8} {'crashes':>8} {'hangs':>6} {'corpus':>7}")
    failed = False
    for t in targets:
        o = _fuzz(t, args)
        kept = len(list((CORPUS / t).iterdir()))
        print(
            f"{t:<11} {o.runs:>11,} {o.seconds:>8.1f} {o.rate:>8.0f} {o.crashes:>8} {o.hangs:>6} "
            f"{kept:>4}+{o.corpus_files}",
            flush=True,
        )
        for a in o.artifacts:
            print(f"    {a}")
        failed |= bool(o.crashes or o.hangs)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
