"""Pi 1.6.0's new entry kinds, and bad input in them, read by every Kurahi reader as Pi 1.6.0 reads them.

Each case is a small hand-made file. Pi 1.6.0's own ``SessionManager`` opens it (through
``tests/peers/pi_peer.mjs report``) and Kurahi must give the same context through every path
(``project_file`` backwards with the C scanner and without it, the forward ``Transcript``, the
reference projection of ``lineage check``), the same ``convertToLlm`` output, the same token
estimates and the same ``estimateProjectedContextTokens``. The cases are the facts read in Pi's
code: context edits (latest per target, ``replacement: null`` drops every message of the
target, replacements of the wrong type, edits of edits, of unknown ids, of entries on another
branch or summarized away, before their target), system messages around a compaction, a
compaction's ``systemMessage``, null content, usage entries and all-zero usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.context import build_context, convert_to_llm, estimate_context_tokens, estimate_tokens
from kurahi.context.files import project_file
from kurahi.context.reference import reference_projection
from kurahi.context.tokens import estimate_projected_context_tokens
from kurahi.errors import KurahiError
from kurahi.lineage.check import messages_sha256
from kurahi.pi import Transcript
from kurahi.pi.read import native
from kurahi.pi.system import current_system_message
from support.peer import PiPeer

HEADER = {"type": "session", "version": 3, "id": "s-new", "timestamp": "2026-05-01T10:00:00.000Z", "cwd": "/w"}
TS = "2026-05-01T10:00:01.000Z"
USAGE = {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120}
ZERO = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}


def e(entry_type: str, eid: str, parent: str | None, /, **fields: Any) -> dict[str, Any]:
    return {"type": entry_type, "id": eid, "parentId": parent, "timestamp": TS, **fields}


def msg(eid: str, parent: str | None, role: str, content: Any = "text", **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role}
    if content is not ...:
        message["content"] = content
    message.update(fields)
    message.setdefault("timestamp", 1)
    return e("message", eid, parent, message=message)


def user(eid: str, parent: str | None, text: Any = "hello") -> dict[str, Any]:
    return msg(eid, parent, "user", text)


def asst(eid: str, parent: str | None, text: str = "reply", **fields: Any) -> dict[str, Any]:
    fields.setdefault("provider", "anthropic")
    fields.setdefault("model", "claude")
    return msg(eid, parent, "assistant", [{"type": "text", "text": text}], **fields)


def edit(eid: str, parent: str | None, target: Any, *replacement: Any) -> dict[str, Any]:
    """A context_edit; no replacement argument leaves the key out."""
    fields: dict[str, Any] = {"targetId": target}
    if replacement:
        (fields["replacement"],) = replacement
    return e("context_edit", eid, parent, **fields)


def comp(eid: str, parent: str | None, kept: Any, summary: str = "summary", **fields: Any) -> dict[str, Any]:
    return e("compaction", eid, parent, summary=summary, firstKeptEntryId=kept, tokensBefore=1000, **fields)


SYSTEM = {"role": "system", "content": "You are careful.", "sections": {"tools": "use ls"}, "timestamp": 7}

CASES: dict[str, list[dict[str, Any]]] = {
    # -- context edits ------------------------------------------------------------------
    "null edit removes a user message": [
        user("a", None, "my password is hunter2"),
        asst("b", "a"),
        edit("c", "b", "a", None),
    ],
    "string replacement of an assistant becomes a text block": [
        user("a", None),
        asst("b", "a", "secret reply"),
        edit("c", "b", "b", {"content": "[removed]"}),
    ],
    "string replacement of a user message stays a string": [
        user("a", None, "secret"),
        edit("c", "a", "a", {"content": "[removed]"}),
    ],
    "array replacement of a tool result": [
        user("a", None),
        msg("t", "a", "toolResult", [{"type": "text", "text": "token=abc"}], toolCallId="x", toolName="ls"),
        edit("c", "t", "t", {"content": [{"type": "text", "text": "[removed]"}]}),
        edit("d", "c", "t", {"content": "[gone]"}),
    ],
    "custom message edited": [
        e("custom_message", "m", None, customType="note", content="secret", display=True),
        edit("c", "m", "m", {"content": "[removed]"}),
    ],
    "the latest edit of a target wins, even a non-null one after a null one": [
        user("a", None, "one"),
        edit("c", "a", "a", None),
        edit("d", "c", "a", {"content": "two"}),
        user("b", "d", "three"),
    ],
    "an edit of an edit changes nothing": [
        user("a", None, "one"),
        edit("c", "a", "a", {"content": "two"}),
        edit("d", "c", "c", None),
    ],
    "an edit of an unknown id changes nothing": [user("a", None), edit("c", "a", "nobody", None)],
    "an edit on another branch changes nothing": [
        user("a", None, "root"),
        user("b", "a", "left"),
        edit("c", "b", "a", None),
        user("d", "a", "right"),
    ],
    "an edit naming an entry on another branch changes nothing": [
        user("a", None, "root"),
        user("b", "a", "left"),
        user("d", "a", "right"),
        edit("c", "d", "b", None),
    ],
    "an edit before its target still applies": [edit("c", None, "a", None), user("a", "c", "later")],
    "edits of entries that are not editable": [
        user("a", None),
        e("model_change", "m", "a", provider="p", modelId="q"),
        msg("x", "m", "bashExecution", ..., command="ls", output="out", exitCode=0, cancelled=False, truncated=False),
        e("branch_summary", "bs", "x", fromId="a", summary="went elsewhere"),
        e("branch_summary", "bs2", "bs", fromId="a", summary="and back"),
        msg("s", "bs2", "system", "prompt"),
        edit("c1", "s", "m", None),
        edit("c2", "c1", "x", {"content": "changed"}),
        edit("c3", "c2", "bs", {"content": "changed"}),
        edit("c4", "c3", "bs2", None),
        edit("c5", "c4", "s", {"content": "changed"}),
    ],
    "replacements of the wrong type": [
        user("a", None),
        asst("b", "a"),
        msg("t", "b", "toolResult", [], toolCallId="x", toolName="ls"),
        user("u", "t"),
        edit("c1", "u", "a", "a string"),
        edit("c2", "c1", "b", 5),
        edit("c3", "c2", "t", {"content": None}),
        edit("c4", "c3", "u", {"other": 1}),
    ],
    "replacement content of odd types": [
        user("a", None),
        asst("b", "a"),
        user("u", "b"),
        edit("c1", "u", "a", {"content": 5}),
        edit("c2", "c1", "b", {"content": {"type": "text"}}),
        edit("c3", "c2", "u", {"content": [1, "x"]}),
    ],
    "edits summarized away do nothing; edits kept apply": [
        user("a", None, "old secret"),
        edit("c", "a", "a", None),
        user("b", "c", "kept secret"),
        comp("k", "b", "b"),
        edit("d", "k", "b", {"content": "[removed]"}),
    ],
    "an edit removes the compaction's summary and system message": [
        msg("s", None, "system", "prompt"),
        user("a", "s"),
        comp("k", "a", "a", systemMessage=SYSTEM),
        user("b", "k"),
        edit("c", "b", "k", None),
    ],
    "a non-null edit leaves the compaction alone": [
        user("a", None),
        comp("k", "a", "a", systemMessage=SYSTEM),
        edit("c", "k", "k", {"content": "R"}),
    ],
    "edit with numeric target and ids": [user("a", None), edit("c", "a", 7, None)],
    # -- system messages and compactions -----------------------------------------------
    "system messages before the compaction are left out, after it kept": [
        msg("s1", None, "system", "prompt", sections={"a": "x"}),
        user("a", "s1"),
        msg("s2", "a", "system", None),
        asst("b", "s2"),
        comp("k", "b", "s1"),
        msg("s3", "k", "system", "later", toolsAdded=[{"name": "ls", "description": "list"}]),
        user("c", "s3"),
    ],
    "a compaction's systemMessage comes before its summary": [
        user("a", None),
        asst("b", "a"),
        comp("k", "b", "b", systemMessage=SYSTEM),
        user("c", "k"),
    ],
    "falsy and odd systemMessages": [
        user("a", None),
        comp("k1", "a", "a", systemMessage=""),
        user("b", "k1"),
        comp("k2", "b", "b", systemMessage="a string"),
        user("c", "k2"),
    ],
    "an older compaction in the kept range contributes nothing": [
        user("a", None, "one"),
        comp("k1", "a", "a", summary="first", systemMessage=SYSTEM),
        user("b", "k1", "two"),
        comp("k2", "b", "a", summary="second"),
        user("c", "k2", "three"),
    ],
    "a compaction keeping nothing names itself": [user("a", None), asst("b", "a"), comp("k", "b", "k"), user("c", "k")],
    "a compaction keeping an entry that is not on the path": [user("a", None), comp("k", "a", "zz"), user("c", "k")],
    # -- null content, usage ---------------------------------------------------------------
    "null and missing content is normalised": [
        msg("a", None, "user", None),
        msg("b", "a", "assistant", ..., provider="p", model="m"),
        msg("t", "b", "toolResult", None, toolCallId="x", toolName="ls"),
        msg("s", "t", "system", ...),
        msg("x", "s", "bashExecution", None, command="ls", output="", exitCode=0, cancelled=False, truncated=False),
        e("custom_message", "m1", "x", customType="k", content=None, display=True),
        e("custom_message", "m2", "m1", customType="k", display=False),
    ],
    "usage entries are not context; all-zero usage is not trusted": [
        user("a", None, "x" * 400),
        asst("b", "a", usage=ZERO, stopReason="stop"),
        e("usage", "u", "b", kind="summary", provider="p", model="m", usage=USAGE),
        user("c", "u", "y" * 40),
    ],
    "usage before a later edit is not trusted by the projected estimate": [
        user("a", None, "x" * 400),
        asst("b", "a", usage=USAGE, stopReason="stop"),
        user("c", "b", "y" * 40),
        edit("d", "c", "a", {"content": "short"}),
    ],
    "usage after the last edit is trusted": [
        user("a", None, "x" * 400),
        edit("d", "a", "a", {"content": "short"}),
        asst("b", "d", usage=USAGE, stopReason="stop"),
        user("c", "b", "y" * 40),
    ],
    "usage with a missing part is skipped": [
        user("a", None, "x" * 40),
        asst("b", "a", usage={"input": 5}, stopReason="stop"),
        asst("b2", "b", usage=USAGE, stopReason="stop"),
        asst("b3", "b2", usage={"input": 5, "output": 1}, stopReason="stop"),
    ],
    "images in user messages are counted": [
        user("a", None, [{"type": "image", "data": "AAAA", "mimeType": "image/png"}, {"type": "text", "text": "look"}]),
    ],
}


def _write(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    p = tmp_path / (name.replace(" ", "_").replace(",", "").replace("'", "").replace(";", "") + ".jsonl")
    p.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [HEADER, *rows]) + "\n", encoding="utf-8")
    return p


def _attempt(f: Any) -> dict[str, Any]:
    try:
        return {"ok": json.loads(json.dumps(f()))}
    except KurahiError as exc:
        return {"error": str(exc)}


def _agree(label: str, pi_value: Any, pi_error: Any, ours: dict[str, Any]) -> list[str]:
    if pi_error is not None or pi_value is None:
        return [] if "error" in ours else [f"{label}: Pi fails ({pi_error}), Kurahi gives {ours}"]
    if "error" in ours:
        return [f"{label}: Kurahi fails ({ours['error']}), Pi gives {pi_value}"]
    return [] if ours["ok"] == pi_value else [f"{label}:\n  Pi     {pi_value}\n  Kurahi {ours['ok']}"]


def kurahi_contexts(p: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    """Every Kurahi projection of ``p``."""
    out = {}
    for c_scanner in (True, False):
        monkeypatch.setattr(native, "ENABLED", c_scanner)
        out[f"project_file (C scanner {'on' if c_scanner else 'off'})"] = project_file(p).context.to_dict()
        with Transcript.open(p) as t:
            forward = build_context(t.path_entries(t.path_indices(len(t) - 1)), t.leaf_id)
        out[f"Transcript (C scanner {'on' if c_scanner else 'off'})"] = forward.to_dict()
    return out


def _problems(p: Path, want: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """How Kurahi's readings of ``p`` differ from Pi's report ``want``."""
    problems: list[str] = []
    for view, got in kurahi_contexts(p, monkeypatch).items():
        for key in ("leafId", "thinkingLevel", "model", "messages"):
            if got.get(key) != want.get(key):
                problems.append(f"{view} {key}:\n  Pi     {want.get(key)}\n  Kurahi {got.get(key)}")
    ref = reference_projection(p)
    if messages_sha256(ref.messages) != messages_sha256(want["messages"]):
        problems.append(f"reference projection:\n  Pi     {want['messages']}\n  Kurahi {ref.messages}")
    with Transcript.open(p) as t:
        path = t.path()
        ctx = build_context(path, t.leaf_id, with_entries=True)
    msgs = ctx.messages
    ours = {
        "llmMessages": _attempt(lambda: convert_to_llm(msgs)),
        "tokensPerMessage": _attempt(lambda: [estimate_tokens(m) for m in msgs]),
        "contextTokens": _attempt(lambda: estimate_context_tokens(msgs).to_dict()),
        "projectedTokens": _attempt(lambda: estimate_projected_context_tokens(ctx, path).to_dict()),
    }
    for key, got in ours.items():
        problems += _agree(key, want.get(key), want.get(f"{key}Error"), got)
    return problems


@pytest.mark.pi
def test_new_kinds_read_as_pi_reads_them(tmp_path: Path, pi: PiPeer, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {name: _write(tmp_path, name, rows) for name, rows in CASES.items()}
    failures: list[str] = []
    for (name, p), want in zip(files.items(), pi.reports(list(files.values())), strict=True):
        assert want["pkgVersion"] == "1.6.0"
        assert "error" not in want, (name, want["error"])
        problems = _problems(p, want, monkeypatch)
        if problems:
            failures.append(f"{name} ({p}):\n" + "\n".join(problems))
    assert not failures, "\n\n".join(failures)


def test_a_removed_message_is_gone_from_every_view(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The privacy case: after a null edit nothing Kurahi projects or sends holds the secret.
    p = _write(tmp_path, "secret", CASES["null edit removes a user message"])
    for view, got in kurahi_contexts(p, monkeypatch).items():
        assert "hunter2" not in json.dumps(got), view
    assert "hunter2" not in json.dumps(reference_projection(p).messages)
    with Transcript.open(p) as t:
        assert "hunter2" not in json.dumps(convert_to_llm(build_context(t.path(), t.leaf_id).messages))
    assert "hunter2" in p.read_text()  # removed from the model's view by appending, not by rewriting


def test_an_edit_without_replacement_fails_closed_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pi 1.6.0 throws here (replacement.content of undefined) and cannot build the context at
    # all; Kurahi leaves the target out (it is what the edit was for) and says so, naming the line.
    rows = [user("a", None, "secret"), asst("b", "a"), edit("c", "b", "a")]
    p = _write(tmp_path, "no_replacement", rows)
    for c_scanner in (True, False):
        monkeypatch.setattr(native, "ENABLED", c_scanner)
        fc = project_file(p)
        assert [m["role"] for m in fc.context.messages] == ["assistant"]
        assert [(w.line, "without a replacement" in w.message) for w in fc.context.warnings] == [(4, True)]
    assert [m["role"] for m in reference_projection(p).messages] == ["assistant"]


@pytest.mark.pi
def test_pi_cannot_build_a_context_with_an_edit_without_replacement(tmp_path: Path, pi: PiPeer) -> None:
    p = _write(tmp_path, "no_replacement", [user("a", None, "secret"), edit("c", "a", "a")])
    (report,) = pi.reports([p])
    assert "reading 'content'" in report["error"]


def test_the_system_replay_is_pis(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "base", "sections": {"a": "1", "b": "2"}, "timestamp": None},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": [{"type": "text", "text": "more"}], "sections": {"a": None}, "timestamp": 5},
        {"role": "system", "content": "", "toolsAdded": [{"name": "ls"}, {"name": "cat"}], "toolsRemoved": []},
        {"role": "system", "content": "x", "toolsRemoved": [{"name": "ls"}], "timestamp": 9},
    ]
    assert current_system_message(messages) == {
        "role": "system",
        "content": "base\n\nmore\n\nx",
        "sections": {"b": "2"},
        "toolsAdded": [{"name": "cat"}],
        "timestamp": 5,
    }
    assert current_system_message([{"role": "user", "content": "hi"}]) is None
