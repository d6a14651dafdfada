"""Open Interpreter (``open-interpreter``, pinned in ``tests/interop/python/heavy/interpreter.txt``): about
560 MB, so only ``make agents-heavy`` installs it, and its real run below runs where it is installed. It
runs offline against a local stub of an OpenAI-compatible API (``--api_base``), its prompts typed on its
standard input: a chat of two prompts and hostile text. No tool turn: given a shell block to run
(``-y``), its code runner never returned here, and nothing more was saved. It cannot resume a
conversation but from its interactive picker (``--conversations``). What such a run
wrote with 0.4.3 on 2026-12-07 is kept in ``tests/data/open-interpreter/0.4.3`` and read by every run:
sessionref lists it, references it and finds it through ``sessionref mcp --interpreter-root``."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from core import SessionQueryError, project_conversation
from core.sessions.sources.open_interpreter import OpenInterpreterSource, open_interpreter_root, started
from tests.support.rc8 import INTEROP
from tests.test_agents_real import HOSTILE, _OpenAI, base_environment, check_search, check_sessions, stub

INTERPRETER = INTEROP / "python" / ".venv-interpreter" / "bin" / "interpreter"
KEPT = Path(__file__).resolve().parent / "data" / "open-interpreter" / "0.4.3"
needs_interpreter = pytest.mark.skipif(
    not INTERPRETER.exists(), reason="Open Interpreter is not installed (make agents-heavy; its files are kept)"
)


def interpreter(home: Path, work: Path, port: int, prompts: list[tuple[str, str]]) -> None:
    """Run it and type each prompt once the one before is answered (``(prompt, what its saved
    conversation then holds)``): typed at once, a prompt cuts the answer to the one before short."""
    command = [str(INTERPRETER), "--api_base", f"http://127.0.0.1:{port}/v1", "--api_key", "stub",
               "--model", "openai/stub-model", "-y", "--context_window", "100000", "--max_tokens", "1000"]  # fmt: skip
    environment = {**base_environment(home), "TERM": "dumb"}
    conversations = home / ".config" / "open-interpreter" / "conversations"
    process = subprocess.Popen(
        command, cwd=work, env=environment, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stdin is not None
    try:
        for prompt, saved in prompts:
            process.stdin.write(prompt + "\n")
            process.stdin.flush()
            end = time.monotonic() + 120
            while not any(saved in path.read_text() for path in conversations.glob("*.json")):
                assert time.monotonic() < end and process.poll() is None, f"{saved!r} never saved"
                time.sleep(0.3)
        # (it ends asking whether it helped, on the closed input: an EOFError, once all is saved)
        process.stdin.close()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()


@needs_interpreter
def test_open_interpreter_conversations_from_the_real_tool(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "SECRET-TOOL-OUTPUT.txt").write_text("a file whose name only a tool's output shows\n")
    with stub(_OpenAI) as (port, _script):
        prompts = [
            ("OI-MARK-1 hello, what is a wombat?", "ANSWER OI-MARK-1"),
            ("OI-MARK-2 a second question", "ANSWER OI-MARK-2"),
            (f"OI-MARK-3 {HOSTILE}", "ANSWER OI-MARK-3"),
        ]
        interpreter(home, work, port, prompts)
    check_sessions(OpenInterpreterSource(home / ".config" / "open-interpreter"), "OI", None)


def test_what_open_interpreter_wrote_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "open-interpreter"
    shutil.copytree(KEPT, folder / "conversations")
    source = OpenInterpreterSource(folder)
    ids = check_sessions(source, "OI", None)
    (session_id,) = ids
    said = [item.text for item in project_conversation(source.surface(session_id))]
    assert not any("SECRET-TOOL-OUTPUT" in text or "```shell" in text for text in said[2:3])
    assert source.title(session_id).title == "OI-MARK-1 hello, what is a wombat?"  # type: ignore[union-attr]
    check_search("--interpreter-root", folder, "wombat", session_id, tmp_path)


def test_odd_conversations_and_links_are_read_around(tmp_path: Path) -> None:
    conversations = tmp_path / "oi" / "conversations"
    conversations.mkdir(parents=True)
    items: list[Any] = [{"role": "user", "type": "message", "content": "first question"}, "odd",
                        {"role": "assistant", "type": "message", "content": ["not text"]},
                        {"role": "computer", "type": "console", "format": "output", "content": "SECRET"},
                        {"role": "assistant", "type": "message", "content": "an answer"}]  # fmt: skip
    (conversations / "first_question__December_07_2026_20-11-45.json").write_text(json.dumps(items))
    (conversations / "odd.json").write_text('{"not": "a list"}')
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(items))
    (conversations / "linked.json").symlink_to(outside)
    source = OpenInterpreterSource(tmp_path / "oi")
    listed = {record.header.id: record for record in source.listing()}
    assert set(listed) == {"interpreter:first_question__December_07_2026_20-11-45", "interpreter:odd"}
    first = "interpreter:first_question__December_07_2026_20-11-45"
    assert listed[first].header.created_at == started("x__December_07_2026_20-11-45.json")
    assert [i.text for i in project_conversation(source.surface(first))] == ["first question", "an answer"]
    with pytest.raises(SessionQueryError):
        source.surface("interpreter:odd")
    assert started("x__Smarch_40_2026_20-11-45.json") is None


def test_open_interpreter_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    assert open_interpreter_root() == tmp_path / "c" / "open-interpreter"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert open_interpreter_root() == tmp_path / ".config" / "open-interpreter"
