"""Differential tests against Pi on thousands of random session trees, in both directions.

Two vocabularies, each against its Pi: every entry kind Pi 1.6.0 knows (context edits on and
off the path, edits of edited entries and of edits, null and string/array replacements, usage
entries, system messages, compactions over system messages and carrying a ``systemMessage``,
null content) against Pi 1.6.0; and only what Pi 0.73.1 knew (no new kinds, no system role, no
null content: where the two Pis agree) against Pi 0.73.1, so Kurahi stays identical to both.

* Kurahi writes -> Pi reads: random operation scripts are applied through Kurahi's
  :class:`Session` (every entry type, durable ``branch()`` moves, reopening), and Pi's
  ``SessionManager.open`` + ``buildSessionContext`` must give what Kurahi's projection gives
  (``project_file`` reading backwards, and the forward :class:`Transcript` path).
* Pi writes -> Kurahi reads: random scripts in ``tests/peers/pi_peer.mjs``'s op language are
  run by Pi's own ``SessionManager`` (``pi_peer.mjs write``), and Kurahi must read each file as
  Pi does.
* A durable ``Session.branch(x)`` reads, in Pi, as Pi's own in-memory ``branch(x)``.

Scripts are drawn with hypothesis (which likes empty strings, astral characters and odd
numbers) and run in batches: one node process writes or reads a whole batch
(``pi_peer.mjs``, which imports only Pi's session module: the full ``dist/index.js``
takes 3-4 s to import). Files in 0.73.1's vocabulary are read by both Pis.

When a file disagrees, its script is shrunk (delta debugging, Pi rerun at each step) and the
failure shows the smallest script, the file, and what Pi and Kurahi each projected.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from kurahi.context import build_context
from kurahi.context.files import project_file
from kurahi.js.values import MISSING
from kurahi.pi import LEAF_MARKER_TYPE, Transcript
from kurahi.store.session import Session
from support.drawing import draw_batch
from support.peer import PiPeer, PiVersion, missing

pytestmark = pytest.mark.pi

TREES = 2000
"""Trees compared with Pi 1.6.0 in each direction (at least)."""
TREES_073 = 800
"""Trees in 0.73.1's vocabulary compared with Pi 0.73.1 in each direction (at least)."""
VOCABULARIES: dict[str, tuple[PiVersion, int]] = {"1.6.0": ("1.6.0", TREES), "0.73.1": ("0.73.1", TREES_073)}
"""Vocabulary -> the Pi that checks it and how many trees."""
GROUP = 4
"""Scripts per hypothesis draw (drawing is the slow part, so a draw's material is shared)."""
PI_BATCH = 1000
"""Files per node process reading them back."""

Script = list[dict[str, Any]]

# -- values -----------------------------------------------------------------------------
#
# Hypothesis draws, for each script, a seeded Random and small pools of texts and JSON values
# (where its taste for empty strings, astral characters and odd floats helps); the script's
# shape comes from the Random, because drawing every op through hypothesis costs ~1 ms each
# and its byte budget would cap the size of a tree.

_ODD_TEXT = [
    "",
    " ",
    "  padded\t",
    "😀",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🏳️‍🌈",
    "é",
    "中文",
    "\u2028\u2029",
    "\x00\x1f\x7f",
    'q"uo\\te',
    "line\nnext\r\n",
    "\ufeffbom",
    "\x85\x0b\x0c\x1c",
    "__proto__",
    "constructor",
    "0",
    "ab" * 300,
]
# Code point ranges for random text (no surrogates: they cannot be written as UTF-8).
_RANGES = [
    *[(0x20, 0x7E)] * 6,
    (0x00, 0x1F),
    (0x7F, 0x9F),
    (0xA0, 0x24F),
    (0x300, 0x36F),
    (0x4E00, 0x4FFF),
    (0x2028, 0x2029),
    (0xE000, 0xFFFF),
    (0x1F300, 0x1F64F),
    (0x1D400, 0x1D4FF),
    (0x10000, 0x10FFFF),
]
_NUMBERS = [0, 1, -1, 2**31, 2**53 - 1, -(2**53) + 1, 0.5, -0.0, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 3.0]
_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh"]

_text = st.one_of(st.text(max_size=10), st.sampled_from(_ODD_TEXT))
_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53) + 1, 2**53 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        _text,
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=5,
)


