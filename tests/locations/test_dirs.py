"""Where Kurahi, Pi and OpenClaw keep state: the order of options, variables and defaults."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kurahi.errors import UsageError
from kurahi.locations.dirs import kurahi_home, read_no_follow
from kurahi.runtimes.openclaw.config import openclaw_state_dir
from kurahi.runtimes.pi.sessions import pi_sessions_dir


def test_the_kurahi_home_is_the_option_then_either_variable_then_the_default() -> None:
    env = {"HOME": "/h", "KURAHI_HOME": "/k", "KOLO_HOME": "/k"}
    assert (kurahi_home("/opt", env).path, kurahi_home("/opt", env).source) == (Path("/opt"), "--home")
    assert kurahi_home(None, env).path == Path("/k") and kurahi_home(None, env).explicit
    assert kurahi_home(None, {"HOME": "/h", "KOLO_HOME": "~/x"}).path == Path("/h/x")
    default = kurahi_home(None, {"HOME": "/h"})
    assert (default.path, default.source, default.explicit) == (Path("/h/.kolo"), "default", False)


def test_two_variables_naming_different_homes_are_refused_with_the_way_out() -> None:
    with pytest.raises(UsageError, match=r"KURAHI_HOME.*KOLO_HOME.*--home"):
        kurahi_home(None, {"HOME": "/h", "KURAHI_HOME": "/a", "KOLO_HOME": "/b"})
    assert kurahi_home("/c", {"HOME": "/h", "KURAHI_HOME": "/a", "KOLO_HOME": "/b"}).path == Path("/c")


def test_openclaws_state_dir_follows_openclaws_own_order() -> None:
    assert openclaw_state_dir({"HOME": "/h", "OPENCLAW_STATE_DIR": "/s", "OPENCLAW_HOME": "/o"}).path == Path("/s")
    assert openclaw_state_dir({"HOME": "/h", "OPENCLAW_STATE_DIR": "  ", "OPENCLAW_HOME": "/o"}).path == Path(
        "/o/.openclaw"
    )
    assert openclaw_state_dir({"HOME": "/h"}).path == Path("/h/.openclaw")


def test_pis_sessions_dir_follows_pis_own_order() -> None:
    env = {"HOME": "/h", "PI_CODING_AGENT_SESSION_DIR": "/s", "PI_CODING_AGENT_DIR": "/a"}
    assert pi_sessions_dir(env).path == Path("/s")
    assert pi_sessions_dir({"HOME": "/h", "PI_CODING_AGENT_DIR": "/a"}).path == Path("/a/sessions")
    assert pi_sessions_dir({"HOME": "/h"}).path == Path("/h/.pi/agent/sessions")


def test_a_state_file_is_read_but_never_through_a_link(tmp_path: Path) -> None:
    real = tmp_path / "openclaw.json"
    real.write_bytes(b'{"agents": {}}')
    assert read_no_follow(real) == b'{"agents": {}}'
    link = tmp_path / "linked.json"
    os.symlink(real, link)
    with pytest.raises(UsageError, match=r"linked\.json"):
        read_no_follow(link)
    with pytest.raises(UsageError, match=r"missing\.json"):
        read_no_follow(tmp_path / "missing.json")
