"""Kimi CLI (``kimi-cli``, pinned in ``tests/interop/python/kimi.txt``, in its own virtualenv on Python
3.13), run offline against a local stub of an OpenAI-compatible API (``config.toml``'s provider of type
``openai_legacy``): a plain chat, a resumed turn calling its ``Glob`` tool, a resumed turn with hostile
text, a second session, then its own ``/compact``. sessionref lists what it wrote with its folder, finds
it by a word through ``sessionref mcp --kimi-root`` and references it. Then the folder's corners, in
files as Kimi CLI writes them: an older session's ``<uuid>.jsonl``, a folder ``kimi.json`` does not name,
injected parts, an archived session, odd side files, links out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.kimi_cli import KimiCliSource, folder_key, kimi_root
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

KIMI = INTEROP / "python" / ".venv-kimi" / "bin" / "kimi"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_kimi = pytest.mark.skipif(_OPTIONAL and not KIMI.exists(), reason="Kimi CLI is not installed (make agents)")


def kimi_config(home: Path, port: int) -> None:
    config = home / ".kimi" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        'default_model = "stub"\n\n[providers.stub]\ntype = "openai_legacy"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\napi_key = "stub"\n\n'
        '[models.stub]\nprovider = "stub"\nmodel = "stub-model"\nmax_context_size = 100000\n'
    )


def kimi(home: Path, work: Path, *arguments: str) -> str:
    return run([str(KIMI), "--print", *arguments], work, base_environment(home))


def _texts(source: KimiCliSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_kimi
def test_kimi_cli_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        kimi_config(home, port)
        kimi(home, work, "-p", "KI-MARK-1 hello, what is a wombat?")
        kimi(home, work, "-C", "-p", "KI-MARK-2 please USE A TOOL to list the files")
        kimi(home, work, "-C", "-p", f"KI-MARK-3 resumed. {HOSTILE}")
        kimi(home, work, "-p", "a second session about quokkas")
    assert tool_turn_made(script)
    folder = home / ".kimi"
    source = KimiCliSource(folder)
    ids = check_sessions(source, "KI", work)
    assert len(ids) == 2
    (quokka,) = [i for i in ids if "quokkas" in _texts(source, i)[0]]
    assert source.title(quokka).title == "a second session about quokkas"  # type: ignore[union-attr]
    check_search("--kimi-root", folder, "quokkas", quokka, tmp_path)


@needs_kimi
def test_kimi_cli_s_own_compaction_is_a_checkpoint(tmp_path: Path) -> None:
    # /compact keeps the last two messages and puts the model's summary (the stub's "ANSWER" line)
    # before them; the file before it is rotated to context_1.jsonl, never listed.
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, _script):
        kimi_config(home, port)
        kimi(home, work, "-p", "KI-MARK-1 a first turn")
        kimi(home, work, "-C", "-p", "KI-MARK-2 a second turn")
        kimi(home, work, "-C", "-p", "/compact")
        kimi(home, work, "-C", "-p", "KI-MARK-3 after the compaction")
    source = KimiCliSource(home / ".kimi")
    (record,) = source.listing()
    snapshot = source.surface(record.header.id)
    assert snapshot.events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    said = _texts(source, record.header.id)
    assert said[1:] == [
        "KI-MARK-2 a second turn",
        "ANSWER KI-MARK-2",
        "KI-MARK-3 after the compaction",
        "ANSWER KI-MARK-3",
    ]
    assert list((home / ".kimi" / "sessions").glob("*/*/context_1.jsonl"))
    times = [event.time for event in snapshot.events]
    assert times == sorted(times) and times[-1] > record.header.created_at


# -- the folder's corners --------------------------------------------------------------------------------

WORK = "/work/ki"
SESSION = "670e1f60-b474-486a-8daf-417182b7ba0f"


def _session(root: Path, records: list[dict[str, Any]], *, name: str = SESSION, cwd: str = WORK, **state: Any) -> Path:
    folder = root / "sessions" / folder_key(cwd) / name
    folder.mkdir(parents=True)
    (folder / "context.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    (folder / "state.json").write_text(json.dumps({"version": 1, "custom_title": None, "archived": False, **state}))
    turns = [
        r["content"]
        for r in records
        if isinstance(r, dict) and r.get("role") == "user" and isinstance(r.get("content"), str)
    ]
    wire = [{"type": "metadata", "protocol_version": "1.10"}] + [
        {"timestamp": 1_796_670_044.19 + n, "message": {"type": "TurnBegin", "payload": {"user_input": said}}}
        for n, said in enumerate(turns)
    ]
    (folder / "wire.jsonl").write_text("".join(json.dumps(record) + "\n" for record in wire))
    index = root / "kimi.json"
    known = json.loads(index.read_text())["work_dirs"] if index.exists() else []
    known.append({"path": cwd, "kaos": "local", "last_session_id": name})
    index.write_text(json.dumps({"work_dirs": known}))
    return folder


def _said(role: str, content: Any) -> dict[str, Any]:
    return {"role": role, "content": content}


def test_what_kimi_cli_restores_as_its_model_s_context_is_read(tmp_path: Path) -> None:
    root = tmp_path / ".kimi"
    _session(
        root,
        [
            {"role": "_system_prompt", "content": "You are Kimi Code CLI"},
            {"role": "_checkpoint", "id": 0},
            _said("user", "first question"),
            {"role": "_usage", "token_count": 5},
            _said("assistant", [{"type": "think", "think": "hmm"}, {"type": "text", "text": "an answer"}]),
            _said("user", [{"type": "text", "text": "<system>CHECKPOINT 1</system>"}]),
            _said("user", [{"type": "text", "text": "<system-reminder>\nplan mode\n</system-reminder>"}]),
            {"role": "assistant", "content": [], "tool_calls": [{"type": "function", "id": "c1"}]},
            {"role": "tool", "content": [{"type": "text", "text": "SECRET-TOOL-OUTPUT"}], "tool_call_id": "c1"},
            _said("assistant", "after the tool"),
            "not a record",
            {"content": "no role"},
            _said("user", "second question"),
            _said("assistant", "second answer"),
        ],
    )
    source = KimiCliSource(root)
    (record,) = source.listing()
    assert record.header.id == f"kimi:{SESSION}" and record.header.cwd == WORK
    assert record.header.created_at == 1_796_670_044_190
    assert _texts(source, record.header.id) == [
        "first question",
        "an answer",
        "after the tool",
        "second question",
        "second answer",
    ]
    events = source.surface(record.header.id).events
    assert events[-2].time == 1_796_670_045_190  # the second TurnBegin
    assert source.title(record.header.id).title == "first question"  # type: ignore[union-attr]


def test_an_older_session_file_a_folder_kimi_json_does_not_name_and_an_archived_session(tmp_path: Path) -> None:
    root = tmp_path / ".kimi"
    _session(root, [_said("user", "kept"), _said("assistant", "yes")], custom_title="Named by the user")
    _session(root, [_said("user", "archived one")], name="a-archived", archived=True)
    older = root / "sessions" / folder_key("/elsewhere") / "0b9e.jsonl"
    older.parent.mkdir(parents=True)
    older.write_text(json.dumps(_said("user", "an older layout")) + "\n")
    source = KimiCliSource(root)
    listed = {record.header.id: record.header for record in source.listing()}
    assert set(listed) == {f"kimi:{SESSION}", "kimi:0b9e"} and source.problems == []  # (archived: not a problem)
    assert listed["kimi:0b9e"].cwd is None  # (kimi.json does not name its folder)
    assert _texts(source, "kimi:0b9e") == ["an older layout"]
    assert source.title(f"kimi:{SESSION}").title == "Named by the user"  # type: ignore[union-attr]


def test_odd_side_files_and_links_out_are_read_around(tmp_path: Path) -> None:
    root = tmp_path / ".kimi"
    folder = _session(root, [_said("user", "first question"), _said("assistant", "an answer")])
    (root / "kimi.json").write_text('{"work_dirs": [{"path": 5}, "x", {"path": "/a", "kaos": []}]')
    (folder / "state.json").write_text('{"custom_title": ["no"], "archived": "yes"}')
    (folder / "wire.jsonl").write_text(
        '{"timestamp": 1e30, "message": {"type": "TurnBegin", "payload": {"user_input": "first question"}}}\n'
        '{"timestamp": "noon", "message": {"type": "TurnBegin"}}\n[]\n'
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "context.jsonl").write_text(json.dumps(_said("user", "SECRET-OUTSIDE")) + "\n")
    (root / "sessions" / folder_key(WORK) / "linked").symlink_to(outside)
    (root / "sessions" / "linked-group").symlink_to(outside.parent)
    source = KimiCliSource(root)
    (record,) = source.listing()
    assert record.header.cwd is None  # kimi.json is not JSON
    assert _texts(source, record.header.id) == ["first question", "an answer"]
    assert source.title(record.header.id).title == "first question"  # type: ignore[union-attr]


def test_kimi_cli_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "share"))
    assert kimi_root() == tmp_path / "share"
    monkeypatch.delenv("KIMI_SHARE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert kimi_root() == tmp_path / ".kimi"
    # Kimi CLI's own key of a folder: the MD5 of its path (a remote one's prefixed by its kind).
    assert folder_key("/tmp/try/kimi/work") == "242b3699ae0507c2896ba1b396aa2619"
    assert folder_key("/w", "ssh") == "ssh_" + folder_key("/w")


@needs_kimi
def test_sessionref_resume_opens_a_kimi_cli_session_in_kimi_cli(tmp_path: Path) -> None:
    # `sessionref resume` starts `kimi -r <id>` in the session's folder; what follows `--` makes it
    # headless here. Kimi CLI finds a session by its folder: started elsewhere, it would not.
    import subprocess
    import sys

    from tests.test_resume import REPO

    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, _script):
        kimi_config(home, port)
        kimi(home, work, "-p", "KI-MARK-1 hello, what is a wombat?")
        (record,) = KimiCliSource(home / ".kimi").listing()
        environment = {
            **base_environment(home),
            "PATH": f"{KIMI.parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(REPO),
        }
        command = [sys.executable, "-m", "tui.cli", "resume", record.header.id, "--kimi-root", str(home / ".kimi")]
        done = subprocess.run(
            [*command, "--", "--print", "-p", "KI-MARK-2 resumed by sessionref"],
            cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
    (again,) = KimiCliSource(home / ".kimi").listing()
    assert again.header.id == record.header.id
    assert _texts(KimiCliSource(home / ".kimi"), record.header.id)[-2:] == [
        "KI-MARK-2 resumed by sessionref",
        "ANSWER KI-MARK-2",
    ]


@needs_kimi
def test_kimi_cli_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    from tests.test_agents_real import _said, docs_command, offered_tools, sessionref_on_path, tool_messages
    from tests.test_mcp import snapshot

    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    environment = {**base_environment(home), "PATH": path}
    with stub(_OpenAI) as (port, script):
        kimi_config(home, port)
        run([str(KIMI), *docs_command("kimi")], work, environment)  # docs/mcp.md's line, as written
        run([str(KIMI), "--print", "-p", "REFERENCE DESIGN please"], work, environment)
    offered = offered_tools(script)
    assert any(name.endswith("reference_session") for name in offered), offered
    results = [_said(message.get("content")) for message in tool_messages(script)]
    assert any(snapshot(root) in result for result in results), [result[:300] for result in results]
