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
    run,
    sessionref_on_path,
    setup_work,
    stub,
    tool_turn_made,
)
from tests.test_mcp import snapshot

KILO = next(iter(sorted((INTEROP / "node_modules" / "@kilocode").glob("cli-linux-*/bin/kilo"))), None)
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_kilo = pytest.mark.skipif(_OPTIONAL and KILO is None, reason="Kilo CLI is not installed (make interop)")


def kilo_config(home: Path, port: int, configured: dict[str, Any] | None = None) -> None:
    """``kilo.json``: ``configured`` (docs/mcp.md's, as written) with the stub as its provider."""
    config = home / ".config" / "kilo" / "kilo.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    provider = {
        "stub": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Stub",
            "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "stub"},
            "models": {"stub-model": {"name": "Stub", "tool_call": True}},
        }
    }
    config.write_text(json.dumps({**(configured or {}), "provider": provider, "model": "stub/stub-model"}))


def kilo(home: Path, work: Path, *arguments: str, path: str | None = None) -> str:
    assert KILO is not None
    # Like opencode, it takes its folder from $PWD.
    environment = {
        **base_environment(home),
        "PWD": str(work),
        "KILO_DISABLE_MODELS_FETCH": "1",
        "KILO_DISABLE_AUTOUPDATE": "1",
        "KILO_PERMISSION": json.dumps({"*": "allow"}),
    }
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
    offered = [t.get("function", {}).get("name", "") for body in script.requests for t in body.get("tools") or []]
    assert any(name.endswith("reference_session") for name in offered), offered
    results = [m for body in script.requests for m in body.get("messages", []) if m.get("role") == "tool"]
    assert any(_said(m.get("content")).endswith("\n\n" + snapshot(root)) for m in results)  # whole


@needs_kilo
def test_handoff_to_kilo_cli_headless(tmp_path: Path) -> None:
    from tests.test_handoff_agents import _bin, handoff, opencode_saw, reading, recorded, setup

    work = setup(tmp_path)
    home = tmp_path / "home"
    with reading(_OpenAI) as (port, script):
        kilo_config(home, port)
        environment = {
            **base_environment(home),
            "PWD": str(work),
            "KILO_DISABLE_MODELS_FETCH": "1",
            "KILO_DISABLE_AUTOUPDATE": "1",
            "KILO_PERMISSION": json.dumps({"*": "allow"}),
        }
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
