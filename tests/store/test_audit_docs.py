"""The recipes in docs/audit.md work on a real chain, as written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from kurahi.store.audit.log_file import AuditChain

DOC = Path(__file__).resolve().parents[2] / "docs" / "audit.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def make_chain(path: Path, *, with_floats: bool) -> AuditChain:
    chain = AuditChain(path)
    chain.append("gateway", "gateway.start", {"port": 8787, "ownerToken": "x"})
    chain.append("owner", "config.apply", {"hash": "ab" * 32, "note": 'quotes " and \\ and\ttabs, é, 😀, \u2028'})
    chain.append("device:phone", "job.running", {"jobId": "j1", "ctl": "\x00\x1f\x7f", "n": [1, None, True]})
    if with_floats:
        chain.append("cli", "job.done", {"durationS": 12.5, "ratio": 1e-7})
    return chain


def test_the_doc_has_the_two_recipes() -> None:
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("with_floats", [False, True])
def test_recompute_recipe_verifies_the_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], with_floats: bool
) -> None:
    chain = make_chain(tmp_path / "chain.jsonl", with_floats=with_floats)
    monkeypatch.chdir(tmp_path)
    exec(BLOCKS[0], {})
    head = chain.head()
    assert head is not None and capsys.readouterr().out == f"ok: head {head.hash}\n"


def test_recompute_recipe_catches_an_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chain = make_chain(tmp_path / "chain.jsonl", with_floats=False)
    chain.path.write_bytes(chain.path.read_bytes().replace(b'"port":8787', b'"port":8788'))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError, match="line 1"):
        exec(BLOCKS[0], {})


def test_standard_library_recipe_is_canonical_without_floats(tmp_path: Path) -> None:
    chain = make_chain(tmp_path / "chain.jsonl", with_floats=False)
    for line in chain.path.read_bytes().splitlines():
        record: dict[str, Any] = json.loads(line)
        scope: dict[str, Any] = {"json": json, "record": record}
        exec(BLOCKS[1], scope)
        assert scope["canonical"] == rfc8785.dumps(record) == line
        record.pop("hash")
        exec(BLOCKS[1], scope)
        assert scope["canonical"] == rfc8785.dumps(record)