class _Gen:
    """Random script material: texts, JSON values and Pi-shaped messages.

    ``new`` says whether Pi 1.6.0's vocabulary may be used (its entry kinds, system messages,
    null content); without it only what both Pis read alike is drawn.
    """

    def __init__(self, rnd: random.Random, texts: list[str], values: list[Any], new: bool = True) -> None:
        self.rnd = rnd
        self.texts = texts
        self.values = values
        self.new = new

    def p(self, probability: float) -> bool:
        return self.rnd.random() < probability

    def text(self) -> str:
        r = self.rnd.random()
        if r < 0.3 and self.texts:
            return self.rnd.choice(self.texts)
        if r < 0.5:
            return self.rnd.choice(_ODD_TEXT)
        n = self.rnd.choice((0, 1, 2, 4, 8, 8, 16, 40))
        rand = self.rnd.random
        return "".join(chr(lo + int(rand() * (hi - lo + 1))) for lo, hi in self.rnd.choices(_RANGES, k=n))

    def number(self) -> int | float:
        r = self.rnd.random()
        if r < 0.4:
            return self.rnd.choice(_NUMBERS)
        if r < 0.8:
            return self.rnd.randint(-(2**53) + 1, 2**53 - 1) >> self.rnd.randint(0, 52)
        return self.rnd.uniform(-1e6, 1e6)

    def json(self, depth: int = 2) -> Any:
        r = self.rnd.random()
        if r < 0.15 and self.values:
            return self.rnd.choice(self.values)
        if depth > 0 and r < 0.35:
            return [self.json(depth - 1) for _ in range(self.rnd.randint(0, 3))]
        if depth > 0 and r < 0.55:
            return {self.text(): self.json(depth - 1) for _ in range(self.rnd.randint(0, 3))}
        return self.rnd.choice((None, True, False, self.number(), self.text(), self.text()))

    def ts(self) -> Any:
        return self.rnd.randint(0, 2**42) if self.p(0.9) else self.rnd.choice((1.5, 0, "2025-01-01", None))

    def obj(self, fixed: dict[str, Any], required: dict[str, Any], optional: dict[str, Any]) -> dict[str, Any]:
        """``fixed`` values, then ``required`` keys drawn, then each ``optional`` key half of the time."""
        out = dict(fixed)
        out.update({k: make() for k, make in required.items()})
        out.update({k: make() for k, make in optional.items() if self.p(0.5)})
        return out

    def blocks(self, *kinds: str, most: int = 3) -> list[dict[str, Any]]:
        make = {
            "text": lambda: self.obj({"type": "text"}, {"text": self.text}, {"textSignature": self.text}),
            "image": lambda: {"type": "image", "data": self.rnd.choice(("", "iVBORw0KGgo=")), "mimeType": self.text()},
            "thinking": lambda: self.obj(
                {"type": "thinking"}, {"thinking": self.text}, {"thinkingSignature": self.text, "redacted": self.bool}
            ),
            "toolCall": lambda: {
                "type": "toolCall",
                "id": self.text(),
                "name": self.text(),
                "arguments": {self.text(): self.json(1) for _ in range(self.rnd.randint(0, 2))},
            },
        }
        return [make[self.rnd.choice(kinds)]() for _ in range(self.rnd.randint(0, most))]

    def bool(self) -> bool:
        return self.p(0.5)

    def content(self) -> Any:
        return self.text() if self.p(0.5) else self.blocks("text", "text", "image")

    def usage(self) -> dict[str, Any]:
        n = self.rnd.randint
        if self.p(0.15):  # Pi's own placeholder: 1.6.0 does not trust it, 0.73.1 did
            return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
        return {
            "input": n(0, 10**6),
            "output": n(0, 10**6),
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": n(0, 10**7),
        }

    def level(self) -> Any:
        return self.rnd.choice(_LEVELS) if self.p(0.8) else self.text()

    def message(self) -> dict[str, Any]:
        out = self._message()
        if self.new and self.p(0.05):
            # Null or missing content: 1.6.0 normalises it for user/assistant/toolResult/system.
            if self.p(0.5):
                out["content"] = None
            else:
                out.pop("content", None)
        return out

    def system(self) -> dict[str, Any]:
        """A system-role message, as Pi 1.6.0 stores its prompt state."""
        return self.obj(
            {"role": "system"},
            {"content": lambda: self.text() if self.p(0.7) else self.blocks("text", "text", "image")},
            {
                "sections": lambda: {self.text(): self.rnd.choice((self.text(), None)) for _ in range(2)},
                "toolsAdded": lambda: [{"name": self.text(), "description": self.text()}],
                "timestamp": self.ts,
            },
        )

    def replacement(self) -> Any:
        """A context edit's replacement: mostly null or Pi's shapes, sometimes of the wrong type."""
        r = self.rnd.random()
        if r < 0.4:
            return None
        if r < 0.65:
            return {"content": self.text()}
        if r < 0.85:
            return {"content": self.blocks("text", "text", "image")}
        return self.rnd.choice(({"content": self.json()}, self.text(), self.number(), {}, [self.text()]))

    def _message(self) -> dict[str, Any]:
        kinds = ["user", "user", "assistant", "assistant", "toolResult", "bash", "custom", "odd"]
        if self.new:
            kinds.append("system")
        role = self.rnd.choice(kinds)
        if role == "system":
            return self.system()
        if role == "user":
            return {"role": "user", "content": self.content(), "timestamp": self.ts()}
        if role == "assistant":
            return self.assistant()
        if role == "toolResult":
            return self.obj(
                {"role": "toolResult"},
                {
                    "toolCallId": self.text,
                    "toolName": self.text,
                    "content": lambda: self.blocks("text", "image", most=2),
                },
                {"details": self.json, "isError": self.bool, "timestamp": self.ts},
            )
        if role == "bash":
            return self.obj(
                {"role": "bashExecution"},
                {"command": self.text, "output": self.text, "cancelled": self.bool, "truncated": self.bool},
                {
                    "exitCode": lambda: self.rnd.choice((None, 0, 1, 127, -1)),
                    "fullOutputPath": self.text,
                    "excludeFromContext": lambda: self.rnd.choice((True, False, 0, 1, "", "x", None)),
                    "timestamp": self.ts,
                },
            )
        if role == "custom":
            return self.obj(
                {"role": "custom"},
                {"customType": self.text, "content": self.content, "display": self.bool, "timestamp": self.ts},
                {"details": self.json},
            )
        odd = ["hookMessage", "branchSummary", "compactionSummary", self.text()]
        return self.obj(
            {"role": self.rnd.choice([*odd, "system"] if self.new else odd)},
            {},
            {"content": self.json, "summary": self.json, "timestamp": self.ts},
        )

    def assistant(self) -> dict[str, Any]:
        return self.obj(
            {"role": "assistant"},
            {"content": lambda: self.blocks("text", "thinking", "toolCall")},
            {
                "api": lambda: self.rnd.choice(("anthropic-messages", "openai-responses")),
                "provider": self.text,
                "model": self.text,
                "usage": self.usage,
                "stopReason": lambda: self.rnd.choice(("stop", "toolUse", "error", "aborted", "length")),
                "errorMessage": self.text,
                "timestamp": self.ts,
            },
        )

    # -- Kurahi ops --------------------------------------------------------------------
    #
    # Entry references are {"scope": "path" | "any" | "none", "k": int}, resolved when the op
    # runs: the k-th entry (modulo) of the current root-to-leaf path or of all entries so far.

    def ref(self, *scopes: str) -> dict[str, Any]:
        return {"scope": self.rnd.choice(scopes), "k": self.rnd.randrange(10**6)}

    def raw_entry(self) -> dict[str, Any]:
        """An entry of an unknown type, or of a known type with odd or missing fields or values."""
        j = self.json
        kinds: dict[str, list[str]] = {
            self.rnd.choice(("x-ext", "hook_state", "", "😀")): ["payload", "summary"],
            "thinking_level_change": ["thinkingLevel"],
            "model_change": ["provider", "modelId"],
            "branch_summary": ["summary", "fromId", "details"],
            "compaction": ["summary", "tokensBefore", "firstKeptEntryId"],
            "custom_message": ["customType", "content", "display", "details"]
            if self.new
            else ["customType", "display"],
            "label": ["targetId", "label"],
            "session_info": ["name"],
            "custom": ["customType", "data"],
        }
        if self.new:
            kinds["usage"] = ["kind", "provider", "model", "usage", "note"]
            kinds["context_edit"] = ["targetId"]
        kind = self.rnd.choice([*kinds, "message"])
        if kind == "custom_message" and not self.new:
            # 0.73.1 emits a null or missing content as it is, 1.6.0 as []: only content both read alike.
            return self.obj({"type": kind, "content": self.content()}, {}, dict.fromkeys(kinds[kind], j))
        if kind == "context_edit":
            return {"type": kind, "targetId": self.json(), "replacement": self.replacement()}
        if kind == "message":
            # Any value but null (Pi throws reading message.role of a null or missing message).
            value = self.json()
            return {"type": "message", "message": value if value is not None else {}}
        return self.obj({"type": kind}, {}, dict.fromkeys(kinds[kind], j))

    def kurahi_op(self) -> dict[str, Any]:
        if self.new and self.p(0.18):
            return self.new_op()
        r = self.rnd.randrange(100)
        opt = {"details": self.json, "fromHook": self.bool}
        if r < 40:
            return {"op": "message", "message": self.message()}
        if r < 45:
            return {"op": "thinking", "level": self.level()}
        if r < 50:
            return {"op": "model", "provider": self.text(), "modelId": self.text()}
        if r < 58:
            kept = self.ref("path") if self.p(0.7) else self.ref("path", "any", "none")
            return self.obj(
                {"op": "compaction", "summary": self.text(), "kept": kept, "tokensBefore": self.rnd.randint(0, 2**40)},
                {},
                opt,
            )
        if r < 63:
            return self.obj(
                {"op": "branch_summary", "from": self.ref("any", "path", "none"), "summary": self.text()}, {}, opt
            )
        if r < 71:
            return {"op": "branch", "to": self.ref("any", "any", "path", "none")}
        if r < 76:
            return {"op": "label", "target": self.ref("any", "path"), "label": None if self.p(0.3) else self.text()}
        if r < 79:
            return {"op": "session_info", "name": self.text()}
        if r < 84:
            return self.obj({"op": "custom", "customType": self.text()}, {}, {"data": self.json})
        if r < 89:
            return self.obj(
                {"op": "custom_message", "customType": self.text(), "content": self.content(), "display": self.bool()},
                {},
                {"details": self.json},
            )
        if r < 95:
            return {"op": "entry", "entry": self.raw_entry()}
        return {"op": "reopen"}

    def new_op(self) -> dict[str, Any]:
        """One of Pi 1.6.0's kinds, written raw (Kurahi's writer for them is another part's)."""
        r = self.rnd.randrange(100)
        if r < 40:
            target = self.ref("path", "path", "path", "any", "none")
            return {"op": "context_edit", "target": target, "replacement": self.replacement()}
        if r < 60:
            return {"op": "message", "message": self.system()}
        if r < 75:
            return self.obj(
                {"op": "usage", "kind": self.text(), "provider": self.text(), "model": self.text()},
                {"usage": self.usage},
                {"note": self.text},
            )
        kept = self.ref("path") if self.p(0.8) else self.ref("any", "none")
        system = self.system() if self.p(0.8) else self.rnd.choice(("", 0, None, self.text(), self.json()))
        return {"op": "compaction_sys", "summary": self.text(), "kept": kept, "systemMessage": system}

    def size(self) -> int:
        return self.rnd.choice((self.rnd.randint(0, 8), self.rnd.randint(0, 40), self.rnd.randint(30, 80)))


