"""pi (``@mariozechner/pi-coding-agent``, pinned in ``tests/interop``), run offline against a local stub
of an OpenAI-compatible API: a plain chat, a turn with a tool call, resumes and hostile text, then its
own compactions. sessionref lists what it wrote with its folder, finds it by a word through
``sessionref mcp --pi-root`` and references it as pi builds its model's context. Then the format's
corners, with files shaped as pi writes them: a version 1 file, a tree, a folder of every project's
files, a link out of its folder."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.pi import PiSource, pi_root
from tests.support.rc8 import INTEROP as _INTEROP
from tests.support.rc8 import NODE
from tests.test_agents_real import (
    HOSTILE,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    run,
    setup_work,
    stub,
    tool_turn_made,
)

PI = _INTEROP / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_pi = pytest.mark.skipif(
    _OPTIONAL and (NODE is None or not PI.exists()), reason="pi is not installed (make interop)"
)


def pi(home: Path, work: Path, port: int, *arguments: str, window: int = 128_000) -> str:
    """pi in print mode with the stub as its one provider (``models.json``, as its docs say)."""
    assert NODE is not None
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    model = {"id": "stub-model", "name": "Stub", "contextWindow": window, "maxTokens": 4096}
    provider = {
        "baseUrl": f"http://127.0.0.1:{port}/v1",
        "api": "openai-completions",
        "apiKey": "stub",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [model],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"stub": provider}}))
    environment = {**base_environment(home), "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
    return run([NODE, str(PI), "--provider", "stub", "--model", "stub-model", *arguments], work, environment)


@needs_pi
def test_pi_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        pi(home, work, port, "-p", "PI-MARK-1 hello, what is a wombat?")
        pi(home, work, port, "--continue", "-p", "PI-MARK-2 please USE A TOOL to list the files")
        pi(home, work, port, "--continue", "-p", f"PI-MARK-3 resumed. {HOSTILE}")
        pi(home, work, port, "-p", "a second session about quokkas")
    assert tool_turn_made(script)
    agent = home / ".pi" / "agent"
    source = PiSource(agent)
    ids = check_sessions(source, "PI", work)
    assert len(ids) == 2 and all(len(session_id) == len("pi:") + 36 for session_id in ids)  # whole UUIDv7s
    (quokka,) = [i for i in ids if source.session(i).title == "a second session about quokkas"]
    check_search("--pi-root", agent, "quokkas", quokka, tmp_path)


@needs_pi
def test_pi_s_own_compactions_read_as_it_builds_its_context(tmp_path: Path) -> None:
    # A tiny window and reserve: pi compacts after every answer (the stub reports 8 tokens used),
    # asking the stub for the summary; its newest compaction keeps the turn after the one before.
    home, work = setup_work(tmp_path)
    settings = home / ".pi" / "agent" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"compaction": {"enabled": True, "reserveTokens": 93, "keepRecentTokens": 10}}))
    with stub(_OpenAI) as (port, _script):
        for number, more in ((1, ()), (2, ("--continue",)), (3, ("--continue",))):
            pi(home, work, port, *more, "-p", f"PC-MARK-{number} about wombats", window=100)
    source = PiSource(home / ".pi" / "agent")
    (record,) = source.listing()
    written = [json.loads(line) for line in next((home / ".pi").rglob("*.jsonl")).read_text().splitlines()]
    assert sum(entry["type"] == "compaction" for entry in written) >= 2
    events = source.surface(record.header.id).events
    assert events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    said = [event.data["content"][0]["text"] for event in events[1:]]
    assert said == ["PC-MARK-3 about wombats", "ANSWER PC-MARK-3"]
    assert [event.seq for event in events] == sorted(event.seq for event in events)
    assert source.title(record.header.id).title == "PC-MARK-1 about wombats"  # (dropped, still its name)


# -- the format's corners -------------------------------------------------------------------------------


def _write(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    return path


def _header(session_id: str = "01a24c16-a285-7258-ac9f-5027617230e6", version: int = 3) -> dict[str, Any]:
    return {"type": "session", "version": version, "id": session_id, "timestamp": "2026-12-06T16:01:21.542Z",
            "cwd": "/work/pi"}  # fmt: skip


def _message(entry: str | None, parent: str | None, role: str, text: str) -> dict[str, Any]:
    found: dict[str, Any] = {"type": "message", "timestamp": "2026-12-06T16:01:22.000Z",
                             "message": {"role": role, "content": [{"type": "text", "text": text}]}}  # fmt: skip
    if entry is not None:
        found |= {"id": entry, "parentId": parent}
    return found


def _said(source: PiSource) -> list[str]:
    (record,) = source.listing()
    return [item.text for item in project_conversation(source.surface(record.header.id))]


def test_a_version_1_file_reads_entry_after_entry(tmp_path: Path) -> None:
    # Before version 2 entries had no ids: pi links each to the one before it when it loads the file.
    _write(
        tmp_path / "sessions" / "--work-pi--" / "old.jsonl",
        [
            _header(version=1),
            _message(None, None, "user", "old question"),
            _message(None, None, "assistant", "old answer"),
        ],
    )
    assert _said(PiSource(tmp_path)) == ["old question", "old answer"]


def test_the_branch_that_ends_in_the_last_entry_is_the_session(tmp_path: Path) -> None:
    # /tree moved back to the first answer and asked again: the file holds both branches.
    _write(
        tmp_path / "sessions" / "--work-pi--" / "tree.jsonl",
        [
            _header(),
            _message("u1", None, "user", "first"),
            _message("a1", "u1", "assistant", "answer one"),
            _message("u2", "a1", "user", "abandoned"),
            _message("a2", "u2", "assistant", "abandoned answer"),
            _message("u3", "a1", "user", "taken instead"),
            _message("a3", "u3", "assistant", "answer three"),
            {"type": "label", "id": "l1", "parentId": "a3", "timestamp": "2026-12-06T16:01:23.000Z", "targetId": "u1",
             "label": "start"},
        ],
    )  # fmt: skip
    assert _said(PiSource(tmp_path)) == ["first", "answer one", "taken instead", "answer three"]


def test_a_session_folder_of_every_project_s_files_is_read_too(tmp_path: Path) -> None:
    # $PI_CODING_AGENT_SESSION_DIR puts every folder's files in one folder, without sessions/.
    folder = tmp_path / "all-sessions"
    _write(folder / "one.jsonl", [_header(), _message("u1", None, "user", "flat")])
    assert _said(PiSource(folder)) == ["flat"]


def test_no_link_out_of_its_folder_is_followed(tmp_path: Path) -> None:
    outside = _write(tmp_path / "elsewhere" / "x.jsonl", [_header(), _message("u1", None, "user", "outside")])
    projects = tmp_path / "agent" / "sessions"
    projects.mkdir(parents=True)
    (projects / "--linked--").symlink_to(outside.parent, target_is_directory=True)
    (projects / "link.jsonl").symlink_to(outside)
    assert PiSource(tmp_path / "agent").listing() == []


def test_its_folder_follows_pi_s_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert pi_root() == tmp_path / ".pi" / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert pi_root() == tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "flat"))
    assert pi_root() == tmp_path / "flat"
