"""``kurahi session``: one transcript file: its context, tree, stats, repair and elide."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.tree import Tree

from kurahi.cli.common import (
    EXIT,
    console,
    err_console,
    fail,
    print_json,
    shown,
    stdin_files,
    translate_errors,
    warn,
)
from kurahi.cli.fast.context import own_view, print_warnings, run_context_json
from kurahi.context.budget import DEFAULT_RESERVE_TOKENS

if TYPE_CHECKING:  # imported where used, so `kurahi --help` stays quick
    from kurahi.pi.entry import Entry, TreeNode
    from kurahi.pi.transcript import Transcript
from kurahi.errors import KurahiError
from kurahi.pi.vocab import BRANCH_SUMMARY, COMPACTION, CONTEXT_EDIT, MESSAGE, TARGET_ID, USAGE

__all__ = ["app"]

app = typer.Typer(help="Work with one transcript file (Pi session format).", no_args_is_help=True)

FileArg = typer.Argument(..., help="A transcript (.jsonl) in Pi's session format.", show_default=False)


def _text_of(message: Any) -> str:
    if not isinstance(message, dict):
        return repr(message)
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        return str(message.get("summary", ""))
    if role == "bashExecution":
        return f"$ {message.get('command', '')}"
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "toolCall":
                parts.append(f"→ {block.get('name')}(…)")
            elif kind == "image":
                parts.append("[image]")
    return " ".join(parts)


@app.command("context")
@stdin_files("file")
def context(
    file: Path = FileArg,
    leaf: str | None = typer.Option(None, "--leaf", help="Project from this entry id instead of Pi's leaf."),
    as_json: bool = typer.Option(False, "--json", help="Print {leafId, thinkingLevel, model, messages} as JSON."),
    llm: bool = typer.Option(False, "--llm", help="With --json: also give the model messages (Pi's convertToLlm)."),
    window: int = typer.Option(200_000, "--context-window", help="Model context window, for the budget route.", min=1),
    reserve: int = typer.Option(DEFAULT_RESERVE_TOKENS, "--reserve", help="Tokens kept free for the reply.", min=0),
    runtime: str | None = typer.Option(
        None,
        "--runtime",
        help="Read the file as this runtime's (pi, openclaw, claude). Default: a transcript is Pi's; a file of "
        "Claude Code's rows is told by its rows, and shows what `claude --resume` sends next.",
        show_default=False,
    ),
) -> None:
    """Show the context Pi would send to the model for a transcript (identical to Pi).

    On a Claude Code session file: what the next `claude --resume` sends (Kurahi's model of its loader).
    """
    if as_json and not llm:
        raise typer.Exit(run_context_json(file, leaf, runtime))
    own = own_view(file, runtime)
    if own is not None:
        _print_own(file, own, as_json)
        return
    from kurahi.context.budget import route
    from kurahi.context.files import project_file
    from kurahi.context.llm import convert_to_llm
    from kurahi.context.tokens import estimate_context_tokens, estimate_tokens
    from kurahi.js.values import MISSING

    with translate_errors():
        result = project_file(file, leaf)
    print_warnings(result.warnings + result.context.warnings, str(file))
    ctx = result.context
    if as_json:
        out = ctx.to_dict()
        out["llmMessages"] = convert_to_llm(ctx.messages)
        print_json(out)
        return
    try:
        tokens = estimate_context_tokens(ctx.messages)
        budget = route(tokens.tokens, window, reserve)
    except KurahiError as exc:
        tokens = None
        budget = None
        warn(f"token estimate unavailable: {exc}")
    from kurahi.cli.output import say, table

    leaf_id = ctx.leaf_id if ctx.leaf_id is not MISSING else "(entry without id)"
    model = ctx.model or {}
    say(
        (shown(file), "bold"),
        "  leaf ",
        (str(leaf_id), "cyan"),
        "  model ",
        (f"{model.get('provider', '-')}/{model.get('modelId', '-')}", "cyan"),
        "  thinking ",
        (str(ctx.thinking_level), "cyan"),
    )
    rows = []
    for i, msg in enumerate(ctx.messages):
        try:
            n = str(estimate_tokens(msg))
        except KurahiError:
            n = "?"
        role = msg.get("role") if isinstance(msg, dict) else "?"
        rows.append([str(i), str(role), n, _text_of(msg).replace("\n", " ")[:200]])
    table(["#", "role", "tokens", "content"], rows, right=(0, 2), cut=(3,))
    summary = f"{len(ctx.messages)} messages, read {result.entries_read} entries"
    if tokens is not None and budget is not None:
        say(summary, f", ~{tokens.tokens} tokens: ", (budget.route, "bold"), f" (window {window}, reserve {reserve})")
    else:
        say(summary)


def _print_own(file: Path, own: Any, as_json: bool) -> None:
    """A runtime's own session file: what its loader sends next, as JSON or a table."""
    if as_json:
        print_json(own.to_dict())
        return
    from kurahi.cli.output import say, table

    say(
        (shown(file), "bold"),
        "  ",
        (own.label, "cyan"),
        "  session ",
        (str(own.session_id or "-"), "cyan"),
        "  leaf ",
        (str(own.leaf or "-"), "cyan"),
        f" ({own.leaf_from})",
    )
    rows, total = [], 0
    for i, (msg, text, n) in enumerate(zip(own.messages, own.texts, own.tokens, strict=True)):
        total += n
        rows.append([str(i), str(msg.get("role")), str(n), text.replace("\n", " ")[:200]])
    table(["#", "role", "tokens", "content"], rows, right=(0, 2), cut=(3,))
    for note in own.notes:
        say(("note: ", "yellow"), note)
    say(f"{len(own.messages)} messages, ~{total} tokens: what `{own.resume}` sends before its new prompt")


@app.command("stats")
@stdin_files("file")
def stats(
    file: Path = FileArg,
    as_json: bool = typer.Option(False, "--json", help="Print the stats as JSON."),
) -> None:
    """Facts about a transcript. Exits 0 exactly when the file opens as a session."""
    from kurahi.pi.stats import transcript_stats
    from kurahi.pi.transcript import Transcript

    with translate_errors(), _status(file), Transcript.open(file) as t:
        facts = transcript_stats(t)
    if as_json:
        print_json(facts)
        return
    print_warnings(t.warnings, str(file))
    from kurahi.cli.output import fields

    pairs: list[tuple[str, str]] = []
    for key in (
        "sessionId",
        "name",
        "version",
        "cwd",
        "created",
        "bytes",
        "entries",
        "roots",
        "branchPoints",
        "leaves",
        "leafId",
        "pathLength",
        "compactions",
        "contextEdits",
        "usageEntries",
        "systemMessages",
        "labels",
        "firstEntryAt",
        "lastEntryAt",
    ):
        pairs.append((key, str(facts[key])))
    pairs.append(("types", ", ".join(f"{k} {v}" for k, v in facts["types"].items())))
    pairs.append(("roles", ", ".join(f"{k} {v}" for k, v in facts["roles"].items())))
    problems = []
    if facts["tornTail"]:
        problems.append("torn last line (run `kurahi session repair`)")
    if facts["duplicateIds"]:
        problems.append(f"{facts['duplicateIds']} duplicate ids (the later line wins, as in Pi)")
    if facts["orphans"]:
        problems.append(f"{facts['orphans']} entries whose parent is missing")
    if facts["cycles"]:
        problems.append(f"parent cycles: {facts['cycles']}")
    pairs.append(("problems", "; ".join(problems) or "none"))
    fields(pairs)


@app.command("repair")
def repair(
    file: Path = FileArg,
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be done; change nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the repair report as JSON."),
) -> None:
    """Move a torn last line (a crash mid-write) into a sidecar file, explicitly and durably."""
    from kurahi.store.repair import repair_torn_tail

    with translate_errors():
        report = repair_torn_tail(file, dry_run=dry_run)
    if as_json:
        print_json(report.to_dict())
    elif report.repaired:
        console.print(
            f"moved the torn line {report.line} ({report.bytes_moved} bytes) to {escape(str(report.sidecar))}"
        )
    elif dry_run and report.line is not None:
        console.print(f"would move the torn line {report.line} ({report.bytes_moved} bytes) to {report.sidecar}")
    else:
        console.print("nothing to repair: the last line is whole")
    if report.other_bad_lines and not as_json:
        err_console.print(
            f"[yellow]note:[/] damaged lines {list(report.other_bad_lines)} are skipped by every reader "
            "and left in place"
        )


@app.command("elide")
def elide(
    file: Path = FileArg,
    entry: str = typer.Option(
        ..., "--entry", help="Id of the entry to take out of the model's view.", show_default=False
    ),
    replace: str | None = typer.Option(
        None, "--replace", help="Show the model this text instead of removing the entry.", show_default=False
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Take an entry (a leaked secret) out of what the model sees, by appending a context_edit.

    The file is never edited: one context_edit entry (Pi 1.6.0's) is appended at the leaf.
    Every byte already there stays as it was, so the original text is still in the file (docs/elide.md).
    Only user, assistant and toolResult messages and custom_message entries on the leaf's path can be elided.
    Exit codes: 3 unknown entry, 4 an entry off the path or without editable content, 5 the file is locked.
    """
    from kurahi.errors import ContextEditError
    from kurahi.lineage.elide import describe
    from kurahi.lineage.elide import elide as do_elide

    with translate_errors():
        try:
            report = do_elide(file, entry, replace)
        except ContextEditError as exc:
            code = {"not-found": EXIT.NOT_FOUND, "replacement": EXIT.USAGE}.get(exc.reason, EXIT.INVALID)
            fail(str(exc), code)
    if as_json:
        print_json(report.to_dict())
        return
    for line in describe(report):
        if line.startswith("warning: "):
            warn(line.removeprefix("warning: "))
        else:
            console.print(escape(line), soft_wrap=True)  # one line each, never wrapped in a pipe


@app.command("tree")
@stdin_files("file")
def tree(
    file: Path = FileArg,
    full: bool = typer.Option(False, "--full", help="Show every entry instead of collapsing linear runs."),
    expand: bool = typer.Option(False, "--all", help="Expand side branches too (by default one line each)."),
    as_json: bool = typer.Option(False, "--json", help="Print Pi's getTree() shape (id, type, label, children)."),
) -> None:
    """Draw the entry tree: branch points, the leaf's path, compactions, labels, context edits."""
    from kurahi.pi.transcript import Transcript

    with translate_errors(), _status(file), Transcript.open(file) as t:
        if as_json:
            print_json([_node_json(n) for n in t.tree()])
            return
        on_path: set[int] = set()
        edited: dict[int, str] = {}
        if t.leaf_id is not None:
            from kurahi.context.origins import effective_path

            indices = t.path_indices(len(t) - 1)
            on_path = set(indices)
            for src in effective_path(t.path_entries(indices)).sources:
                if src.edit is not None:
                    edited[indices[src.position]] = "removed" if src.removed else "replaced"
        view = Tree(f"[bold]{escape(shown(file))}[/] ({len(t)} entries)")
        _draw(view, _Shape(t), on_path, full, expand, edited)
    console.print(view)


def _node_json(root: TreeNode) -> dict[str, Any]:
    # Iterative: a 200k-entry linear chain would overflow Python's recursion limit.
    from kurahi.js.values import MISSING

    def shell(n: TreeNode) -> dict[str, Any]:
        d: dict[str, Any] = {"id": n.entry.id if n.entry.id is not MISSING else None, "type": n.entry.type}
        if n.label is not None:
            d["label"] = n.label
        d["children"] = []
        return d

    out = shell(root)
    stack = [(root, out)]
    while stack:
        node, d = stack.pop()
        for child in node.children:
            cd = shell(child)
            d["children"].append(cd)
            stack.append((child, cd))
    return out


def _describe(e: Entry, label: str | None, is_leaf: bool, edited: str | None = None) -> str:
    from kurahi.pi.transcript import is_leaf_marker

    kind = str(e.type)
    extra = ""
    if e.type == CONTEXT_EDIT:
        rep = e.data.get("replacement")
        what = "removes" if rep is None else "replaces the content of"
        kind = f"[red]context edit[/] {what} {escape(str(e.data.get(TARGET_ID)))}"
    elif e.type == USAGE:
        d = e.data
        kind = (
            f"[dim]usage {escape(str(d.get('kind')))} {escape(str(d.get('provider')))}/{escape(str(d.get('model')))}[/]"
        )
    elif e.type == MESSAGE:
        msg = e.data.get("message")
        kind = f"{msg.get('role')}" if isinstance(msg, dict) else "message"
        text = _text_of(msg).replace("\n", " ")
        extra = f" {escape(text[:60])}" if text else ""
    elif e.type == COMPACTION:
        kind = "[magenta]compaction[/]"
    elif e.type == BRANCH_SUMMARY:
        kind = "[blue]branch summary[/]"
    elif is_leaf_marker(e.type, e.data, e.parent_id):
        kind = "[cyan]leaf marker[/]"
    if edited:
        extra = ""  # what the model no longer sees is not shown here either
    text = f"[dim]{escape(str(e.id))}[/] {kind}{extra}"
    if edited:
        text += f" [red]({edited} by a context edit)[/]"
    if label:
        text += f" [yellow]🏷 {escape(label)}[/]"
    if is_leaf:
        text += " [bold green]← leaf[/]"
    return text


class _Shape:
    """Just enough of the tree to draw it: child positions, roots, labels (no node objects)."""

    def __init__(self, t: Transcript) -> None:
        from kurahi.lineage.path import children_index
        from kurahi.pi.tree import timestamp_ms

        self.t = t
        self.kids = children_index(t)
        for i, kids in self.kids.items():
            if len(kids) > 1:  # Pi orders siblings by timestamp (stable; NaN sorts as equal)
                self.kids[i] = _stable_by_time(kids, lambda k: timestamp_ms(t, k))
        has_parent = {k for kids in self.kids.values() for k in kids}
        self.roots = [i for i in range(len(t)) if i not in has_parent]
        labels = t.labels()
        self.labels = {i: labels[id_] for i, id_ in enumerate(t.columns()[1]) if id_ in labels} if labels else {}

    def size(self, root: int) -> int:
        n, stack, seen = 0, [root], set()
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            n += 1
            stack.extend(self.kids.get(i, ()))
        return n


def _stable_by_time(items: list[int], ms: Any) -> list[int]:
    keyed = [(ms(i), i) for i in items]
    if any(k is None for k, _ in keyed):
        return items  # an unparsable time compares equal to everything: keep file order
    return [i for _, i in sorted(keyed, key=lambda p: p[0])]


def _run_text(run: Counter[str]) -> str:
    return f"[dim]… {sum(run.values())} entries ({', '.join(f'{v} {k}' for k, v in run.most_common())})[/]"


def _draw(
    view: Tree, shape: _Shape, on_path: set[int], full: bool, expand: bool, edited: dict[int, str] | None = None
) -> None:
    """Draw chains flat; branch points open a nested level.

    The child on the leaf's path continues at the same level, so the live history reads
    top to bottom. Side branches are one summary line each unless ``expand``.
    """
    t = shape.t
    edited = edited or {}
    leaf_index = max(on_path) if on_path else -1
    stack: list[tuple[Tree, int]] = [(view, r) for r in reversed(shape.roots)]
    while stack:
        parent, start = stack.pop()
        run: Counter[str] = Counter()
        cur: int | None = start
        while cur is not None:
            e = t.entry_at(cur)
            kids = shape.kids.get(cur, [])
            label = shape.labels.get(cur)
            is_leaf = cur == leaf_index
            interesting = (
                bool(label) or e.type in (COMPACTION, BRANCH_SUMMARY, CONTEXT_EDIT) or cur in edited or len(kids) != 1
            )
            if full or interesting or is_leaf or cur == start:
                if run:
                    parent.add(_run_text(run))
                    run.clear()
                text = _describe(e, label, is_leaf, edited.get(cur))
                parent.add(text if cur in on_path else f"[dim]{text}[/]")
            else:
                kind = e.type
                if e.type == MESSAGE:
                    msg = e.data.get("message")
                    kind = msg.get("role") if isinstance(msg, dict) else "message"
                run[str(kind)] += 1
            if len(kids) == 1:
                cur = kids[0]
                continue
            if run:
                parent.add(_run_text(run))
                run.clear()
            main = next((k for k in kids if k in on_path), None)
            for k in kids:
                if k == main:
                    continue
                if expand:
                    stack.append((parent.add(f"[dim]branch at {escape(str(e.id))}[/]"), k))
                else:
                    parent.add(
                        f"[dim]⎇ side branch at {escape(str(e.id))}: {shape.size(k)} entries "
                        f"from {escape(str(t.entry_at(k).id))}[/]"
                    )
            cur = main


class _status:
    """A spinner on stderr while a large file is read (only on a terminal)."""

    def __init__(self, file: Path) -> None:
        self._big = sys.stderr.isatty() and file.is_file() and file.stat().st_size > 16 * 1024 * 1024
        self._status: Any = None

    def __enter__(self) -> None:
        if self._big:
            self._status = err_console.get().status(f"reading {self._file_name}…")
            self._status.__enter__()

    @property
    def _file_name(self) -> str:
        return "transcript"

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)


@app.command("doctor")
@stdin_files("file")
def doctor(
    file: Path = FileArg,
    as_json: bool = typer.Option(False, "--json", help="Print the findings (and the mend) as JSON."),
    fix: bool = typer.Option(False, "--fix", help="Mend the session by appending entries (never rewriting a byte)."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="With --fix: print the entries it would append; write nothing."
    ),
    runtime: str | None = typer.Option(
        None,
        "--runtime",
        help="The runtime that reads the file: pi-1.6, pi-0.73 or openclaw-2026.5 (default: all of them).",
        show_default=False,
    ),
    window: int = typer.Option(200_000, "--context-window", help="Model context window, for the size check.", min=1),
) -> None:
    """Find what makes a Pi or OpenClaw session unusable: Pi's next request as each provider would judge it.

    Projects the context as Pi does, converts it as Pi's provider layer does for Anthropic
    Messages, OpenAI Chat Completions and OpenAI Responses, and checks each provider's request
    rules, plus the file's health. Each finding names the entry, the rule, the providers that
    refuse it and the runtimes that repair it themselves. With --fix the session is mended by
    appending (docs/session-doctor.md). Exit codes: 0 the next request is valid (or was
    mended), 1 it is not (or no appended mend works), 2 an unknown --runtime, 3 not found,
    4 not a session, 5 held by another writer.
    """
    from kurahi.doctor.session import MendRefusedError, mend_session, resolve_runtimes

    if dry_run and not fix:
        fail("--dry-run goes with --fix", EXIT.USAGE)
    _own_doctor(file, runtime, fix, dry_run, as_json)
    if fix and not dry_run and shown(file) != str(file):
        fail("--fix mends a file in place: name the file, not - (stdin)", EXIT.USAGE)
    with translate_errors():
        try:
            runtimes = resolve_runtimes(runtime)
            report = mend_session(file, runtime, dry_run=dry_run, context_window=window) if fix else None
        except MendRefusedError as exc:
            if as_json:
                print_json({"file": shown(file), "refused": str(exc)})
            fail(f"{shown(file)}: nothing written: {exc}", EXIT.FAILED)
    if report is not None:
        _print_mend(report, file, as_json)
        raise typer.Exit(EXIT.FAILED if (report.after if not dry_run else []) else EXIT.OK)
    from kurahi.errors import KurahiError
    from kurahi.pi.transcript import Transcript
    from kurahi.runtimes.requests import check_transcript

    try:
        with Transcript.open(file) as t:
            checked = check_transcript(t, context_window=window)
    except KurahiError as exc:
        if as_json:  # --json: the error as JSON too, on stdout, with the same exit code
            print_json({"file": shown(file), "ok": False, "error": str(exc), "exitCode": exc.exit_code})
            raise typer.Exit(exc.exit_code) from None
        with translate_errors():
            raise
    failing = checked.failing(runtimes)
    if as_json:
        print_json(
            {
                "file": shown(file),
                "runtimes": runtimes,
                "ok": not failing,
                "findings": [f.to_dict() for f in checked.findings],
                "failing": [f.to_dict() for f in failing],
            }
        )
    else:
        fails = {id(f) for f in failing}  # by identity: thousands of findings compare slowly
        for f in checked.findings:
            _print_finding(f, id(f) in fails)
        if failing:
            console.print(
                f"{len(failing)} finding(s) make the next request fail; mend: kurahi session doctor FILE --fix"
            )
        else:
            console.print("ok: the next request is valid for every provider family checked")
    raise typer.Exit(EXIT.FAILED if failing else EXIT.OK)


def _print_finding(f: Any, failing: bool) -> None:
    where = f"entry {f.entry_id} (line {f.line})" if f.entry_id else (f"line {f.line}" if f.line else "file")
    mark = "FAIL" if failing else "note"
    refused = ", ".join(f.refused_by) or "-"
    repaired = ", ".join(f.repaired_by) or "no runtime"
    console.print(
        escape(
            f"{mark} {f.code} at {where}: {f.message} [refused by: {refused}; repaired before sending by: {repaired}]"
        ),
        soft_wrap=True,
    )


def _own_doctor(file: Path, runtime: str | None, fix: bool, dry_run: bool, as_json: bool) -> None:
    """A runtime's own session file (Claude Code's): its doctor; returns only when the file is a Pi transcript."""
    from kurahi.runtimes.own_files import starts_as_transcript

    if runtime is None and starts_as_transcript(file):
        return
    from kurahi.runtimes.registry import own_doctor

    with translate_errors():
        done = own_doctor(file, runtime, fix=fix, dry_run=dry_run)
    if done is None:
        return
    if as_json:
        print_json(done)
    else:
        for f in done.get("before", done.get("findings", [])):
            mark = (
                "REFUSED"
                if f["refused"]
                else "lost"
                if f["code"] in ("split-tool-pair", "missing-tool-result")
                else "ok"
            )
            console.print(escape(f"{mark}: {f['code']}: {f['says']}"), soft_wrap=True)
        if fix:
            verb = "would append" if dry_run else "appended"
            if done["appended"]:
                console.print(
                    escape(f"{verb} {len(done['appended'])} row(s) (same uuids, new parents; a later row wins)")
                )
                if not dry_run:
                    console.print(
                        escape(
                            f"old bytes 0..{done['bytesBefore']} unchanged; "
                            f"undo: truncate -s {done['bytesBefore']} {shown(file)}"
                        )
                    )
            else:
                console.print("nothing to mend by appending")
    left = done.get("after", done.get("findings", []))
    bad = [f for f in left if f["code"] in ("split-tool-pair", "missing-tool-result", "duplicate-tool-id")]
    if not as_json and not bad:
        console.print("ok: the next `claude --resume` request sends every tool call with its own result")
    raise typer.Exit(EXIT.FAILED if bad else EXIT.OK)


def _print_mend(report: Any, file: Path, as_json: bool) -> None:
    if as_json:
        print_json(report.to_dict())
        return
    if report.method == "none":
        console.print("nothing to mend: the next request is valid for " + ", ".join(report.runtimes))
        return
    for f in report.before:
        _print_finding(f, True)
    verb = "would append" if report.dry_run else "appended"
    how = {
        "context_edit": "context_edit (honoured by Pi 1.6.0 only)",
        "compaction": "a compaction (honoured by Pi 1.6.0, Pi 0.73.1 and OpenClaw 2026.5)",
        "marker": "a custom marker entry (the file now ends with a whole line)",
    }[report.method]
    console.print(escape(f"{verb} {how} for {', '.join(report.runtimes)}:"), soft_wrap=True)
    from kurahi.js.stringify import js_json

    for i, e in enumerate(report.planned):
        shown_id = report.appended_ids[i] if i < len(report.appended_ids) else "(new)"
        console.print(escape(f"  {shown_id} {js_json(e.to_dict()).decode()}"), soft_wrap=True)
    if report.hidden_messages:
        console.print(f"{report.hidden_messages} message(s) leave the model's view; the file keeps every byte")
    if not report.dry_run:
        console.print(
            escape(
                f"old bytes 0..{report.bytes_before} unchanged (sha256 {report.prefix_sha256}); "
                f"undo: truncate -s {report.bytes_before} {shown(file)}"
            ),
            soft_wrap=True,
        )
        if report.after:
            for f in report.after:
                _print_finding(f, True)
