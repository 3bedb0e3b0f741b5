"""What each runtime sends of a history larger than the window (issue 28, deliverable 4).

The model (:mod:`kurahi.runtimes.view`) on constructed transcripts: one that fits,
one just over, one far over, with a compaction and with reset entries; the window read
from ``openclaw.json``; ``lineage check`` and ``activate plan`` refusing a marker that the
runtime will not send. ``tests/peers/test_openclaw_overflow.py`` compares the model with
what real OpenClaw sent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from kurahi.context.budget import find_cut_point
from kurahi.context.reference import reference_projection
from kurahi.errors import UsageError
from kurahi.runtimes.view import (
    DEFAULT_CONTEXT_WINDOW,
    openclaw_context_window,
    runtime_view,
    window_for,
)
from support.testdata import JSON_ERA, openclaw_state_copy, tree_hash

runner = CliRunner()


def turn_text(i: int) -> str:
    """A user line of about 90 tokens that names its turn (``T0007Z``)."""
    return f"T{i:04d}Z says " + " ".join(f"w{i}x{j}" for j in range(40))


def write_session(path: Path, turns: int, *, extra: dict[int, dict[str, Any]] | None = None) -> Path:
    """A Pi v3 session of ``turns`` user/assistant turns; ``extra[i]`` is an entry placed before turn i
    (``parentId`` and ``id`` filled in)."""
    lines: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-12-01T00:00:00Z"}]
    parent: str | None = None
    n = 0

    def add(entry: dict[str, Any]) -> None:
        nonlocal parent, n
        n += 1
        entry = {"id": f"e{n}", "parentId": parent, "timestamp": "2026-12-01T00:00:01Z", **entry}
        lines.append(entry)
        parent = entry["id"]

    for i in range(turns):
        if extra and i in extra:
            add(dict(extra[i]))
        add({"type": "message", "message": {"role": "user", "content": turn_text(i), "timestamp": 1}})
        reply = {"role": "assistant", "content": [{"type": "text", "text": f"R{i:04d}S ok"}], "timestamp": 2}
        add({"type": "message", "message": reply})
    path.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")
    return path


def entry_id_of_user_turn(path: Path, i: int) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        e = json.loads(line)
        if e.get("type") == "message" and f"T{i:04d}Z" in json.dumps(e):
            return str(e["id"])
    raise AssertionError(f"no turn {i}")


def turns_sent(path: Path, runtime: str, window: int) -> list[int]:
    view = runtime_view(path, runtime, context_window=window)
    ref = reference_projection(path)
    messages = (
        ref.runtime_messages if runtime == "openclaw-2026.9" and ref.runtime_messages is not None else ref.messages
    )
    return sorted({int(n) for i in view.sent for n in re.findall(r"T(\d{4})Z", json.dumps(messages[i]))})


def byte_sizes(path: Path) -> tuple[int, list[int]]:
    """The header's and each entry's bytes as OpenClaw 2026.9 counts them (UTF-8 JSON plus a newline)."""
    raw = path.read_bytes().splitlines()
    return len(raw[0]) + 1, [len(line) + 1 for line in raw[1:]]


# -- OpenClaw 2026.9: a byte-bounded tail ---------------------------------------------------------


def test_a_history_that_fits_is_sent_whole_by_every_runtime(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", 10)
    for runtime in ("pi", "openclaw-2026.5", "openclaw-2026.9"):
        view = runtime_view(path, runtime, context_window=DEFAULT_CONTEXT_WINDOW)
        assert view.fits and view.sent == list(range(20)) and view.left_out == [], runtime
        assert view.sent_tokens == view.tokens > 0


def test_openclaw_2026_9_just_over_leaves_out_exactly_the_oldest_entry(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", 30)
    header, sizes = byte_sizes(path)
    # A window whose 8-bytes-per-token limit holds every entry but the first, by one byte.
    limit = header + sum(sizes[1:])
    window = (limit + 7) // 8
    assert header + sum(sizes) > window * 8 >= limit
    view = runtime_view(path, "openclaw-2026.9", context_window=window)
    assert view.sent == list(range(1, 60)) and view.left_out == [0]
    assert view.max_bytes == window * 8 and view.loaded_bytes == limit
    assert not view.fits and not view.summarized


def test_openclaw_2026_9_far_over_sends_the_newest_entries_that_fit_in_8_bytes_per_token(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", 400)
    header, sizes = byte_sizes(path)
    window = 16_000
    used, kept = header, 0
    for size in reversed(sizes):
        if used + size > window * 8:
            break
        used, kept = used + size, kept + 1
    view = runtime_view(path, "openclaw-2026.9", context_window=window)
    assert len(view.sent) == kept and view.sent == list(range(800 - kept, 800))
    assert view.to_dict()["sent"] == [[800 - kept, 799]] and view.to_dict()["leftOut"] == [[0, 799 - kept]]
    assert turns_sent(path, "openclaw-2026.9", window)[-1] == 399
    assert view.sent_tokens < view.tokens and "128,000 bytes" in view.rule


def compacted_session(path: Path) -> Path:
    """400 turns with a compaction before turn 390 that keeps from turn 385 on."""
    write_session(path, 400)
    compaction = {
        "type": "compaction",
        "summary": "SUMMARY-WORDS",
        "firstKeptEntryId": entry_id_of_user_turn(path, 385),
        "tokensBefore": 1,
    }
    return write_session(path, 400, extra={390: compaction})


def test_openclaw_2026_9_with_a_compaction_in_the_tail_sends_its_summary_and_kept_part(tmp_path: Path) -> None:
    path = compacted_session(tmp_path / "s.jsonl")
    ref = reference_projection(path)
    assert ref.compaction_id is not None and ref.messages[0]["role"] == "compactionSummary"
    assert len(ref.messages) == 1 + 30  # the summary, turns 385..399
    view = runtime_view(path, "openclaw-2026.9", context_window=16_000)
    assert view.fits and view.sent == list(range(31)), "older entries are loaded but not sent: they are summarised"


def test_openclaw_2026_9_loads_the_newest_compaction_when_room_is_left(tmp_path: Path) -> None:
    """The tail stops at an entry that does not fit; the compaction before it is loaded if it does."""
    path = compacted_session(tmp_path / "s.jsonl")
    header, sizes = byte_sizes(path)
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    at = next(i for i, line in enumerate(lines) if '"compaction"' in line)
    k = 6  # the newest three turns
    limit = header + sum(sizes[-k:]) + sizes[at]
    window = (limit + 7) // 8
    assert sizes[-k - 1] > window * 8 - limit + sizes[at], "the next entry must not fit"
    view = runtime_view(path, "openclaw-2026.9", context_window=window)
    assert view.sent == [0, *range(31 - k, 31)], "the summary and the newest three turns"
    # One byte less: the compaction does not fit either, and only the turns are sent.
    smaller = runtime_view(path, "openclaw-2026.9", context_window=(header + sum(sizes[-k:])) // 8 + 1)
    assert 0 not in smaller.sent and smaller.sent[-1] == 30


def test_openclaw_2026_9_view_after_a_reset_is_bounded_too(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", 400, extra={100: {"type": "reset", "reason": "reset"}})
    ref = reference_projection(path)
    assert ref.runtime_messages is not None and len(ref.runtime_messages) == 600
    whole = runtime_view(path, "openclaw-2026.9", context_window=DEFAULT_CONTEXT_WINDOW)
    assert whole.messages == 600 and whole.fits
    small = runtime_view(path, "openclaw-2026.9", context_window=16_000)
    assert small.messages == 600 and 0 < len(small.sent) < 600 and small.sent[-1] == 599
    assert turns_sent(path, "openclaw-2026.9", 16_000)[0] > 100


# -- OpenClaw 2026.5 and Pi: compact first ---------------------------------------------------------


def test_openclaw_2026_5_over_the_budget_keeps_pis_cut_point_and_summarizes_the_rest(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", 400)
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    cut = find_cut_point(entries, 0, len(entries), 20_000).first_kept_entry_index
    view = runtime_view(path, "openclaw-2026.5", context_window=40_000)
    assert view.summarized and not view.fits
    assert view.sent == list(range(cut, 800)), "the messages of the entries from the cut point on"
    assert "compacts first" in view.rule and "23,616-token prompt budget" in view.rule


def test_openclaw_2026_5_sends_nothing_when_even_the_kept_part_does_not_fit(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", 400)
    view = runtime_view(path, "openclaw-2026.5", context_window=16_000)
    assert view.sent == [] and view.summarized and "Context overflow" in view.rule


def test_the_system_prompt_counts_against_the_2026_5_budget(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", 100)  # about 9,000 tokens
    window = 40_000  # budget 23,616
    assert runtime_view(path, "openclaw-2026.5", context_window=window).fits
    loaded = runtime_view(path, "openclaw-2026.5", context_window=window, system_prompt_tokens=20_000)
    assert not loaded.fits and loaded.summarized


def test_unknown_runtime_and_bad_window_are_usage_errors(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", 2)
    with pytest.raises(UsageError, match="not a runtime"):
        runtime_view(path, "openclaw-2027", context_window=1000)
    with pytest.raises(UsageError, match="positive integer"):
        runtime_view(path, "pi", context_window=0)


# -- the window from openclaw.json ----------------------------------------------------------------


def state_dir(tmp_path: Path, config: Any) -> Path:
    root = tmp_path / "state"
    (root / "agents" / "main" / "sessions").mkdir(parents=True)
    (root / "openclaw.json").write_text(config if isinstance(config, str) else json.dumps(config), encoding="utf-8")
    return root


def models_config(**entry: Any) -> dict[str, Any]:
    return {
        "agents": {"defaults": {"model": {"primary": "standin/stand-in"}}},
        "models": {"providers": {"standin": {"models": [{"id": "other"}, {"id": "stand-in", **entry}]}}},
    }


def test_openclaw_context_window_follows_openclaws_order(tmp_path: Path) -> None:
    root = state_dir(tmp_path / "a", models_config(contextWindow=64_000))
    assert openclaw_context_window(root) == (
        64_000,
        f"{root / 'openclaw.json'}: models.providers.standin.models[1].contextWindow",
    )
    root = state_dir(tmp_path / "b", models_config(contextWindow=64_000, contextTokens=32_000))
    assert openclaw_context_window(root) == (
        32_000,
        f"{root / 'openclaw.json'}: models.providers.standin.models[1].contextTokens",
    )
    root = state_dir(tmp_path / "c", models_config(contextWindow=64_000, contextTokens=90_000))
    tokens, where = openclaw_context_window(root) or (0, "")
    assert tokens == 64_000 and "capped by contextWindow" in where
    # The agent's own model wins over the defaults'.
    config = models_config(contextWindow=64_000)
    config["agents"]["list"] = [{"id": "main", "model": "standin/other"}]
    config["models"]["providers"]["standin"]["models"][0]["contextWindow"] = 8_000
    assert openclaw_context_window(state_dir(tmp_path / "d", config))[0] == 8_000  # type: ignore[index]


def test_openclaw_context_window_without_one_or_with_a_bad_config(tmp_path: Path) -> None:
    assert openclaw_context_window(state_dir(tmp_path / "a", {})) is None
    assert openclaw_context_window(state_dir(tmp_path / "b", models_config(contextWindow="big"))) is None
    root = state_dir(tmp_path / "c", "{not json")
    with pytest.raises(UsageError, match=r"openclaw\.json: not JSON"):
        openclaw_context_window(root)
    with pytest.raises(UsageError, match="not a directory"):
        openclaw_context_window(tmp_path / "nowhere")


def test_check_on_a_state_dir_with_a_corrupt_config_says_so_and_how_to_go_on(tmp_path: Path) -> None:
    root = state_dir(tmp_path, "{not json")
    path = write_session(root / "agents" / "main" / "sessions" / "s-1.jsonl", 2)
    before = tree_hash(root)
    code, _, out = check(str(path), "--marker", "T0001Z")
    assert code == EXIT.USAGE and "openclaw.json: not JSON" in out and "--context-window" in out
    assert "Traceback" not in out
    code, _, out = check(str(path), "--marker", "T0001Z", "--context-window", "1000")
    assert code == EXIT.OK, out
    assert tree_hash(root) == before


def test_window_for_a_file_in_a_state_dir_reads_its_config(tmp_path: Path) -> None:
    root = state_dir(tmp_path, models_config(contextWindow=16_000))
    path = write_session(root / "agents" / "main" / "sessions" / "s-1.jsonl", 2)
    assert window_for(path)[0] == 16_000
    assert window_for(write_session(tmp_path / "plain.jsonl", 2))[0] == DEFAULT_CONTEXT_WINDOW


# -- lineage check and activate plan --------------------------------------------------------------


def check(*args: str) -> tuple[int, Any, str]:
    res = runner.invoke(app, ["lineage", "check", *args])
    data = None
    if "--json" in args:
        data = json.loads(res.stdout)
    return res.exit_code, data, res.output


def test_check_fails_for_a_marker_past_the_window_and_says_so(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", 400)
    early, late = "T0005Z", "T0399Z"
    code, data, out = check(str(path), "--marker", early, "--marker", late, "--json")
    assert code == EXIT.OK, out  # 200,000 tokens by default: everything is sent
    code, data, out = check(
        str(path), "--marker", late, "--runtime", "openclaw-2026.9", "--context-window", "16000", "--json"
    )
    assert code == EXIT.OK and data["sent"]["sentMessages"] < data["sent"]["messages"], out
    code, data, out = check(
        str(path),
        "--marker",
        early,
        "--marker",
        late,
        "--runtime",
        "openclaw-2026.9",
        "--context-window",
        "16000",
        "--json",
    )
    assert code == EXIT.FAILED and data["ok"] is False
    marks = {m["marker"]: m for m in data["markers"]}
    assert marks[early]["found"] and not marks[early]["sent"] and marks[late]["sent"]
    assert marks[early]["why"] == "in the history but not sent: past the 16,000-token window"
    assert data["windowFrom"] == "--context-window" and data["sent"]["sent"] == [[data["sent"]["sent"][0][0], 799]]
    code, _, out = check(str(path), "--marker", early, "--runtime", "openclaw-2026.9", "--window", "16000")
    assert code == EXIT.FAILED and "in the history but not sent: past the 16,000-token window" in out
    assert "openclaw-2026.9 sends" in out and "of 800 messages" in out


def test_check_reads_the_window_from_the_state_dirs_config(tmp_path: Path) -> None:
    root = state_dir(tmp_path, models_config(contextWindow=16_000))
    (root / "agents" / "main" / "sessions" / "sessions.json").write_text("{}", encoding="utf-8")
    path = write_session(root / "agents" / "main" / "sessions" / "s-1.jsonl", 400)
    before = tree_hash(root)
    code, data, out = check(str(path), "--marker", "T0399Z", "--json")
    # OpenClaw 2026.5 with 16,000 tokens: over even after compacting, so it sends nothing at all.
    assert code == EXIT.FAILED and data["sent"]["sentMessages"] == 0, out
    assert data["markers"][0]["why"].startswith("in the history but summarized by a compaction")
    assert data["window"] == 16_000 and "contextWindow" in data["windowFrom"]
    assert data["runtime"] == "openclaw-2026.5"
    assert tree_hash(root) == before, "check changed the state dir"


def test_activate_plan_refuses_a_marker_the_runtime_will_not_send(tmp_path: Path) -> None:
    """plan goes through check: with the state dir's 16,000-token window an early phrase is refused,
    the late one accepted; the refusal writes nothing into the state dir."""
    state = openclaw_state_copy(JSON_ERA, tmp_path / "state")
    (state / "openclaw.json").write_text(json.dumps(models_config(contextWindow=40_000)), encoding="utf-8")
    candidate = write_session(tmp_path / "C.jsonl", 400)
    before = tree_hash(state)
    base = ["activate", "plan", "--home", str(state), "--agent", "main", "--candidate", str(candidate)]
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "pkg1"), "--marker", "T0005Z"])
    assert res.exit_code != EXIT.OK, res.output
    assert "will not send" in res.output and "T0005Z" in res.output and "40,000-token window" in res.output
    assert tree_hash(state) == before
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "pkg2"), "--marker", "T0399Z"])
    assert res.exit_code == EXIT.OK, res.output
    assert tree_hash(state) == before


def test_an_entry_nested_deeper_than_pythons_json_goes_is_weighed_not_dropped(tmp_path: Path) -> None:
    # Compacting means reading every entry on the path again; a line nested 50,000 deep
    # (Node's JSON.parse reads it) once made that second reading raise RecursionError.
    deep = "[" * 50_000 + "]" * 50_000
    custom = {"type": "custom_message", "customType": "note", "content": "deep", "details": {"d": "@DEEP@"}}
    path = write_session(tmp_path / "s.jsonl", 400, extra={0: custom})
    path.write_text(path.read_text(encoding="utf-8").replace('"@DEEP@"', deep), encoding="utf-8")
    result = runner.invoke(app, ["lineage", "check", str(path), "--context-window", "40000", "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    report = json.loads(result.stdout)
    assert report["projectionsAgree"] and report["messages"] == 801
    assert report["sent"]["summarized"] and not report["sent"]["fits"]
    assert report["sent"]["leftOut"][0][0] == 0, "the deep note is among what the compaction summarizes"