def _gen(draw: st.DrawFn, new: bool = True) -> _Gen:
    rnd = random.Random(draw(st.integers(0, 2**64)))  # hypothesis's randoms() costs ~8 us a call
    return _Gen(rnd, draw(st.lists(_text, max_size=5)), draw(st.lists(_json, max_size=3)), new)


def _kurahi_script(g: _Gen) -> Script:
    """A random operation script for :func:`apply_kurahi`."""
    return [g.kurahi_op() for _ in range(g.size())]


@st.composite
def script_groups(draw: st.DrawFn, make: Callable[[_Gen], Script], size: int, new: bool = True) -> list[Script]:
    """``size`` scripts from one hypothesis draw (they share its texts and values)."""
    g = _gen(draw, new)
    return [make(g) for _ in range(size)]


def kurahi_scripts(new: bool = True) -> st.SearchStrategy[Script]:
    """One random script for :func:`apply_kurahi` (Kurahi's ``Session`` API)."""
    return script_groups(_kurahi_script, 1, new).map(lambda group: group[0])


def pi_scripts(new: bool = True) -> st.SearchStrategy[Script]:
    """One random script in ``pi_peer.mjs``'s op language (for :func:`pi_write`)."""
    return script_groups(_pi_script, 1, new).map(lambda group: group[0])


