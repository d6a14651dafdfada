"""Resuming another agent's session from the app, as a person does it: in a real terminal (tmux), the
palette's "Resume in Kimi CLI" suspends the app and starts the real Kimi CLI (against a stub of its
model) on that session in its folder. The person goes on with the conversation, presses Ctrl-C (Kimi
CLI's, not the app's) and leaves with Ctrl-D; the app comes back saying how Kimi CLI ended, and Kimi
CLI wrote the new turn into the same session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from core import project_conversation
from core.sessions.sources.kimi_cli import KimiCliSource
from tests.test_agent_kimi import KIMI, kimi, kimi_config
from tests.test_agents_real import _OpenAI, base_environment, setup_work, stub
from tests.test_terminal import Terminal, pytestmark  # noqa: F401  (tmux required)

REPO = Path(__file__).resolve().parent.parent
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"


@pytest.mark.skipif(_OPTIONAL and not KIMI.exists(), reason="Kimi CLI is not installed (make agents)")
def test_resume_in_kimi_cli_from_the_app_in_a_terminal(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, _script):
        kimi_config(home, port)
        kimi(home, work, "-p", "KI-MARK-1 hello, what is a wombat?")
        (record,) = KimiCliSource(home / ".kimi").listing()
        environment = {
            **base_environment(home),
            "PATH": f"{KIMI.parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(REPO),
            "TERM": "xterm-256color",
        }
        environment.pop("CI", None)
        command = [sys.executable, "-m", "tui.cli", "--root", str(tmp_path / "store"), "--cwd", str(tmp_path)]
        terminal = Terminal(command, environment, cwd=tmp_path)
        try:
            terminal.wait_for(lambda s: "Prompt" in s and "KI-MARK-1" in s, timeout=60)  # (in the sidebar)
            terminal.send("C-p")
            terminal.send("Resume in Kimi CLI", literal=True)
            terminal.wait_for(lambda s: "Resume in Kimi CLI: KI-MARK-1" in s)
            terminal.send("Enter")
            # Kimi CLI's screen: the session's turns, then its input box.
            terminal.wait_for(lambda s: "ANSWER KI-MARK-1" in s and "input" in s and "context:" in s, timeout=60)
            for _attempt in range(3):  # (typed again if a redraw took it)
                terminal.send("KI-MARK-2 resumed from the app", literal=True)
                terminal.send("Enter")
                try:
                    terminal.wait_for(lambda s: "ANSWER KI-MARK-2" in s, timeout=30)
                    break
                except AssertionError:
                    continue
            # Ctrl-C is Kimi CLI's (it only says how to quit): the suspended app must not take it.
            terminal.send("C-c")
            terminal.wait_for(lambda s: "Ctrl-D" in s and "to quit" in s)
            terminal.send("C-d")  # as Kimi CLI says to leave it
            screen = terminal.wait_for(lambda s: "kimi exited 0" in s, timeout=30)
            assert "Traceback" not in screen and "KeyboardInterrupt" not in screen
            terminal.send("C-q")
            screen = terminal.wait_for(lambda s: "EXITED:" in s)
        finally:
            terminal.close()
    assert "EXITED:0" in screen, screen
    (again,) = KimiCliSource(home / ".kimi").listing()  # the same session, gone on
    said = [item.text for item in project_conversation(KimiCliSource(home / ".kimi").surface(again.header.id))]
    assert again.header.id == record.header.id and "KI-MARK-2 resumed from the app" in said, said
