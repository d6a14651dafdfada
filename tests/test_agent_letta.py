"""Letta Code (npm ``@letta-ai/letta-code``, unpacked in ``tests/interop/alone/letta``, on Node 24) with
its experimental local backend, run offline against a local stub of an OpenAI-compatible API named as
a llama.cpp server: a plain chat, a turn calling its ``Bash`` tool, a resumed conversation
(``--conversation``) with hostile text. sessionref lists what it kept with its folder, finds it by a
word through ``sessionref mcp --letta-root`` and references it. Then the folder's corners: the reminder
parts before a prompt, an archived conversation, folder names that are not a conversation's, links out."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.letta import LettaSource, conversation_name, letta_root
from tests.support.rc8 import INTEROP
from tests.test_agents_real import (
    HOSTILE,
    NODE24,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    run,
    setup_work,
    stub,
    tool_turn_made,
)

LETTA = INTEROP / "alone" / "letta" / "node_modules" / "@letta-ai" / "letta-code" / "letta.js"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_letta = pytest.mark.skipif(
    _OPTIONAL and not (LETTA.exists() and NODE24.exists()), reason="Letta Code is not installed (make interop)"
)


def letta(home: Path, work: Path, port: int, *arguments: str) -> str:
    environment = {
        **base_environment(home),
        "LETTA_LOCAL_BACKEND_EXPERIMENTAL": "1",
        "LLAMA_CPP_BASE_URL": f"http://127.0.0.1:{port}/v1",
    }
    command = [str(NODE24), str(LETTA), "--backend", "local", "-m", "llama.cpp/stub-model", *arguments]
    return run(command, work, environment)


def _folder(conversation: str) -> str:
    return base64.urlsafe_b64encode(conversation.encode()).decode().rstrip("=")


def _texts(source: LettaSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_letta
def test_letta_conversations_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        letta(home, work, port, "--new-agent", "-p", "LT-MARK-1 hello, what is a wombat?")
        letta(
            home,
            work,
            port,
            "--conversation",
            "local-conv-1",
            "--yolo",
            "-p",
            "LT-MARK-2 please USE A TOOL to list the files",
        )
        letta(home, work, port, "--conversation", "local-conv-1", "-p", f"LT-MARK-3 resumed. {HOSTILE}")
        letta(home, work, port, "-p", "a second conversation about quokkas")
    assert tool_turn_made(script)
    folder = home / ".letta" / "lc-local-backend"
    source = LettaSource(folder)
    ids = check_sessions(source, "LT", work)
    assert "letta:conversation-local-conv-1" in ids and len(ids) == 2
    assert not any("<system-reminder>" in text for text in _texts(source, "letta:conversation-local-conv-1"))
    (quokka,) = [i for i in ids if "quokkas" in _texts(source, i)[0]]
    check_search("--letta-root", folder, "quokkas", quokka, tmp_path)


# -- the folder's corners ---------------------------------------------------------------------------------


def _conversation(root: Path, name: str, entries: list[Any], **about: Any) -> Path:
    folder = root / "conversations" / _folder(name)
    folder.mkdir(parents=True)
    conversation = {"id": name.partition(":")[2], "agent_id": "agent-local-1", "archived": False,
                    "created_at": "2026-12-07T20:09:02.472Z", "summary": None, **about}  # fmt: skip
    (folder / "conversation.json").write_text(json.dumps(conversation))
    header = {"type": "session", "version": 3, "id": "x", "timestamp": "2026-12-07T20:09:02.472Z", "cwd": "/work/lt"}
    (folder / "messages.jsonl").write_text("".join(json.dumps(e) + "\n" for e in [header, *entries]))
    return folder


def _message(entry: str, parent: str | None, role: str, *texts: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text} for text in texts]
    return {"type": "message", "id": entry, "parentId": parent, "timestamp": "2026-12-07T20:09:02.633Z",
            "message": {"role": role, "content": content}}  # fmt: skip


def test_what_letta_kept_is_read_as_pi_s_entries_without_its_reminders(tmp_path: Path) -> None:
    root = tmp_path / "lc-local-backend"
    _conversation(
        root,
        "conversation:local-conv-1",
        [
            _message("u1", None, "user", "<system-reminder>\nDevice Information\n</system-reminder>", "first question"),
            _message("a1", "u1", "assistant", "an answer"),
        ],
        summary="Wombat facts",
    )
    _conversation(root, "conversation:local-conv-2", [_message("u1", None, "user", "archived")], archived=True)
    odd = root / "conversations" / "not-base64!"
    odd.mkdir()
    (odd / "messages.jsonl").write_text("{}\n")
    source = LettaSource(root)
    (record,) = source.listing()
    assert source.problems == []  # (the archived conversation is not listed, nor a problem)
    assert record.header.id == "letta:conversation-local-conv-1" and record.header.cwd == "/work/lt"
    assert _texts(source, record.header.id) == ["first question", "an answer"]
    assert source.title(record.header.id).title == "Wombat facts"  # type: ignore[union-attr]


def test_conversation_names_and_links_out(tmp_path: Path) -> None:
    assert conversation_name(_folder("conversation:local-conv-1")) == "conversation-local-conv-1"
    assert conversation_name(_folder("default:agent-local-4")) == "default-agent-local-4"
    assert conversation_name(_folder("other:x")) is None and conversation_name(_folder("conversation:a/b")) is None
    assert conversation_name("@@@") is None and conversation_name(_folder("conversation:\x00")) is None
    outside = tmp_path / "outside"
    folder = _conversation(outside, "conversation:local-conv-9", [_message("u1", None, "user", "SECRET")])
    root = tmp_path / "lc-local-backend" / "conversations"
    root.mkdir(parents=True)
    (root / _folder("conversation:local-conv-8")).symlink_to(folder)
    assert LettaSource(tmp_path / "lc-local-backend").listing() == []


def test_letta_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LETTA_LOCAL_BACKEND_DIR", str(tmp_path / "l"))
    assert letta_root() == tmp_path / "l"
    monkeypatch.delenv("LETTA_LOCAL_BACKEND_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert letta_root() == tmp_path / ".letta" / "lc-local-backend"