def _path(parent: dict[str, str | None], leaf: str | None) -> list[str]:
    out: list[str] = []
    while leaf is not None:
        out.append(leaf)
        leaf = parent[leaf]
    out.reverse()
    return out


def apply_kurahi(path: Path, script: Script) -> None:
    """Run ``script`` through Kurahi's :class:`Session`, writing ``path``."""
    s = Session.create(path, cwd="/work/differential", fsync="never")
    try:
        ids: list[str] = []
        parent: dict[str, str | None] = {}

        def resolve(ref: dict[str, Any]) -> str | None:
            pool = _path(parent, s.leaf_id) if ref["scope"] == "path" else ids if ref["scope"] == "any" else []
            return pool[ref["k"] % len(pool)] if pool else None

        for op in script:
            kind = op["op"]
            before = s.leaf_id
            attach: str | None = before
            opt = {k: op[k] for k in ("details", "fromHook") if k in op}
            if kind == "message":
                new = s.append_message(op["message"])
            elif kind == "thinking":
                new = s.append_thinking_level_change(op["level"])
            elif kind == "model":
                new = s.append_model_change(op["provider"], op["modelId"])
            elif kind == "compaction":
                new = s.append_compaction(
                    op["summary"],
                    resolve(op["kept"]),
                    op["tokensBefore"],
                    details=opt.get("details", MISSING),
                    from_hook=opt.get("fromHook", MISSING),
                )
            elif kind == "branch_summary":
                attach = resolve(op["from"])
                new = s.append_branch_summary(
                    attach, op["summary"], details=opt.get("details", MISSING), from_hook=opt.get("fromHook", MISSING)
                )
            elif kind == "branch":
                attach = resolve(op["to"])
                new = s.branch(attach)
                assert s.leaf_id == attach
            elif kind == "label":
                target = resolve(op["target"])
                if target is None:
                    continue
                new = s.append_label(target, op["label"])
            elif kind == "session_info":
                new = s.append_session_info(op["name"])
            elif kind == "custom":
                new = s.append_custom(op["customType"], op.get("data", MISSING))
            elif kind == "custom_message":
                new = s.append_custom_message(
                    op["customType"], op["content"], op["display"], op.get("details", MISSING)
                )
            elif kind == "entry":
                new = s.append_entry(op["entry"])
            elif kind == "context_edit":
                new = s.append_entry(
                    {"type": "context_edit", "targetId": resolve(op["target"]), "replacement": op["replacement"]}
                )
            elif kind == "usage":
                new = s.append_entry({k: v for k, v in op.items() if k != "op"} | {"type": "usage"})
            elif kind == "compaction_sys":
                kept = resolve(op["kept"])
                entry = {"type": "compaction", "summary": op["summary"], "firstKeptEntryId": kept, "tokensBefore": 9}
                new = s.append_entry({**entry, "systemMessage": op["systemMessage"]})
            elif kind == "reopen":
                s.close()
                s = Session.open(path, fsync="never")
                assert s.leaf_id == before, f"reopening moved the append position from {before!r} to {s.leaf_id!r}"
                continue
            else:  # pragma: no cover - a bug in the strategy
                raise AssertionError(f"unknown op {kind}")
            parent[new] = attach
            ids.append(new)
    finally:
        s.close()


# -- Pi scripts ------------------------------------------------------------------------------


def _pi_message_op(g: _Gen) -> dict[str, Any]:
    kind = g.rnd.choice(("user", "user", "assistant", "assistant", "toolResult", "bashExecution", "appendMessage"))
    if kind == "user":
        return g.obj({"op": "user", "content": g.content()}, {}, {"timestamp": g.ts})
    if kind == "assistant":
        return g.obj(
            {"op": "assistant"},
            {},
            {
                "content": lambda: g.blocks("text", "thinking", "toolCall"),
                "text": g.text,
                "provider": g.text,
                "model": g.text,
                "api": g.text,
                "usage": g.usage,
                "stopReason": lambda: g.rnd.choice(("stop", "toolUse", "error", "aborted")),
                "errorMessage": g.text,
                "timestamp": g.ts,
            },
        )
    if kind == "toolResult":
        return g.obj(
            {"op": "toolResult", "toolCallId": g.text(), "toolName": g.text()},
            {},
            {
                "text": g.text,
                "content": lambda: g.blocks("text", "image", most=2),
                "isError": g.bool,
                "details": g.json,
                "timestamp": g.ts,
            },
        )
    if kind == "bashExecution":
        return g.obj(
            {"op": "bashExecution", "command": g.text()},
            {},
            {
                "output": g.text,
                "exitCode": lambda: g.rnd.choice((None, 0, 1, 127)),
                "cancelled": g.bool,
                "truncated": g.bool,
                "fullOutputPath": g.text,
                "excludeFromContext": g.bool,
                "timestamp": g.ts,
            },
        )
    message = g.message()
    if message.get("role") == "system" and not isinstance(message.get("content"), str):
        # 1.6.0's appendCompaction replays system messages and throws on content it cannot read.
        message["content"] = g.text()
    return {"op": "appendMessage", "message": message}


