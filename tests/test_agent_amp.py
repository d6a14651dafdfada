"""Amp (Sourcegraph's ``amp``) runs only against its vendor's service, and none of its own thread files
is public: its threads are read as the published descriptions of its thread store give them
(``threads/T-<uuid>.json``: ``title``, ``created``, ``env.initial.trees``, Anthropic-style
``messages``). The files below are made in that shape. sessionref lists them with their folders,
reads them, finds one through ``sessionref mcp --amp-root`` and references it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core import SessionQueryError, project_conversation
from core.sessions.sources.amp import AmpSource, amp_root
from tests.test_agents_real import check_search

THREAD = "T-019b9d03-62e3-772f-9780-3e637f90eaec"


def thread(root: Path, messages: Any, name: str = THREAD, **more: Any) -> Path:
    path = root / "threads" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    env = {"initial": {"trees": [{"displayName": "my app", "uri": "file:///work/my%20app"}],
                       "platform": {"os": "linux", "client": "CLI"}}}  # fmt: skip
    document = {"v": 1, "id": name, "title": "Wombat facts", "agentMode": "smart", "created": 1_767_865_803_494,
                "env": env, "messages": messages, **more}  # fmt: skip
    path.write_text(json.dumps(document))
    return path


def said(role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "messageId": 0, "content": list(blocks), "state": {"type": "complete"}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def test_amp_threads_are_read(tmp_path: Path) -> None:
    root = tmp_path / "amp"
    thread(
        root,
        [
            said("user", text("first question about wombats")),
            said("assistant", {"type": "thinking", "thinking": "hmm"}, text("an answer"),
                 {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"cmd": "ls"}}),
            said("user", {"type": "tool_result", "toolUseID": "t1", "content": "SECRET-TOOL-OUTPUT"}),
            said("assistant", text("after the tool")),
            "odd",
        ],
    )  # fmt: skip
    source = AmpSource(root)
    (record,) = source.listing()
    assert record.header.id == f"amp:{THREAD}" and record.header.cwd == "/work/my app"
    assert record.header.created_at == 1_767_865_803_494
    texts = [item.text for item in project_conversation(source.surface(record.header.id))]
    assert texts == ["first question about wombats", "an answer", "after the tool"]
    assert source.title(record.header.id).title == "Wombat facts"  # type: ignore[union-attr]
    check_search("--amp-root", root, "wombats", record.header.id, tmp_path)


def test_odd_threads_other_files_and_links_are_read_around(tmp_path: Path) -> None:
    root = tmp_path / "amp"
    thread(root, {"not": "a list"}, name="T-odd", title=5, env="x", created="noon")
    (root / "threads" / "notes.json").write_text("{}")
    outside = thread(tmp_path / "outside", [said("user", text("SECRET"))], name="T-outside")
    (root / "threads" / "T-linked.json").symlink_to(outside)
    source = AmpSource(root)
    (record,) = source.listing()
    assert record.header.id == "amp:T-odd" and record.header.cwd is None
    with pytest.raises(SessionQueryError):
        source.surface("amp:T-odd")


def test_amp_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    assert amp_root() == tmp_path / "d" / "amp"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert amp_root() == tmp_path / ".local" / "share" / "amp"
