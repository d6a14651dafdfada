"""Aider (``aider-chat``, pinned in ``tests/interop/python/aider.txt``, in its own virtualenv), run
offline against a local stub of an OpenAI-compatible API: a plain chat, ``/run ls``, restored chats
with hostile text, and a second chat. sessionref reads the project's ``.aider.chat.history.md``
(found in a folder another session ran in), lists each conversation with its folder, finds one by a
word through ``sessionref mcp --aider-root`` and references it. Then the Markdown's corners, in files
shaped as aider writes them (``aider/io.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core import MemorySessionStore, project_conversation
from core.sessions.sources.aider import HISTORY_NAME, AiderSource
from core.sessions.sources.merged import MergedSessionQuery
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
)

AIDER = INTEROP / "python" / ".venv-aider" / "bin" / "aider"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_aider = pytest.mark.skipif(_OPTIONAL and not AIDER.exists(), reason="Aider is not installed (make agents)")


def aider(home: Path, work: Path, port: int, *arguments: str) -> str:
    """Aider on the stub: its model's metadata given (else it fetches prices at start), nothing
    checked for, no git."""
    metadata = home / "model-metadata.json"
    if not metadata.exists():
        model = {"max_tokens": 4096, "max_input_tokens": 128000, "max_output_tokens": 4096, "mode": "chat",
                 "litellm_provider": "openai", "input_cost_per_token": 0, "output_cost_per_token": 0}  # fmt: skip
        metadata.write_text(json.dumps({"openai/stub-model": model}))
    environment = {
        **base_environment(home),
        "OPENAI_API_KEY": "stub",
        "OPENAI_API_BASE": f"http://127.0.0.1:{port}/v1",
    }
    flags = ["--model", "openai/stub-model", "--model-metadata-file", str(metadata), "--yes-always",
             "--no-check-update", "--analytics-disable", "--no-auto-commits", "--no-git", "--no-show-model-warnings",
             "--no-pretty"]  # fmt: skip
    return run([str(AIDER), *flags, *arguments], work, environment)


@needs_aider
def test_aider_chats_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, _script):
        aider(home, work, port, "--message", "AI-MARK-1 hello, what is a wombat?")
        aider(home, work, port, "--restore-chat-history", "--message", "AI-MARK-2 please USE A TOOL to list the files")
        aider(home, work, port, "--restore-chat-history", "--message", "/run ls")
        aider(home, work, port, "--restore-chat-history", "--message", f"AI-MARK-3 resumed. {HOSTILE}")
        aider(home, work, port, "--message", "a second session about quokkas")
    written = (work / HISTORY_NAME).read_text()
    assert "SECRET-TOOL-OUTPUT" not in written  # (/run's output goes to the model, not to the file)
    # Found in the folder another session ran in (the projects folder is elsewhere).
    source = AiderSource(tmp_path / "no-projects-here")
    store = MemorySessionStore()
    store.create("elsewhere", cwd=str(work))
    records = MergedSessionQuery(store, [source])
    import asyncio

    listed = asyncio.run(records.list_sessions())
    assert len(listed) == 3
    ids = check_sessions(source, "AI", work)
    assert len(ids) == 2
    (quokka,) = [i for i in ids if source.title(i) is not None and "quokkas" in source.title(i).title]  # type: ignore[union-attr]
    # sessionref mcp reads the projects folder it is given: the work folder's parent.
    check_search("--aider-root", work.parent, "quokkas", quokka, tmp_path)


# -- the Markdown's corners --------------------------------------------------------------------------


def _history(folder: Path, *runs: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / HISTORY_NAME
    path.write_text("".join(runs))
    return path


def _run(started: str, *lines: str, restore: bool = False) -> str:
    notices = "> aider --model x" + (" --restore-chat-history" if restore else "") + "  \n> Aider v0.86.2  \n"
    return f"\n# aider chat started at {started}\n\n{notices}" + "".join(lines)


def _prompt(*lines: str) -> str:
    return "\n" + "  \n".join(f"#### {line}" for line in lines) + "  \n"


def _reply(text: str) -> str:
    return "\n" + text.strip() + "\n\n"


def _said(source: AiderSource) -> list[list[str]]:
    return [[item.text for item in project_conversation(source.surface(r.header.id))] for r in source.listing()]


def test_a_reply_s_own_headings_and_quotes_stay_in_the_reply(tmp_path: Path) -> None:
    # aider ends each of its own lines with two spaces; the model's "#### " heading and "> " quote do not.
    reply = "Here is the plan.\n\n#### Step one\n> quoted, by the model\nDone."
    _history(tmp_path / "app", _run("2026-12-06 10:00:00", _prompt("plan it", "in two steps"), _reply(reply),
                                    "> Tokens: 5 sent, 3 received.  \n"))  # fmt: skip
    assert _said(AiderSource(tmp_path)) == [["plan it\nin two steps", reply]]


def test_restored_runs_continue_a_session_and_the_others_start_one(tmp_path: Path) -> None:
    restored_by_config = _run("2026-12-06 10:02:00", "> Restored previous conversation history.  \n",
                              _prompt("third"), _reply("three"))  # fmt: skip
    _history(
        tmp_path / "app",
        _run("2026-12-06 10:00:00", _prompt("first"), _reply("one")),
        _run("2026-12-06 10:01:00", _prompt("second"), _reply("two"), restore=True),
        restored_by_config,
        _run(
            "2026-12-06 10:03:00", _prompt("<blank>"), _prompt("/run ls"), "> Added 1 line of output to the chat.  \n"
        ),
    )
    source = AiderSource(tmp_path)
    assert sorted(_said(source)) == [["/run ls"], ["first", "one", "second", "two", "third", "three"]]
    assert {source.title(r.header.id).title for r in source.listing()} == {"first", "/run ls"}  # type: ignore[union-attr]
    assert all(r.header.cwd == str(tmp_path / "app") for r in source.listing())


def test_a_growing_file_is_read_past_what_was_read_and_reads_as_a_whole_one(tmp_path: Path) -> None:
    path = _history(tmp_path / "app", _run("2026-12-06 10:00:00", _prompt("first"), _reply("one")))
    source = AiderSource(tmp_path)
    first = source.listing()
    revision = source.revision(first[0].header.id)
    with open(path, "a") as handle:
        handle.write(_prompt("more") + _reply("again") + _run("2026-12-06 11:00:00", _prompt("new"), _reply("x")))
        handle.write("#### half a line still being writ")
    grown = source.listing()
    whole = AiderSource(tmp_path)
    assert [r.header for r in grown] == [r.header for r in whole.listing()] and len(grown) == 2
    assert _said(source) == _said(whole) == [["new", "x"], ["first", "one", "more", "again"]]
    assert source.revision(first[0].header.id) != revision  # (its range grew)
    path.write_text(_run("2026-12-06 12:00:00", _prompt("replaced"), _reply("y")))  # a new file: read whole
    assert _said(source) == [["replaced", "y"]]


def test_an_endless_line_and_odd_bytes_cost_nothing_and_no_link_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    path = _history(root / "app", _run("2026-12-06 10:00:00", _prompt("before"), _reply("one")))
    with open(path, "ab") as handle:
        handle.write(b"\x00" * (20 * 1024 * 1024) + b"\n" + b"\xff\xfe broken utf-8\n")
        handle.write(_prompt("after").encode() + _reply("two").encode())
    outside = _history(tmp_path / "elsewhere", _run("2026-12-06 10:00:00", _prompt("outside"), _reply("no")))
    (root / "linked").mkdir()
    (root / "linked" / HISTORY_NAME).symlink_to(outside)
    (root / "folder-link").symlink_to(outside.parent, target_is_directory=True)
    source = AiderSource(root)
    said = _said(source)
    # (the endless line is skipped, read past in pieces; bytes that are not UTF-8 read as U+FFFD)
    assert said == [["before", "one\n\n\ufffd\ufffd broken utf-8", "after", "two"]]
    assert [problem.path.parent.name for problem in source.problems] == ["linked"]