def _pi_script(g: _Gen) -> Script:
    """A random script in ``pi_write.mjs``'s op language, with valid references and an assistant.

    A small model of Pi's tree (the parent of every named entry, the leaf) picks references
    on the current path or anywhere, as ``$NAME``.
    """
    rnd = g.rnd
    n = g.size()
    ops: Script = []
    parent: dict[str, str | None] = {}
    kind: dict[str, str] = {}
    leaf: str | None = None
    live: list[str] = []  # named entries in Pi's current file (what a "$NAME" can refer to)
    present: set[str] = set()  # every entry in Pi's current file, including unnamed copied labels
    labelled: dict[str, bool] = {}  # Pi's labelsById: target name -> label set (truthy)
    editable: set[str] = set()  # entries appendContextEdit accepts (user/assistant/toolResult/custom content)

    def path() -> list[str]:
        # Pi's getBranch(): up from the leaf while the parent is in the file. After
        # createBranchedSession, an entry whose parent was a label has lost it.
        out: list[str] = []
        at = leaf
        while at is not None and at in present:
            out.append(at)
            at = parent[at]
        return out[::-1]

    def pick(scope: str) -> str | None:
        pool = [x for x in path() if not x.startswith("copy")] if scope == "path" else live
        return rnd.choice(pool) if pool else None

    def add(op: dict[str, Any], attach: str | None) -> None:
        nonlocal leaf
        name = f"e{len(ops)}"
        role = op.get("message", {}).get("role") if op["op"] == "appendMessage" else None
        if op["op"] in ("user", "assistant", "toolResult", "appendCustomMessageEntry") or role in _EDITABLE_ROLES:
            editable.add(name)
        ops.append({**op, "as": name})
        parent[name] = attach
        kind[name] = op["op"]
        live.append(name)
        present.add(name)
        leaf = name

    opt = {"details": g.json, "fromHook": g.bool}
    assistant_at = rnd.randint(0, n)  # without an assistant message Pi writes nothing
    for i in range(n + 1):
        r = rnd.randrange(100)
        if g.new and i != assistant_at and rnd.random() < 0.2:
            _pi_new_op(g, add, leaf, [x for x in path() if x in editable])
            continue
        if i == assistant_at:
            add(g.obj({"op": "assistant", "text": g.text()}, {}, {"provider": g.text, "model": g.text}), leaf)
        elif r < 45:
            add(_pi_message_op(g), leaf)
        elif r < 50:
            add({"op": "appendThinkingLevelChange", "thinkingLevel": g.level() if g.p(0.9) else g.json()}, leaf)
        elif r < 55:
            odd = g.p(0.1)  # Pi does not check the types
            add({"op": "appendModelChange", "provider": g.json() if odd else g.text(), "modelId": g.text()}, leaf)
        elif r < 63:
            where = rnd.choice(("path", "path", "path", "any", "leaf", "prev", "null", "unknown", "empty", "number"))
            name = pick(where) if where in ("path", "any") else None
            fixed = {"leaf": "$leaf", "prev": "$prev", "null": None, "unknown": "deadbeef", "empty": "", "number": 7}
            kept = fixed.get(where, f"${name}" if name else None)
            op = {"op": "appendCompaction", "summary": g.text(), "firstKeptEntryId": kept}
            add(g.obj({**op, "tokensBefore": rnd.randint(0, 2**40)}, {}, opt), leaf)
        elif r < 72:
            target = pick(rnd.choice(("path", "any", "any")))
            if target is None or g.p(0.1):
                ops.append({"op": "resetLeaf"})
                leaf = None
            else:
                ops.append({"op": "branch", "id": f"${target}"})
                leaf = target
        elif r < 77:
            source = None if g.p(0.2) else pick(rnd.choice(("path", "any")))
            op = {"op": "branchWithSummary", "branchFromId": f"${source}" if source else None, "summary": g.text()}
            add(g.obj(op, {}, opt), source)
        elif r < 82:
            add(g.obj({"op": "appendCustomEntry", "customType": g.text()}, {}, {"data": g.json}), leaf)
        elif r < 87:
            op = {"op": "appendCustomMessageEntry", "customType": g.text(), "content": g.content(), "display": g.bool()}
            add(g.obj(op, {}, {"details": g.json}), leaf)
        elif r < 93:
            target = pick(rnd.choice(("path", "any")))
            if target is not None:
                op = g.obj({"op": "appendLabelChange", "targetId": f"${target}"}, {}, {"label": g.text})
                labelled[target] = bool(op.get("label"))
                add(op, leaf)
        elif r < 97 or leaf is None:
            add({"op": "appendSessionInfo", "name": g.text()}, leaf)
        else:
            # Pi copies the path (labels left out, then re-added at the end) to a new file
            # and carries on there; only what it copied can still be referred to.
            # Labels set on copied entries come back as new (unnamed) label entries at the end.
            ops.append({"op": "createBranchedSession", "leafId": "$leaf"})
            keep = [x for x in path() if kind[x] != "appendLabelChange"]
            copied = [t for t, on in labelled.items() if on and t in keep]
            live[:] = keep
            present.clear()
            present.update(keep)
            labelled = dict.fromkeys(copied, True)
            leaf = keep[-1] if keep else None
            for t in copied:
                name = f"copy{len(ops)}-{t}"
                parent[name], kind[name], leaf = leaf, "appendLabelChange", name
                present.add(name)
    return ops


