"""nanocoder (npm ``@nanocollective/nanocoder``, pinned in ``tests/interop/alone/nanocoder``, a folder of
its own), run offline against a local stub of an OpenAI-compatible API named in its
``agents.config.json``. It saves sessions only from its terminal interface, so it runs under a
pseudo-terminal and is typed into as a person would: a plain chat, a turn calling its
``list_directory`` tool, a continued session (``--continue``) with hostile text, and a second session.
sessionref lists what it saved with its folder, finds it by a word through ``sessionref mcp
--nanocoder-root`` and references it. Then the files' corners: the index and a file it lacks, odd
documents, links out."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from core import SessionQueryError, project_conversation
from core.sessions.sources.nanocoder import NanocoderSource, nanocoder_root
from tests.support.rc8 import INTEROP, NODE
from tests.test_agents_real import (
    HOSTILE,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    setup_work,
    stub,
    tool_turn_made,
)

NANOCODER = INTEROP / "alone" / "nanocoder" / "node_modules" / "@nanocollective" / "nanocoder" / "dist" / "cli.js"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_nanocoder = pytest.mark.skipif(
    _OPTIONAL and not (NANOCODER.exists() and NODE is not None), reason="nanocoder is not installed (make interop)"
)


class Terminal:
    """nanocoder running in a pseudo-terminal, its screen read as it is drawn."""

    def __init__(self, home: Path, work: Path, *arguments: str) -> None:
        environment = {**base_environment(home), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        environment.pop("CI", None)  # (nanocoder's interface draws nothing when it thinks it runs in CI)
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.process = subprocess.Popen(
            [str(NODE), str(NANOCODER), *arguments], cwd=work, env=environment, stdin=slave, stdout=slave, stderr=slave
        )
        os.close(slave)
        self.screen = b""

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.screen += os.read(self.master, 65536)
                except OSError:
                    return

    def wait_for(self, text: bytes, seconds: float = 60) -> None:
        end = time.monotonic() + seconds
        while text not in self.screen:
            assert time.monotonic() < end, f"{text!r} never shown:\n{self.screen[-3000:]!r}"
            self.read(0.2)

    def settle(self, quiet: float = 1.0, seconds: float = 30) -> None:
        """Until nothing has been drawn for ``quiet`` seconds."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            before = len(self.screen)
            self.read(quiet)
            if len(self.screen) == before:
                return

    def type(self, text: str) -> None:
        # Pasted, then sent once the paste is drawn (keys typed one by one under load can reach its
        # input out of order; a paste and its Enter in one write send nothing).
        self.settle()
        os.write(self.master, text.encode())
        self.settle()
        os.write(self.master, b"\r")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.close(self.master)


