"""The viewer over HTTP on loopback: the token-for-cookie exchange, CSRF, the page headers, bad
input, and the data endpoints on every backend (the API reference at /docs: test_docs_http)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kurahi.gateway.static_files import CSP
from support.backends import BackendMaker
from support.gateways import make_gateway_home
from support.homes import MARKUP, add_big_tree, add_markup_session, add_session, sessions_dir
from support.ui_server import serve_viewer

KEY = "agent:alice:main"


@pytest.fixture
def viewer(tmp_path: Path):  # type: ignore[no-untyped-def]
    with serve_viewer(make_gateway_home(tmp_path)) as v:
        yield v


def test_a_token_is_exchanged_once_for_an_httponly_strict_cookie(viewer) -> None:  # type: ignore[no-untyped-def]
    with viewer.client() as b:
        r = b.get("/ui/api/residents")
        assert r.status_code == 401 and r.json()["error"]["code"] == "login_required"
        r = b.post("/ui/api/login", json={"token": viewer.token})
        assert r.status_code == 200
        cookie = r.headers["set-cookie"]
        assert cookie.startswith("kurahi_ui=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert "Path=/ui" in cookie and "Max-Age=28800" in cookie
        assert viewer.token not in cookie and viewer.token not in r.text
        me = r.json()
        assert me["actor"] == "owner" and "read" in me["scopes"] and len(me["csrf"]) >= 40
        # The cookie alone now reads; the bearer API still wants its header, not the cookie.
        assert b.get("/ui/api/residents").json()[0]["id"] == "alice"
        assert b.get("/api/agents").status_code == 401


def test_wrong_token_and_a_token_without_read_are_refused(viewer) -> None:  # type: ignore[no-untyped-def]
    with viewer.client() as b:
        r = b.post("/ui/api/login", json={"token": "not-the-token"})
        assert r.status_code == 401 and "not valid" in r.json()["error"]["message"]
        assert "set-cookie" not in r.headers
        with b.stream("POST", "/api/devices", json={"name": "chat-only", "scopes": ["chat"]},
                      headers={"Authorization": f"Bearer {viewer.token}"}) as p:  # fmt: skip
            p.read()
            chat_token = json.loads(p.text)["token"]
        viewer.watch.add(chat_token)
        r = b.post("/ui/api/login", json={"token": chat_token})
        assert r.status_code == 403 and "'read' scope" in r.json()["error"]["message"]
        r = b.post("/ui/api/login", json={"token": ""})
        assert r.status_code == 422


def test_login_must_be_json_from_the_gateways_own_origin(viewer) -> None:  # type: ignore[no-untyped-def]
    with viewer.client() as b:
        r = b.post("/ui/api/login", data={"token": viewer.token})
        assert r.status_code in (415, 422) and "set-cookie" not in r.headers
        r = b.post("/ui/api/login", json={"token": viewer.token}, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "cross_origin"
        assert "set-cookie" not in r.headers


def test_every_non_get_needs_the_sessions_csrf_token(viewer) -> None:  # type: ignore[no-untyped-def]
    with viewer.client() as b:
        me = viewer.login(b)
        near = me["csrf"][:-1] + ("B" if me["csrf"][-1] == "A" else "A")  # one character off
        for forged in ({}, {"X-CSRF-Token": "forged"}, {"X-CSRF-Token": near}):
            r = b.post("/ui/api/logout", headers=forged)
            assert r.status_code == 403 and r.json()["error"]["code"] == "csrf_failed"
        assert b.get("/ui/api/me").status_code == 200  # the forged requests changed nothing
        r = b.post("/ui/api/logout", headers={"X-CSRF-Token": me["csrf"]})
        assert r.status_code == 200
        assert b.get("/ui/api/me").status_code == 401


def test_an_expired_cookie_a_revoked_device_and_a_rotated_owner_token_end_the_session(viewer) -> None:  # type: ignore[no-untyped-def]
    owner = {"Authorization": f"Bearer {viewer.token}"}
    with viewer.client() as b, viewer.client() as d:
        viewer.login(b)
        viewer.clock.now += 8 * 3600 + 1
        r = b.get("/ui/api/residents")
        assert r.status_code == 401 and r.json()["error"]["code"] == "login_required"
        pair = d.post("/api/devices", json={"name": "tablet", "scopes": ["read"]}, headers=owner).json()
        viewer.watch.add(pair["token"])
        me = viewer.login(d, pair["token"])
        assert me["actor"] == f"device:{pair['device']['id']}" and me["scopes"] == ["read"]
        assert d.get("/ui/api/residents").status_code == 200
        assert d.delete(f"/api/devices/{pair['device']['id']}", headers=owner).status_code == 200
        assert d.get("/ui/api/residents").status_code == 401
        assert d.post("/ui/api/login", json={"token": pair["token"]}).status_code == 401
        viewer.login(b)
        new = "rotated-" + "x" * 40
        viewer.watch.add(new)
        viewer.home.token_file.write_text(new + "\n")
        assert b.get("/ui/api/residents").status_code == 401


def test_every_ui_answer_carries_the_strict_policy_and_pages_hold_no_secret(viewer) -> None:  # type: ignore[no-untyped-def]
    with viewer.client() as b:
        paths = ["/ui/", "/ui/static/app.js", "/ui/static/style.css", "/ui/static/pages/tree.js", "/ui/api/me"]
        for path in paths:
            r = b.get(path)
            assert r.headers["content-security-policy"] == CSP, path
            assert r.headers["x-content-type-options"] == "nosniff" and r.headers["cache-control"] == "no-store"
        viewer.login(b)
        assert b.get("/ui/api/residents").headers["content-security-policy"] == CSP
        assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP and "default-src 'none'" in CSP
        page = b.get("/ui/").text
        assert "<script>" not in page and " on" not in re.sub(r"<p>.*?</p>", "", page, flags=re.S).lower().split(">")[0]
        assert not re.search(r"https?://", page), "the page loads nothing from elsewhere"
        for name in ("app.js", "api.js", "dom.js", "pages/tree.js", "pages/residents.js", "pages/repairs.js"):
            js = b.get(f"/ui/static/{name}").text
            assert ".innerHTML" not in js and "insertAdjacentHTML" not in js and "eval(" not in js, name
            assert not re.search(r"https?://", js), name
        for probe in (
            "/ui/static/../access.py",
            "/ui/static/..%2f..%2fsecrets/gateway.token",
            "/ui/static/%2e%2e/routes.py",
        ):
            r = b.get(probe)
            assert r.status_code == 404 and viewer.token not in r.text, probe
        assert b.get("/ui/static/nothing.js").status_code == 404
        assert b.get("/uix").status_code == 401  # only /ui and what is under it is the viewer's


def test_bad_input_gets_a_clear_json_error(viewer) -> None:  # type: ignore[no-untyped-def]
    add_markup_session(viewer.home)
    with viewer.client() as b:
        viewer.login(b)
        r = b.get("/ui/api/agents/alice/tree", params={"key": "agent:alice:nope"})
        assert r.status_code == 404 and "agent:alice:nope" in r.json()["error"]["message"]
        r = b.get("/ui/api/agents/alice/tree", params={"key": "a\x01b"})
        assert r.status_code == 422
        r = b.get("/ui/api/agents/alice/tree", params={"key": f"agent:alice:{MARKUP}", "expand": "<x>"})
        assert r.status_code == 422 and "expand" in r.json()["error"]["message"]
        r = b.get("/ui/api/agents/alice/entry", params={"key": f"agent:alice:{MARKUP}", "id": "<b>nope</b>"})
        assert r.status_code == 404 and r.headers["content-type"].startswith("application/json")
        assert b.get("/ui/api/agents/Bad%20Agent/sessions").status_code == 422
        assert b.get("/ui/api/agents/bob/sessions").status_code == 404
        assert b.get("/ui/api/reports/..%2Fsecrets").status_code in (404, 422)
        assert b.get("/ui/api/repairs/nope").status_code == 404


def test_a_line_too_large_is_cut_and_a_transcript_too_large_is_refused_by_name(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    found = add_markup_session(home)
    with serve_viewer(home, max_transcript=512 * 1024) as v, v.client() as b:
        v.login(b)
        r = b.get("/ui/api/agents/alice/tree", params={"key": found["key"]})
        assert r.status_code == 413 and "limit of 524288" in r.json()["error"]["message"]
    with serve_viewer(home) as v, v.client() as b:
        v.login(b)
        tree = b.get("/ui/api/agents/alice/tree", params={"key": found["key"]}).json()
        assert [row["id"] for row in tree["rows"]][:4] == found["ids"]
        raw = b.get("/ui/api/agents/alice/entry", params={"key": found["key"], "id": found["ids"][2]}).json()
        assert raw["truncated"] is True and raw["bytes"] > 1024 * 1024 and len(raw["raw"]) == 256 * 1024


def test_a_transcript_whose_parents_loop_is_refused_by_name(viewer) -> None:  # type: ignore[no-untyped-def]
    lines = [
        {"type": "session", "version": 3, "id": "loop", "timestamp": "2026-11-01T08:00:00.000Z", "cwd": "/w"},
        {"type": "message", "id": "a", "parentId": "b", "timestamp": "2026-11-01T08:00:01.000Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1}},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": "2026-11-01T08:00:02.000Z",
         "message": {"role": "user", "content": "ho", "timestamp": 2}},
    ]  # fmt: skip
    path = sessions_dir(viewer.home) / "loop.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    add_session(viewer.home, "agent:alice:loop", path)
    with viewer.client() as b:
        viewer.login(b)
        r = b.get("/ui/api/agents/alice/tree", params={"key": "agent:alice:loop"})
        assert r.status_code == 422 and r.json()["error"]["code"] == "unreadable_transcript"
        assert "cycle" in r.json()["error"]["message"].lower() or "loop" in r.json()["error"]["message"].lower()
    # An id that is an array: not a parent of anything, shown, never a traceback.
    odd = [lines[0], {**lines[1], "parentId": None}, {**lines[2], "id": [1, 2], "parentId": "a"}]
    path.write_text("".join(json.dumps(x) + "\n" for x in odd))
    with viewer.client() as b:
        viewer.login(b)
        r = b.get("/ui/api/agents/alice/tree", params={"key": "agent:alice:loop", "expand": "all"})
        assert r.status_code == 200, r.text
        assert [row["id"] for row in r.json()["rows"]] == ["a", "[1, 2]"]


def test_symlinked_reports_and_repairs_are_not_followed(viewer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "outside"
    (outside / "r").mkdir(parents=True)
    (outside / "r" / "continuity-report.json").write_text("{}")
    (viewer.home.root / "reports").mkdir()
    os.symlink(outside / "r", viewer.home.root / "reports" / "linked")
    (viewer.home.root / "reports" / "real").mkdir()
    planted = viewer.home.root / "reports" / "real" / "continuity-report.json"
    os.symlink(outside / "r" / "continuity-report.json", planted)
    with viewer.client() as b:
        viewer.login(b)
        data = b.get("/ui/api/reports").json()
        assert [r["name"] for r in data["reports"]] == ["real"]
        real = b.get("/ui/api/reports/real").json()
        assert real["verified"] is False and "symlink" in real["problems"][0]
        assert b.get("/ui/api/reports/linked").status_code == 404


def test_the_data_endpoints_work_on_each_backend(tmp_path: Path, any_backend: BackendMaker) -> None:
    home = make_gateway_home(tmp_path)
    backend = any_backend(home.root)
    with serve_viewer(home, backend=backend) as v, v.client() as b:
        owner = {"Authorization": f"Bearer {v.token}"}
        assert b.post("/api/agents/alice/chat", json={"message": "first"}, headers=owner).status_code == 200
        assert b.post("/api/agents/alice/sessions/reset", json={}, headers=owner).status_code == 200
        assert b.post("/api/agents/alice/chat", json={"message": "second"}, headers=owner).status_code == 200
        v.login(b)
        rows = b.get("/ui/api/agents/alice/sessions").json()
        assert [r["key"] for r in rows] == [KEY]
        lineage = b.get("/ui/api/agents/alice/lineage", params={"key": KEY}).json()
        assert len(lineage["pieces"]) == 2, lineage
        tree = b.get("/ui/api/agents/alice/tree", params={"key": KEY}).json()
        assert tree["entries"] == 2 and tree["context"]["messages"] == 2
        assert "second" in tree["rows"][0]["preview"]
        resident = b.get("/ui/api/residents/alice").json()
        assert resident["backend"] == backend.kind and resident["marker"] == "ALICE-7F3A"


def test_a_big_tree_pages_by_rows_and_expands_runs(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    stats = add_big_tree(home, "agent:alice:big", entries=5000)
    with serve_viewer(home) as v, v.client() as b:
        v.login(b)
        q = {"key": "agent:alice:big"}
        folded = b.get("/ui/api/agents/alice/tree", params={**q, "limit": 500}).json()
        # The runtime settles the generated tool calls left unanswered when it starts: a few entries more.
        assert folded["entries"] >= stats["entries"] == 5000 and folded["runs"] > 0
        assert folded["total"] < 5000 and len(folded["rows"]) == min(500, folded["total"])
        n = folded["entries"]
        every = b.get("/ui/api/agents/alice/tree", params={**q, "expand": "all", "offset": n - 10, "limit": 50}).json()
        assert every["total"] == n and len(every["rows"]) == 10 and every["rows"][-1]["row"] == n - 1
        run = next(r for r in folded["rows"] if r.get("run"))
        opened = b.get("/ui/api/agents/alice/tree", params={**q, "expand": str(run["pos"]), "limit": 500}).json()
        assert opened["total"] == folded["total"] + run["count"] - 1
        leaf = folded["context"]["leafId"]
        at = b.get("/ui/api/agents/alice/locate", params={**q, "id": leaf}).json()
        assert at["pos"] >= 0
        raw = b.get("/ui/api/agents/alice/entry", params={**q, "id": leaf}).json()
        assert json.loads(raw["raw"])["id"] == leaf and "leaf" in raw["flags"]
    assert sessions_dir(home).is_dir()
