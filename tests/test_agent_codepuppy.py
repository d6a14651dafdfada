"""Code Puppy (``code-puppy``, pinned in ``tests/interop/python/codepuppy.txt``, in its own virtualenv),
run offline against a local stub of an OpenAI-compatible API (``extra_models.json``'s ``custom_openai``
model): a plain chat, a resumed turn (``-r``) calling its ``list_files`` tool, a resumed turn with
hostile text, and a second session. sessionref lists what it autosaved with its folder, finds it by a
word through ``sessionref mcp --codepuppy-root`` and references it. Then the files' corners, in
documents shaped as Code Puppy writes them: a compaction's summary, its own notes, odd parts, an
older pickle, links out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core import SessionQueryError, project_conversation
from core.sessions.sources.code_puppy import CodePuppySource, code_puppy_root
from core.sessions.sources.files import local_millis
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

CODE_PUPPY = INTEROP / "python" / ".venv-codepuppy" / "bin" / "code-puppy"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_code_puppy = pytest.mark.skipif(
    _OPTIONAL and not CODE_PUPPY.exists(), reason="Code Puppy is not installed (make agents)"
)


def code_puppy(home: Path, work: Path, port: int, *arguments: str, settings: str = "") -> str:
    environment = base_environment(home)
    config = Path(environment["XDG_CONFIG_HOME"]) / "code_puppy" / "puppy.cfg"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "[puppy]\npuppy_name = Rex\nowner_name = Tester\nmodel = stub\nauto_save_session = true\n" + settings
    )
    models = Path(environment["XDG_DATA_HOME"]) / "code_puppy" / "extra_models.json"
    models.parent.mkdir(parents=True, exist_ok=True)
    endpoint = {"url": f"http://127.0.0.1:{port}/v1", "api_key": "stub"}
    models.write_text(
        json.dumps({"stub": {"type": "custom_openai", "name": "stub-model", "custom_endpoint": endpoint}})
    )
    return run([str(CODE_PUPPY), "-m", "stub", "--yolo", "true", *arguments], work, environment)


def _texts(source: CodePuppySource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_code_puppy
def test_code_puppy_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    folder = home / ".cache" / "code_puppy"
    with stub(_OpenAI) as (port, script):
        code_puppy(home, work, port, "-p", "PU-MARK-1 hello, what is a wombat?")
        (saved,) = [path.name[: -len(".json")] for path in (folder / "autosaves").glob("auto_session_*[0-9].json")]
        code_puppy(home, work, port, "-r", saved, "-p", "PU-MARK-2 please USE A TOOL to list the files")
        code_puppy(home, work, port, "-r", saved, "-p", f"PU-MARK-3 resumed. {HOSTILE}")
        code_puppy(home, work, port, "-p", "a second session about quokkas")
    assert tool_turn_made(script)
    source = CodePuppySource(folder)
    ids = check_sessions(source, "PU", work)
    assert len(ids) == 2 and f"codepuppy:{saved}" in ids
    (quokka,) = [i for i in ids if "quokkas" in _texts(source, i)[0]]
    check_search("--codepuppy-root", folder, "quokkas", quokka, tmp_path)


# -- the files' corners --------------------------------------------------------------------------------------

NAME = "auto_session_20261207_192503_074359_31347"


def _part(kind: str, content: Any, time: str = "2026-12-07T19:25:03.467130Z", **more: Any) -> dict[str, Any]:
    return {"part_kind": kind, "content": content, "timestamp": time, **more}


def _session(root: Path, messages: Any, *, name: str = NAME, folder: str = "autosaves", **meta: Any) -> Path:
    path = root / folder / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"format": 2, "code_puppy": "0.0.946", "encoding": "pydantic-ai-messages", "messages": messages}
    path.write_text(json.dumps(document))
    about = {"session_name": name, "timestamp": "2026-12-07T19:25:03.517623", "scope_key": "/work/pu", **meta}
    (path.parent / f"{name}_meta.json").write_text(json.dumps(about))
    return path


def test_what_code_puppy_saved_is_read_as_its_agent_s_history(tmp_path: Path) -> None:
    root = tmp_path / ".code_puppy"
    _session(
        root,
        [
            {"kind": "request",
             "parts": [_part("system-prompt", "You are Rex"), _part("user-prompt", "first question")]},
            {"kind": "response", "parts": [_part("thinking", "hmm"), _part("text", "an answer"),
                                           {"part_kind": "tool-call", "tool_name": "list_files", "args": {}}]},
            {"kind": "request", "parts": [_part("tool-return", "SECRET-TOOL-OUTPUT", tool_name="list_files")]},
            {"kind": "response", "parts": [_part("text", "after the tool")]},
            {"kind": "request", "parts": [_part("user-prompt", "[system note] The sub-agent was interrupted.")]},
            {"kind": "request", "parts": [_part("user-prompt", ["second question", {"kind": "image-url"}],
                                                "2026-12-07T19:26:00Z")]},
            "not a message",
            {"kind": "response", "parts": ["not a part", _part("text", "second answer", "noon")]},
        ],
    )  # fmt: skip
    source = CodePuppySource(root)
    (record,) = source.listing()
    assert record.header.id == f"codepuppy:{NAME}" and record.header.cwd == "/work/pu"
    assert record.header.created_at == local_millis("2026-12-07T19:25:03.517623")
    assert _texts(source, record.header.id) == [
        "first question",
        "an answer",
        "after the tool",
        "second question",
        "second answer",
    ]
    assert source.title(record.header.id).title == "first question"  # type: ignore[union-attr]


def test_a_compaction_s_summary_is_a_checkpoint_and_a_saved_session_is_listed(tmp_path: Path) -> None:
    root = tmp_path / ".code_puppy"
    summary = "Summary of previous conversation:\n\nThey asked about wombats."
    _session(
        root,
        [
            {"kind": "request", "parts": [_part("system-prompt", summary), _part("user-prompt", "next question")]},
            {"kind": "response", "parts": [_part("text", "next answer")]},
        ],
        name="named-session",
        folder="contexts",
    )
    source = CodePuppySource(root)
    (record,) = source.listing()
    snapshot = source.surface(record.header.id)
    assert snapshot.events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    assert _texts(source, record.header.id) == [summary, "next question", "next answer"]


def test_odd_documents_an_older_pickle_and_links_out_are_read_around(tmp_path: Path) -> None:
    root = tmp_path / ".code_puppy"
    _session(root, {"not": "a list"}, name="odd")
    (root / "autosaves" / "odd_meta.json").write_text('{"timestamp": 5, "scope_key": "relative"}')
    (root / "autosaves" / "older.pkl").write_bytes(b"\x80\x04K\x01.")
    outside = tmp_path / "outside"
    _session(outside, [{"kind": "request", "parts": [_part("user-prompt", "SECRET")]}], name="elsewhere")
    (root / "autosaves" / "linked.json").symlink_to(outside / "autosaves" / "elsewhere.json")
    (root / "contexts").symlink_to(outside / "autosaves")
    source = CodePuppySource(root)
    (record,) = source.listing()
    assert record.header.id == "codepuppy:odd" and record.header.cwd is None
    with pytest.raises(SessionQueryError) as refused:
        source.surface("codepuppy:odd")
    assert refused.value.code == "SESSION_QUERY_INVALID_SURFACE"


def test_code_puppy_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert code_puppy_root() == tmp_path / "cache" / "code_puppy"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert code_puppy_root() == tmp_path / ".code_puppy"


@needs_code_puppy
def test_code_puppy_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    # A server Code Puppy knows reaches an agent only when bound to it: both files, as docs/mcp.md says.
    import re

    from tests.test_agents_real import REPO, _said, docs_block, offered_tools, sessionref_on_path, tool_messages
    from tests.test_mcp import snapshot

    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    config = Path(base_environment(home)["XDG_CONFIG_HOME"]) / "code_puppy"
    config.mkdir(parents=True, exist_ok=True)
    (config / "mcp_servers.json").write_text(json.dumps(docs_block('"mcp_servers"')))
    (config / "mcp_agent_bindings.json").write_text(json.dumps(docs_block('"bindings"')))
    with stub(_OpenAI) as (port, script), pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", path)
        limit = re.search(r"^tool_output_limit_chars = \d+$", (REPO / "docs" / "mcp.md").read_text(), re.M)
        assert limit is not None  # docs/mcp.md's line, as written: a whole snapshot, not a handle to it
        code_puppy(home, work, port, "-p", "PU-MARK-9 REFERENCE DESIGN please", settings=limit.group(0) + "\n")
    offered = offered_tools(script)
    assert any(name.endswith("reference_session") for name in offered), sorted(set(offered))
    results = [_said(message.get("content")) for message in tool_messages(script)]
    assert any(snapshot(root) in result for result in results), [(len(r), r[:200]) for r in results]
