"""Roo Code is a VS Code extension: it cannot run here. Its tasks are read as its source writes them
(RooCodeInc/Roo-Code: ``saveTaskMessages`` writes ``ui_messages.json``, whose first message is always the
task; ``api_conversation_history.json`` is what its model was sent, the workspace named in its first
message's environment details). The folders below are made in that shape. sessionref lists the tasks
with their folders, reads them, finds one through ``sessionref mcp --roo-root`` and references it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core import SessionQueryError, project_conversation
from core.sessions.sources.roo import (
    ClineExtensionSource,
    KiloCodeSource,
    RooCodeSource,
    cline_extension_root,
    kilo_extension_root,
    roo_root,
)
from tests.test_agents_real import check_search

TASK = "7b1f3c2a-1d4e-4f6a-9b8c-0d1e2f3a4b5c"


def task(root: Path, messages: Any, name: str = TASK, workspace: str | None = "/work/app") -> Path:
    folder = root / "tasks" / name
    folder.mkdir(parents=True)
    (folder / "ui_messages.json").write_text(json.dumps(messages))
    details = f"<environment_details>\n# Current Workspace Directory ({workspace}) Files\n</environment_details>"
    first = {"role": "user", "content": [{"type": "text", "text": "<task>\nx\n</task>"},
                                         {"type": "text", "text": details if workspace else "none"}]}  # fmt: skip
    (folder / "api_conversation_history.json").write_text(json.dumps([first, {"role": "assistant", "content": "x"}]))
    return folder


def say(kind: str, text: str, ts: int = 1_796_670_000_000, **more: Any) -> dict[str, Any]:
    return {"ts": ts, "type": "say", "say": kind, "text": text, **more}


def test_roo_code_tasks_are_read_as_its_panel_showed_them(tmp_path: Path) -> None:
    root = tmp_path / "rooveterinaryinc.roo-cline"
    task(
        root,
        [
            say("text", "first question about wombats"),
            say("api_req_started", '{"request": "SECRET"}'),
            say("reasoning", "hmm"),
            {"ts": 1_796_670_001_000, "type": "ask", "ask": "tool", "text": '{"tool": "listFiles"}'},
            say("text", "an answer", 1_796_670_002_000),
            say("user_feedback", "more about their burrows"),
            say("completion_result", "They dig."),
            "odd",
            {"ts": 1_796_670_009_000, "type": "ask", "ask": "followup", "text": '{"question": "Anything else?"}'},
        ],
    )
    source = RooCodeSource(root)
    (record,) = source.listing()
    assert record.header.id == f"roo:{TASK}" and record.header.cwd == "/work/app"
    assert record.header.created_at == 1_796_670_000_000
    texts = [item.text for item in project_conversation(source.surface(record.header.id))]
    assert texts == ["first question about wombats", "an answer", "more about their burrows", "They dig."]
    assert source.title(record.header.id).title == "first question about wombats"  # type: ignore[union-attr]
    check_search("--roo-root", root, "wombats", record.header.id, tmp_path)


def test_a_condensed_context_is_a_checkpoint_and_odd_folders_are_read_around(tmp_path: Path) -> None:
    root = tmp_path / "roo"
    task(root, [say("text", "first question"), say("text", "an answer"),
                say("condense_context", "", contextCondense={"summary": "They asked about wombats.", "cost": 0}),
                say("user_feedback", "next question")], workspace=None)  # fmt: skip
    task(root, {"not": "a list"}, name="odd")
    outside = task(tmp_path / "outside", [say("text", "SECRET")])
    (root / "tasks" / "linked").symlink_to(outside)
    source = RooCodeSource(root)
    assert [record.header.id for record in source.listing()] == [f"roo:{TASK}"]
    snapshot = source.surface(f"roo:{TASK}")
    assert snapshot.events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    assert [i.text for i in project_conversation(snapshot)] == ["They asked about wombats.", "next question"]
    assert source.listing()[0].header.cwd is None
    with pytest.raises(SessionQueryError):
        source.surface("roo:odd")


def test_roo_code_s_folder_comes_from_vs_code_s(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    assert roo_root() == tmp_path / "c" / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert roo_root() == tmp_path / ".config" / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline"


def test_cline_s_and_kilo_code_s_extensions_keep_their_tasks_as_roo_code_does(tmp_path: Path) -> None:
    # Cline (which Roo Code forked) opens a task with a "task" message and names the folder its model
    # works in "Current Working Directory"; Kilo Code (a fork of Roo Code) writes as Roo Code does.
    cline = tmp_path / "saoudrizwan.claude-dev"
    folder = task(cline, [say("task", "first question about wombats"), say("api_req_started", "{}"),
                          say("text", "an answer"), say("completion_result", "They dig.")])  # fmt: skip
    details = "<environment_details>\n# Current Working Directory (/work/cline) Files\n</environment_details>"
    first = {
        "role": "user",
        "content": [{"type": "text", "text": "<task>\nx\n</task>"}, {"type": "text", "text": details}],
    }
    (folder / "api_conversation_history.json").write_text(json.dumps([first]))
    source = ClineExtensionSource(cline)
    (record,) = source.listing()
    assert record.header.id == f"clinevsc:{TASK}" and record.header.cwd == "/work/cline"
    assert [i.text for i in project_conversation(source.surface(record.header.id))] == [
        "first question about wombats", "an answer", "They dig."
    ]  # fmt: skip
    check_search("--clinevsc-root", cline, "wombats", record.header.id, tmp_path)
    kilo = tmp_path / "kilocode.kilo-code"
    task(kilo, [say("text", "a kilo question"), say("text", "a kilo answer")])
    (record,) = KiloCodeSource(kilo).listing()
    assert record.header.id == f"kilocode:{TASK}" and record.header.cwd == "/work/app"
    assert [i.text for i in project_conversation(KiloCodeSource(kilo).surface(record.header.id))] == [
        "a kilo question", "a kilo answer"
    ]  # fmt: skip


def test_the_extensions_folders_are_vs_code_s(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    storage = tmp_path / "c" / "Code" / "User" / "globalStorage"
    assert cline_extension_root() == storage / "saoudrizwan.claude-dev"
    assert kilo_extension_root() == storage / "kilocode.kilo-code"