def _saved(sessions: Path, answer: str, seconds: float = 60) -> None:
    """Wait until a saved session holds ``answer`` (nanocoder saves after each turn)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for path in sessions.glob("*-*-*-*-*.json"):
            try:
                if answer in path.read_text():
                    return
            except OSError:
                pass
        time.sleep(0.2)
    raise AssertionError(f"no saved session holds {answer!r}")


def _configure(home: Path, work: Path, port: int) -> None:
    config = home / ".config" / "nanocoder"
    config.mkdir(parents=True, exist_ok=True)
    provider = {"name": "stub", "baseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": "stub", "models": ["stub-model"]}
    (config / "agents.config.json").write_text(json.dumps({"nanocoder": {"providers": [provider]}}))
    # (it saves at most every saveInterval ms, 30 s unless told: 1 s, its least)
    preferences = {"trustedDirectories": [str(work)], "nanocoder": {"sessions": {"saveInterval": 1000}}}
    (config / "nanocoder-preferences.json").write_text(json.dumps(preferences))


def _session(home: Path, work: Path, port: int, prompts: list[str], *arguments: str) -> None:
    _configure(home, work, port)
    terminal = Terminal(home, work, *arguments)
    try:
        terminal.wait_for(b"What would you like")
        for prompt in prompts:
            terminal.type(prompt)
            try:
                _saved(home / ".local" / "share" / "nanocoder" / "sessions", f"ANSWER {prompt.split()[0]}")
            except AssertionError as error:
                shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.screen.decode("utf-8", "replace"))
                raise AssertionError(f"{error}; its screen ended:\n{shown[-2500:]}") from None
    finally:
        terminal.close()


def _texts(source: NanocoderSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_nanocoder
def test_nanocoder_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        _session(
            home, work, port, ["NC-MARK-1 hello, what is a wombat?", "NC-MARK-2 please USE A TOOL to list the files"]
        )
        _session(home, work, port, [f"NC-MARK-3 continued. {HOSTILE}"], "--continue")
        _session(home, work, port, ["QU-MARK-1 a second session about quokkas"])
    assert tool_turn_made(script)
    folder = home / ".local" / "share" / "nanocoder"
    source = NanocoderSource(folder)
    ids = check_sessions(source, "NC", work)
    assert len(ids) == 2
    (quokka,) = [i for i in ids if "quokkas" in _texts(source, i)[0]]
    check_search("--nanocoder-root", folder, "quokkas", quokka, tmp_path)


# -- the files' corners --------------------------------------------------------------------------------------

SESSION = "a1f4612e-5af1-4089-b6ae-51a2bb9a0975"


def _saved_session(folder: Path, messages: Any, name: str = SESSION, **more: Any) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    document = {"id": name, "title": "Wombat facts", "createdAt": "2026-12-07T19:30:41.986Z",
                "lastAccessedAt": "2026-12-07T19:31:04.699Z", "messageCount": 4, "provider": "stub",
                "model": "stub-model", "workingDirectory": "/work/nc", **more, "messages": messages}  # fmt: skip
    (folder / f"{name}.json").write_text(json.dumps(document))
    return {key: value for key, value in document.items() if key != "messages"}


def test_what_nanocoder_saved_is_read_with_its_index(tmp_path: Path) -> None:
    sessions = tmp_path / "nanocoder" / "sessions"
    listed = _saved_session(
        sessions,
        [
            {"role": "system", "content": "You are nanocoder"},
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "list_directory"}}]},
            {"role": "tool", "content": "SECRET-TOOL-OUTPUT", "tool_call_id": "c1"},
            {"role": "assistant", "content": "an answer"},
            "not a message",
        ],
    )
    # A session the index lacks (saved, its index not yet) is read from its own file.
    _saved_session(sessions, [{"role": "user", "content": "unindexed"}], name="0b9e2c3d-0000-4000-8000-000000000000",
                   title="", workingDirectory="relative")  # fmt: skip
    (sessions / "sessions.json").write_text(json.dumps([listed, "odd", {"id": 5}]))
    source = NanocoderSource(tmp_path / "nanocoder")
    records = {record.header.id: record.header for record in source.listing()}
    assert records[f"nanocoder:{SESSION}"].cwd == "/work/nc"
    assert records["nanocoder:0b9e2c3d-0000-4000-8000-000000000000"].cwd is None
    assert _texts(source, f"nanocoder:{SESSION}") == ["first question", "an answer"]
    assert source.title(f"nanocoder:{SESSION}").title == "Wombat facts"  # type: ignore[union-attr]
    assert source.title("nanocoder:0b9e2c3d-0000-4000-8000-000000000000").title == "unindexed"  # type: ignore[union-attr]


def test_odd_documents_and_links_out_are_read_around(tmp_path: Path) -> None:
    sessions = tmp_path / "nanocoder" / "sessions"
    _saved_session(sessions, {"not": "a list"})
    (sessions / "sessions.json").write_text("{not json")
    outside = tmp_path / "outside"
    _saved_session(outside, [{"role": "user", "content": "SECRET"}], name="f6c2f1d4-0000-4000-8000-000000000001")
    (sessions / "f6c2f1d4-0000-4000-8000-000000000002.json").symlink_to(
        outside / "f6c2f1d4-0000-4000-8000-000000000001.json"
    )
    source = NanocoderSource(tmp_path / "nanocoder")
    (record,) = source.listing()
    with pytest.raises(SessionQueryError) as refused:
        source.surface(record.header.id)
    assert refused.value.code == "SESSION_QUERY_INVALID_SURFACE"


def test_nanocoder_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NANOCODER_DATA_DIR", str(tmp_path / "n"))
    assert nanocoder_root() == tmp_path / "n"
    monkeypatch.delenv("NANOCODER_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    assert nanocoder_root() == tmp_path / "d" / "nanocoder"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert nanocoder_root() == tmp_path / ".local" / "share" / "nanocoder"


@needs_nanocoder
def test_nanocoder_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    from tests.test_agents_real import _said, docs_block, offered_tools, sessionref_on_path, tool_messages
    from tests.test_mcp import snapshot

    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    config = home / ".config" / "nanocoder"
    config.mkdir(parents=True, exist_ok=True)
    (config / ".mcp.json").write_text(json.dumps(docs_block('"alwaysAllow"')))  # docs/mcp.md's, as written
    with stub(_OpenAI) as (port, script), pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", path)
        _configure(home, work, port)
        terminal = Terminal(home, work)
        try:
            terminal.wait_for(b"What would you like")
            # While it connects its MCP servers (and fails to fetch its latest version, offline), it draws
            # its prompt again, and a paste then is lost: typed again until it is taken.
            for attempt in range(4):
                terminal.settle(quiet=2)
                terminal.type("NC-MARK-9 REFERENCE DESIGN please")
                try:
                    terminal.wait_for(b"ANSWER NC-MARK-9", seconds=30)
                    break
                except AssertionError:
                    if attempt == 3:
                        raise
        finally:
            terminal.close()
    offered = offered_tools(script)
    assert any(name.endswith("reference_session") for name in offered), offered
    results = [_said(message.get("content")) for message in tool_messages(script)]
    # nanocoder shows its model at most 20,000 characters of a tool's result, its start and end: the
    # snapshot's first and last 4,000 characters are there as they are.
    whole = snapshot(root)
    assert any(
        len(result) <= 20_000 and whole[:4_000] in result and result.endswith(whole[-4_000:]) for result in results
    ), [(len(result), len(whole)) for result in results]