_EDITABLE_ROLES = ("user", "assistant", "toolResult")


def _pi_new_op(
    g: _Gen, add: Callable[[dict[str, Any], str | None], None], leaf: str | None, targets: list[str]
) -> None:
    """One of Pi 1.6.0's own write calls: a system message, a valid context edit, a usage entry."""
    r = g.rnd.randrange(100)
    if r < 45 and targets:
        replacement = g.rnd.choice((None, None, {"content": g.text()}, {"content": g.blocks("text", "image")}))
        add({"op": "appendContextEdit", "targetId": f"${g.rnd.choice(targets)}", "replacement": replacement}, leaf)
    elif r < 75:
        system = g.system()
        add(
            g.obj({"op": "system", "content": system["content"]}, {}, {"sections": lambda: system.get("sections")}),
            leaf,
        )
    else:
        op = {"op": "appendUsage", "kind": g.text(), "provider": g.text(), "model": g.text(), "usage": g.usage()}
        add(g.obj(op, {}, {"note": g.text}), leaf)


# -- running ----------------------------------------------------------------------------------


def pi_write(items: Sequence[tuple[Path, Script]], version: PiVersion = "1.6.0") -> list[dict[str, Any]]:
    """Let Pi's SessionManager run each script into its path (one node process)."""
    return PiPeer(version).batch("write", json.dumps([{"out": str(p), "script": s} for p, s in items]))


def pi_read_fast(paths: Sequence[Path], version: PiVersion = "1.6.0") -> list[dict[str, Any]]:
    """Pi's context for each file (one quick node process; for shrinking)."""
    return PiPeer(version).contexts(paths)


def pi_at(items: Sequence[tuple[Path, str | None]]) -> list[dict[str, Any]]:
    """Pi's context for each file after moving its leaf in memory to the given entry."""
    return PiPeer().batch("at", json.dumps([{"file": str(p), "leafId": leaf} for p, leaf in items]))


def pi_read_batched(paths: Sequence[Path], version: PiVersion = "1.6.0") -> list[dict[str, Any]]:
    """Pi's context for each file, one node process per :data:`PI_BATCH` files."""
    out: list[dict[str, Any]] = []
    for chunk in _chunks(paths, PI_BATCH):
        got = pi_read_fast(chunk, version)
        assert [g["file"] for g in got] == [str(p) for p in chunk], "Pi's reader lost files"
        out.extend(got)
    return out


def kurahi_views(path: Path) -> dict[str, dict[str, Any]]:
    """Kurahi's projection of a file, backwards (``project_file``) and forwards (``Transcript``)."""
    backward = project_file(path).context.to_dict()
    with Transcript.open(path) as t:
        if len(t) == 0:
            forward = build_context([], None).to_dict()
        else:
            forward = build_context(t.path_entries(t.path_indices(len(t) - 1)), t.leaf_id).to_dict()
    return {"project_file": backward, "Transcript": forward}


# -- comparing -------------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """JSON equality as JavaScript sees it: numbers are doubles, booleans are not numbers.

    ``1.0`` in a file comes back from Pi as ``1``, and ``4.297060479552938e16`` as
    ``42970604795529380``: the same double, so the same value.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b if type(a) is type(b) is int else float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_ABSENT = "<absent>"


def differences(got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """What differs between Kurahi's projection and Pi's, key by key."""
    if "error" in want:
        return [f"Pi failed on the file: {want['error']}"]
    out = []
    for key in ("leafId", "thinkingLevel", "model", "messages"):
        g, w = got.get(key, _ABSENT), want.get(key, _ABSENT)
        if same(g, w):
            continue
        if key == "messages" and isinstance(g, list) and isinstance(w, list):
            i = next((i for i, (x, y) in enumerate(zip(g, w, strict=False)) if not same(x, y)), min(len(g), len(w)))
            out.append(
                f"messages differ at index {i} (Pi has {len(w)}, Kurahi {len(g)}):\n"
                f"    Pi     {_short(w[i : i + 2])}\n    Kurahi {_short(g[i : i + 2])}"
            )
        else:
            out.append(f"{key}:\n    Pi     {_short(w)}\n    Kurahi {_short(g)}")
    return out


def _short(v: Any, limit: int = 1500) -> str:
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= limit else s[:limit] + f"... ({len(s)} chars)"


def mismatches(path: Path, want: dict[str, Any]) -> list[str]:
    """Every way Kurahi's views of ``path`` differ from Pi's ``want``."""
    try:
        views = kurahi_views(path)
    except Exception as exc:
        return [f"Kurahi failed to read the file: {type(exc).__name__}: {exc}"]
    return [f"{name}: {d}" for name, got in views.items() for d in differences(got, want)]


def _file_text(path: Path, limit: int = 6000) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text)} chars)"


