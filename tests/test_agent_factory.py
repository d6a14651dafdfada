"""Factory Droid (``droid``) could not be installed here (its platform binary is not on the registry),
and none of its own session files is public: its sessions are read as the published descriptions of
its files give them (``sessions/<slug>/<uuid>.jsonl``: a ``session_start`` record, then ``message``
records with Anthropic-style blocks). The files below are made in that shape. sessionref lists them
with their folders, reads them, finds one through ``sessionref mcp --droid-root`` and references it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.factory import FactorySource, factory_root
from tests.test_agents_real import check_search

SESSION = "8f0c4d2e-6b1a-4c3d-9e5f-0a1b2c3d4e5f"


def session(root: Path, records: list[Any], name: str = SESSION, title: str = "Wombat facts") -> Path:
    path = root / "sessions" / "-work-app" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    start = {"type": "session_start", "id": name, "title": title, "owner": "me", "cwd": "/work/app"}
    path.write_text("".join(json.dumps(record) + "\n" for record in [start, *records]))
    return path


def message(role: str, *blocks: Any, time: str = "2026-12-07T19:00:01.000Z") -> dict[str, Any]:
    return {"type": "message", "id": "m", "timestamp": time, "message": {"role": role, "content": list(blocks)}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def test_droid_sessions_are_read(tmp_path: Path) -> None:
    root = tmp_path / ".factory"
    session(
        root,
        [
            message("user", text("<system-reminder>context</system-reminder>"), text("first question about wombats")),
            message("assistant", text("an answer"), {"type": "tool_use", "id": "t1", "name": "LS", "input": {}}),
            message("user", {"type": "tool_result", "tool_use_id": "t1", "content": "SECRET-TOOL-OUTPUT"}),
            {"type": "todo_state", "todos": []},
            message("assistant", text("after the tool"), time="2026-12-07T19:00:09.000Z"),
            "odd",
        ],
    )
    session(root, [message("user", text("a sub-agent's task"))], name="0b9e2c3d-0000-4000-8000-000000000000",
            title="# Task Tool Invocation\nlist files")  # fmt: skip
    source = FactorySource(root)
    (record,) = source.listing()
    assert source.problems == []  # (the sub-agent's session is not listed, nor a problem)
    assert record.header.id == f"droid:{SESSION}" and record.header.cwd == "/work/app"
    assert record.header.created_at == 1_796_670_001_000
    texts = [item.text for item in project_conversation(source.surface(record.header.id))]
    assert texts == ["first question about wombats", "an answer", "after the tool"]
    assert source.surface(record.header.id).events[-1].time == 1_796_670_009_000
    assert source.title(record.header.id).title == "Wombat facts"  # type: ignore[union-attr]
    check_search("--droid-root", root, "wombats", record.header.id, tmp_path)


def test_a_file_without_its_start_record_and_links_are_not_listed(tmp_path: Path) -> None:
    root = tmp_path / ".factory"
    path = session(root, [message("user", text("first question"))])
    path.write_text(json.dumps(message("user", text("no start record"))) + "\n")
    outside = session(tmp_path / "outside", [message("user", text("SECRET"))])
    (root / "sessions" / "-work-app" / "f6c2f1d4-0000-4000-8000-000000000001.jsonl").symlink_to(outside)
    source = FactorySource(root)
    assert source.listing() == [] and len(source.problems) == 2  # (both reported, neither read)


def test_droid_s_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert factory_root() == tmp_path / ".factory"
