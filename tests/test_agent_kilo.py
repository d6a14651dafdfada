"""Kilo CLI (``@kilocode/cli``'s Linux binary, pinned in ``tests/interop``), run offline against a local
stub of an OpenAI-compatible API: a plain chat, a turn with a tool call, resumes and hostile text.
sessionref lists what it wrote in ``kilo.db`` (opencode's schema) with its folder, finds it by a word
through ``sessionref mcp --kilo-root`` and references it. Kilo CLI also runs ``sessionref mcp`` itself,
configured as docs/mcp.md says, and gets the snapshot back whole."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core.sessions.sources.opencode import KiloSource
from tests.support.rc8 import INTEROP
from tests.test_agents_real import (
    HOSTILE,
    _OpenAI,
    _said,
    base_environment,
    check_search,
    check_sessions,
    docs_block,
    offered_tools,
    opencode_config,
    run,
    sessionref_on_path,
    setup_work,
    stub,
    tool_messages,
    tool_turn_made,
)
from tests.test_mcp import snapshot

KILO = next(iter(sorted((INTEROP / "node_modules" / "@kilocode").glob("cli-linux-*/bin/kilo"))), None)
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_kilo = pytest.mark.skipif(_OPTIONAL and KILO is None, reason="Kilo CLI is not installed (make interop)")


def kilo_config(home: Path, port: int, configured: dict[str, Any] | None = None) -> None:
    """``kilo.json``: opencode's schema, as ``opencode_config`` writes it."""
    opencode_config(home, port, configured, config=home / ".config" / "kilo" / "kilo.json")


def kilo_environment(home: Path, work: Path) -> dict[str, str]:
    # Like opencode, it takes its folder from $PWD.
    return {
        **base_environment(home),
        "PWD": str(work),
        "KILO_DISABLE_MODELS_FETCH": "1",
        "KILO_DISABLE_AUTOUPDATE": "1",
        "KILO_PERMISSION": json.dumps({"*": "allow"}),
    }


def kilo(home: Path, work: Path, *arguments: str, path: str | None = None) -> str:
    assert KILO is not None
    environment = kilo_environment(home, work)
    if path is not None:
        environment["PATH"] = path
    return run([str(KILO), "run", *arguments], work, environment)


@needs_kilo
def test_kilo_cli_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        kilo_config(home, port)
        kilo(home, work, "KL-MARK-1 hello, what is a wombat?")
        kilo(home, work, "--continue", "KL-MARK-2 please USE A TOOL to list the files")
        kilo(home, work, "--continue", f"KL-MARK-3 resumed. {HOSTILE}")
    assert tool_turn_made(script)
    data = home / ".local" / "share" / "kilo"
    assert (data / "kilo.db").is_file()
    source = KiloSource(data)
    (session_id,) = check_sessions(source, "KL", work)
    assert session_id.startswith("kilo:ses_")
    check_search("--kilo-root", data, "wombat", session_id, tmp_path)


@needs_kilo
def test_kilo_cli_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    with stub(_OpenAI) as (port, script):
        kilo_config(home, port, docs_block("app.kilo.ai/config.json"))  # docs/mcp.md's kilo.json, as written
        out = kilo(home, work, "REFERENCE DESIGN please", path=path)
    assert "ANSWER" in out
    offered = offered_tools(script)
    assert any(name.endswith("reference_session") for name in offered), offered
    results = tool_messages(script)
    assert any(_said(m.get("content")).endswith("\n\n" + snapshot(root)) for m in results)  # whole


@needs_kilo
def test_handoff_to_kilo_cli_headless(tmp_path: Path) -> None:
    from tests.test_handoff_agents import _bin, handoff, opencode_saw, reading, recorded, setup

    work = setup(tmp_path)
    home = tmp_path / "home"
    with reading(_OpenAI) as (port, script):
        kilo_config(home, port)
        environment = kilo_environment(home, work)
        assert KILO is not None
        environment["PATH"] = _bin(tmp_path, "kilo", [str(KILO)])
        before = (home / ".config" / "kilo" / "kilo.json").read_text()
        done = handoff(tmp_path, "kilo", environment)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    opencode_saw(script.requests)  # (its fork: the same requests)
    # Kilo CLI itself adds "$schema" and the permission it ran with to its configuration, on any run
    # (a plain `kilo run` does too); nothing of ours is in it.
    after = json.loads((home / ".config" / "kilo" / "kilo.json").read_text())
    after.pop("$schema", None)
    after.pop("permission", None)
    assert after == json.loads(before) and "sessionref" not in json.dumps(after)
    recorded(tmp_path, "kilo")