def ddmin(script: Script, fails: Callable[[Script], bool], budget: int = 150) -> Script:
    """Delta debugging: a smaller script that still ``fails`` (at most ``budget`` checks)."""
    n = 2
    while len(script) >= 2 and budget > 0:
        chunk = max(1, len(script) // n)
        for start in range(0, len(script), chunk):
            candidate = script[:start] + script[start + chunk :]
            budget -= 1
            if fails(candidate):
                script, n = candidate, max(n - 1, 2)
                break
            if budget <= 0:
                break
        else:
            if chunk == 1:
                break
            n = min(len(script), n * 2)
    return script


def _report(direction: str, cases: list[tuple[Script, Path, list[str]]], total: int, shrink: Callable[..., Any]) -> str:
    cases.sort(key=lambda c: (len(json.dumps(c[0])), c[1].name))
    script, path, diffs = shrink(*cases[0])
    return (
        f"{direction}: {len(cases)} of {total} files disagree with Pi. Smallest (after shrinking):\n\n"
        f"script:\n{json.dumps(script, ensure_ascii=False, indent=None)}\n\n"
        f"file {path}:\n{_file_text(path)}\n\n" + "\n".join(diffs)
    )


def _chunks(seq: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


# -- Kurahi writes -> Pi reads -----------------------------------------------------------------


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """Where generated files go: a tmpfs when there is one.

    Thousands of small files are created, and what is tested is their format, not the disk;
    on ext4 the writer's open/close per file costs several times more than on tmpfs. Failure
    messages carry the file contents, so nothing is lost when the directory goes.
    """
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="kurahi-differential-") as d:
            yield Path(d)
    else:
        yield tmp_path


def _readers(version: PiVersion) -> list[PiVersion]:
    """The Pis that read a vocabulary's files: its own, and 1.6.0 too (0.73.1's files read alike in both)."""
    return [version] if version == "1.6.0" or missing("1.6.0") else [version, "1.6.0"]


def _pi_for(vocabulary: str) -> tuple[PiVersion, int]:
    version, trees = VOCABULARIES[vocabulary]
    why = missing(version)
    if why:
        pytest.skip(why)
    return version, trees


@pytest.mark.parametrize("vocabulary", list(VOCABULARIES), ids=lambda v: f"vocabulary {v}")
def test_kurahi_writes_pi_reads(vocabulary: str, work: Path, record_property: Callable[[str, Any], None]) -> None:
    version, trees = _pi_for(vocabulary)
    started = time.monotonic()
    groups = draw_batch(script_groups(_kurahi_script, GROUP, vocabulary == "1.6.0"), trees // GROUP)
    scripts = [s for group in groups for s in group]
    files = []
    for i, script in enumerate(scripts):
        path = work / f"k{i:05}.jsonl"
        apply_kurahi(path, script)
        files.append(path)
    failing = []
    for reader in _readers(version):
        wants = pi_read_batched(files, reader)
        for script, path, want in zip(scripts, files, wants, strict=True):
            diffs = mismatches(path, want)
            if diffs:
                failing.append((script, path, [f"(Pi {reader} reading) {d}" for d in diffs]))
    record_property("trees", len(files))
    record_property("seconds", round(time.monotonic() - started, 1))

    def write_kurahi(candidate: Script, folder: Path) -> list[Path]:
        p = folder / "s.jsonl"
        apply_kurahi(p, candidate)
        return [p]

    shrink = _shrinker(work, write_kurahi, version)
    assert not failing, _report(f"Kurahi writes -> Pi {version} reads", failing, len(files), shrink)
    assert len(files) >= trees


def _shrinker(
    work: Path, write: Callable[[Script, Path], list[Path]], version: PiVersion
) -> Callable[[Script, Path, list[str]], tuple[Script, Path, list[str]]]:
    """Shrink a failing script by delta debugging; ``write`` makes a candidate's files in a new folder."""
    shrink_dir = work / "shrink"
    shrink_dir.mkdir(exist_ok=True)
    counter = iter(range(10**6))

    def shrink(script: Script, path: Path, diffs: list[str]) -> tuple[Script, Path, list[str]]:
        last: dict[str, Any] = {}

        def fails(candidate: Script) -> bool:
            folder = shrink_dir / f"s{next(counter)}"
            folder.mkdir()
            for p in write(candidate, folder):
                found = mismatches(p, pi_read_fast([p], version)[0])
                if found:
                    last.update(path=p, diffs=found)
                    return True
            return False

        small = ddmin(script, fails)
        return (small, last["path"], last["diffs"]) if last and fails(small) else (script, path, diffs)

    return shrink


# -- Pi writes -> Kurahi reads -----------------------------------------------------------------


def _pi_files(results: list[dict[str, Any]]) -> list[Path]:
    """Every file a Pi write left (the requested one, and where createBranchedSession went)."""
    out = []
    for r in results:
        assert "error" not in r, f"Pi failed running a generated script: {r['error']}"
        for f in dict.fromkeys([r["out"], r["file"]]):
            if os.path.exists(f):
                out.append(Path(f))
    return out


@pytest.mark.parametrize("vocabulary", list(VOCABULARIES), ids=lambda v: f"vocabulary {v}")
def test_pi_writes_kurahi_reads(vocabulary: str, work: Path, record_property: Callable[[str, Any], None]) -> None:
    version, trees = _pi_for(vocabulary)
    started = time.monotonic()
    groups = draw_batch(script_groups(_pi_script, GROUP, vocabulary == "1.6.0"), trees // GROUP)
    scripts = [s for group in groups for s in group]
    items = [(work / f"p{i:05}" / "s.jsonl", s) for i, s in enumerate(scripts)]
    for path, _ in items:
        path.parent.mkdir()
    results = pi_write(items, version)
    assert len(results) == len(items)
    script_of = {}
    for (_, script), r in zip(items, results, strict=True):
        for f in (r["out"], r["file"]):
            script_of[f] = script
    files = _pi_files(results)
    failing = []
    for reader in _readers(version):
        wants = pi_read_batched(files, reader)
        for path, want in zip(files, wants, strict=True):
            diffs = mismatches(path, want)
            if diffs:
                failing.append((script_of[str(path)], path, [f"(Pi {reader} reading) {d}" for d in diffs]))
    record_property("trees", len(files))
    record_property("seconds", round(time.monotonic() - started, 1))

    def write_pi(candidate: Script, folder: Path) -> list[Path]:
        try:
            res = pi_write([(folder / "s.jsonl", candidate)], version)
        except AssertionError:
            return []
        return [] if "error" in res[0] else _pi_files(res)  # removing ops may break a reference

    shrink = _shrinker(work, write_pi, version)
    assert not failing, _report(f"Pi {version} writes -> Kurahi reads", failing, len(files), shrink)
    assert len(files) >= trees


# -- durable leaf moves ------------------------------------------------------------------------


def _tree_session(path: Path) -> dict[str, str]:
    """A small tree with settings changes, a compaction and two branches; returns named ids."""
    ids: dict[str, str] = {}
    with Session.create(path, cwd="/work/differential", fsync="never") as s:
        ids["model"] = s.append_model_change("anthropic", "claude-sonnet-4-5")
        ids["think"] = s.append_thinking_level_change("high")
        ids["u1"] = s.append_message({"role": "user", "content": "first 😀", "timestamp": 1})
        ids["a1"] = s.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "one"}],
                "provider": "openai",
                "model": "gpt-5",
                "timestamp": 2,
            }
        )
        ids["u2"] = s.append_message({"role": "user", "content": "second", "timestamp": 3})
        ids["comp"] = s.append_compaction("summary of before", ids["u2"], 1234)
        ids["a2"] = s.append_message({"role": "assistant", "content": [], "timestamp": 4})
        ids["label"] = s.append_label(ids["u1"], "start")
        s.branch(ids["a1"])
        ids["think2"] = s.append_thinking_level_change("low")
        ids["bs"] = s.append_branch_summary(ids["u1"], "we tried something else")
        ids["u3"] = s.append_message({"role": "user", "content": "third", "timestamp": 5})
    return ids


