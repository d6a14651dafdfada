"""gptme (``gptme``, pinned in ``tests/interop/python/gptme.txt``, in its own virtualenv), run offline
against a local stub of an OpenAI-compatible API (``OPENAI_BASE_URL``, a ``local/`` model): a plain
chat, a resumed turn calling its ``shell`` tool, a resumed turn with hostile text, and a second
conversation. sessionref lists what it wrote with its folder, finds it by a word through
``sessionref mcp --gptme-root`` and references it. Then the log folder's corners, in files as gptme
writes them: the nudges of its autonomous mode, tool calls in its ``tool`` format, an older
conversation's ``workspace`` link, odd side files, links out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.files import local_millis
from core.sessions.sources.gptme import GptmeSource, gptme_root, without_tool_calls
from tests.support.rc8 import INTEROP
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

GPTME = INTEROP / "python" / ".venv-gptme" / "bin" / "gptme"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_gptme = pytest.mark.skipif(_OPTIONAL and not GPTME.exists(), reason="gptme is not installed (make agents)")


def gptme(home: Path, work: Path, port: int, *arguments: str) -> str:
    environment = {
        **base_environment(home),
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "stub",
        "GPTME_TIKTOKEN_TIMEOUT": "0",  # (else each count waits for a download that cannot happen here)
    }
    return run([str(GPTME), "-n", "--model", "local/stub-model", *arguments], work, environment)


def _texts(source: GptmeSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_gptme
def test_gptme_conversations_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    logs = home / ".local" / "share" / "gptme" / "logs"
    with stub(_OpenAI) as (port, script):
        gptme(home, work, port, "GP-MARK-1 hello, what is a wombat?")
        (name,) = [folder.name for folder in logs.iterdir()]
        gptme(home, work, port, "--name", name, "GP-MARK-2 please USE A TOOL to list the files")
        gptme(home, work, port, "--name", name, f"GP-MARK-3 resumed. {HOSTILE}")
        gptme(home, work, port, "a second conversation about quokkas")
    assert tool_turn_made(script)
    source = GptmeSource(logs)
    ids = check_sessions(source, "GP", work)
    assert len(ids) == 2 and f"gptme:{name}" in ids
    said = _texts(source, f"gptme:{name}")
    assert not any("<system>" in text or "@shell" in text for text in said), said
    (quokka,) = [i for i in ids if "quokkas" in _texts(source, i)[0]]
    check_search("--gptme-root", logs, "quokkas", quokka, tmp_path)


# -- the log folder's corners ----------------------------------------------------------------------------

NAME = "2026-12-07-sprinting-blue-squid"


def _conversation(logs: Path, records: list[Any], *, name: str = NAME, config: str | None = None) -> Path:
    folder = logs / name
    folder.mkdir(parents=True)
    (folder / "conversation.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    if config is not None:
        (folder / "config.toml").write_text(config)
    return folder


def _said(role: str, content: Any, time: str = "2026-12-07T19:04:46.842705", **more: Any) -> dict[str, Any]:
    return {"role": role, "content": content, "timestamp": time, **more}


CONFIG = '[chat]\nmodel = "local/stub-model"\nworkspace = "/work/gp"\nname = "Wombat facts"\n\n[env]\n'


def test_what_gptme_logged_is_read_as_its_conversation(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _conversation(
        logs,
        [
            _said("system", "You are gptme v0.35.1", "2026-12-07T19:04:49.03", pinned=True, hide=True),
            _said("user", "first question"),
            _said("assistant", 'Let me look.\n@shell(call_1): {"command": "ls"}', "2026-12-07T19:04:50.6"),
            _said("system", "Ran allowlisted command: `ls`\n\nSECRET-TOOL-OUTPUT\n", call_id="call_1"),
            _said("assistant", "an answer", "2026-12-07T19:04:51.0"),
            _said("user", "<system>No tool call detected in last message. Did you mean to finish?</system>"),
            _said("assistant", '@shell(call_2): {"command": "echo {}"}'),
            "not a message",
            {"role": "user", "content": ["not text"]},
            _said("user", "second question", "2026-12-07T19:05:12.467383"),
            _said("assistant", "second answer", "not a time"),
        ],
        config=CONFIG,
    )
    source = GptmeSource(logs)
    (record,) = source.listing()
    assert record.header.id == f"gptme:{NAME}" and record.header.cwd == "/work/gp"
    assert record.header.created_at == local_millis("2026-12-07T19:04:49.03")
    assert _texts(source, record.header.id) == [
        "first question",
        "Let me look.",
        "an answer",
        "second question",
        "second answer",
    ]
    events = source.surface(record.header.id).events
    assert events[-1].time == events[-2].time == local_millis("2026-12-07T19:05:12.467383")
    assert source.title(record.header.id).title == "Wombat facts"  # type: ignore[union-attr]


def test_tool_calls_are_cut_from_an_answer_as_gptme_parses_them() -> None:
    assert without_tool_calls('Sure.\n@shell(call_1): {"command": "ls {x}"}\nDone.') == "Sure.\n\nDone."
    assert without_tool_calls('@save(c-2): {\n  "path": "a.py",\n  "content": "x = {}"\n}') == ""
    assert without_tool_calls("@shell(call_1): {not json\nkept") == "kept"
    assert without_tool_calls("mail me @ home (not a call): {x}") == "mail me @ home (not a call): {x}"


def test_an_older_conversation_s_workspace_link_is_read_as_text_never_followed(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    project = tmp_path / "project"
    project.mkdir()
    folder = _conversation(logs, [_said("user", "first question"), _said("assistant", "an answer")])
    (folder / "workspace").symlink_to(project)
    other = _conversation(logs, [_said("user", "odd config")], name="2026-12-06-odd", config="[chat\nname = 5")
    (other / "workspace").symlink_to("relative/path")
    source = GptmeSource(logs)
    listed = {record.header.id: record.header for record in source.listing()}
    assert listed[f"gptme:{NAME}"].cwd == str(project)
    assert listed["gptme:2026-12-06-odd"].cwd is None
    assert source.title("gptme:2026-12-06-odd").title == "odd config"  # type: ignore[union-attr]


def test_links_out_of_the_log_folder_are_not_read(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    outside = tmp_path / "outside"
    _conversation(outside, [_said("user", "SECRET-OUTSIDE")], name="elsewhere")
    logs.mkdir()
    (logs / "linked").symlink_to(outside / "elsewhere")
    folder = _conversation(logs, [_said("user", "first question")])
    (folder / "conversation.jsonl").unlink()
    (folder / "conversation.jsonl").symlink_to(outside / "elsewhere" / "conversation.jsonl")
    assert GptmeSource(logs).listing() == []


def test_gptme_s_log_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPTME_LOGS_HOME", str(tmp_path / "logs"))
    assert gptme_root() == tmp_path / "logs"
    monkeypatch.delenv("GPTME_LOGS_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert gptme_root() == tmp_path / "data" / "gptme" / "logs"
    monkeypatch.setenv("XDG_DATA_HOME", " ")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert gptme_root() == tmp_path / ".local" / "share" / "gptme" / "logs"