def test_durable_branch_is_read_by_pi_as_the_target(pi: PiPeer, tmp_path: Path) -> None:
    base = tmp_path / "base.jsonl"
    ids = _tree_session(base)
    targets: list[str | None] = [*ids.values(), None]
    files = []
    for i, target in enumerate(targets):
        path = tmp_path / f"b{i:02}.jsonl"
        path.write_bytes(base.read_bytes())
        with Session.open(path, fsync="never") as s:
            marker = s.branch(target)
            assert s.leaf_id == target
        with Session.open(path, fsync="never") as s:
            assert s.leaf_id == target, "the leaf move was lost on reopen"
        with Transcript.open(path) as t:
            last = t.entry_at(len(t) - 1)
            assert last.id == marker
            assert last.data["customType"] == LEAF_MARKER_TYPE and last.data["parentId"] == target
        files.append(path)

    # After a durable move, the next entry attaches to the target.
    continued = tmp_path / "continued.jsonl"
    continued.write_bytes(base.read_bytes())
    with Session.open(continued, fsync="never") as s:
        s.branch(ids["a1"])
    with Session.open(continued, fsync="never") as s:
        new = s.append_message({"role": "user", "content": "after the move", "timestamp": 9})
    with Transcript.open(continued) as t:
        assert t.entry(new).data["parentId"] == ids["a1"]

    *after, after_continued = pi.contexts([*files, continued])  # Pi opens each file: its leaf is the last line
    at_target = pi_at([(base, t) for t in targets])  # Pi's own branch(target) / resetLeaf() on the original
    for path, target, got, want in zip(files, targets, after, at_target, strict=True):
        assert "error" not in got and "error" not in want, (got, want)
        with Transcript.open(path) as t:
            marker = t.leaf_id
        for key in ("messages", "thinkingLevel", "model"):
            assert same(got.get(key), want.get(key)), (
                f"branch({target!r}): Pi's {key} after the durable move differs from Pi at the target\n"
                f"file:\n{_file_text(path)}\n after move {_short(got.get(key))}\n at target  {_short(want.get(key))}"
            )
        assert got["leafId"] == marker
        assert want["leafId"] == target
        # Kurahi reads the moved file as Pi does ...
        assert not mismatches(path, got), mismatches(path, got)
        # ... and projects the target, in the original file, as Pi does.
        at = project_file(base, leaf_id=target).context if target is not None else build_context([], None)
        assert not differences(at.to_dict(), want), differences(at.to_dict(), want)
        moved = project_file(path).context.to_dict()
        assert same({**moved, "leafId": target}, at.to_dict())

    got = after_continued
    assert got["leafId"] == new
    contents = [m.get("content") for m in got["messages"]]
    assert contents == ["first 😀", [{"type": "text", "text": "one"}], "after the move"]
    assert got["model"] == {"provider": "openai", "modelId": "gpt-5"} and got["thinkingLevel"] == "high"
    assert not mismatches(continued, got), mismatches(continued, got)
