"""``sessionref handoff`` as a person runs it: in a real terminal (tmux), the real Claude Code and Codex
start interactively in the session's folder with the briefing as their first prompt; each one's model
stub sees the briefing and the sessionref tools, calls ``read_session`` for what the snapshot left out,
and answers; the person quits the agent and the exit code comes back through ``sessionref handoff``.

Then the same from the app: the palette's "Continue in Codex", the dialog, the app giving the terminal
to Codex and taking it back, and the transcript's note.

The test HOME has the agents' first-run screens already answered (onboarding, folder trust, the API
key), as a person who uses them daily has them.
"""

from __future__ import annotations

import json
import os
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.support.rc8 import NODE
from tests.test_agents_mcp import CLAUDE, CODEX, called
from tests.test_agents_real import GEMINI, OPENCODE, _Gemini, _OpenAI, _said
from tests.test_handoff_agents import (
    GOAL,
    _Messages,
    _Responses,
    check_first,
    claude_environment,
    codex_home,
    codex_saw,
    gemini_saw,
    gemini_with_stub,
    opencode_saw,
    opencode_with_stub,
    read_back,
    reading,
    recorded,
    serving,
    setup,
)
from tests.test_terminal import Terminal, app_env, pytestmark  # noqa: F401  (tmux required)

REPO = Path(__file__).resolve().parent.parent
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"


def _changed(environment: dict[str, str]) -> dict[str, str]:
    """What an agent's environment sets beyond this process's own (tmux passes only that)."""
    return {key: value for key, value in environment.items() if os.environ.get(key) != value}


def _handoff_command(tmp_path: Path, to: str) -> list[str]:
    return [sys.executable, "-m", "tui.cli", "handoff", "design", "--to", to, "--root", str(tmp_path / "store"),
            "--no-external", "--goal", GOAL, "--yes"]  # fmt: skip


def handoff_in_terminal(
    tmp_path: Path, to: str, environment: dict[str, str], work: Path, answered: str, *, twice: bool = True
) -> str:
    """``sessionref handoff design --to <to> --yes`` in tmux, until the model's answer shows; then the
    person leaves the agent (``leave``). The last screen."""
    terminal = Terminal(_handoff_command(tmp_path, to), environment, cwd=work)
    try:
        terminal.wait_for(lambda s: answered in s, timeout=120)
        return leave(terminal, "EXITED:", twice=twice)
    finally:
        terminal.close()


def leave(terminal: Terminal, shown: str, *, twice: bool = True) -> str:
    """Ctrl-C, as a person leaves an agent, until the terminal shows ``shown``: twice in a row for an
    agent that asks for a second press to quit (a first one may only end the turn in progress), once
    for one that quits on the first (a second would reach it while it shuts down)."""
    for _ in range(15):
        terminal.send("C-c")
        if twice:
            time.sleep(0.3)
            screen = terminal.screen()
            if shown in screen:
                return screen
            terminal.send("C-c")  # within the agents' "press again to quit" window
        try:
            return terminal.wait_for(lambda s: shown in s, timeout=1 if twice else 5)
        except AssertionError:
            continue
    return terminal.wait_for(lambda s: shown in s, timeout=1)


def open_app(tmp_path: Path, work: Path, environment: dict[str, str]) -> Terminal:
    """The app on the long session, in tmux."""
    command = [sys.executable, "-m", "tui.cli", "--root", str(tmp_path / "store"), "--no-external",
               "--cwd", str(work), "--session", "design"]  # fmt: skip
    terminal = Terminal(command, environment, cwd=work)
    try:
        terminal.wait_for(lambda s: "Prompt" in s and "Storage design" in s)
    except BaseException:
        terminal.close()
        raise
    return terminal


def continue_in_codex(terminal: Terminal) -> None:
    """Ctrl+P, "Continue in Codex", Enter: the dialog with the briefing."""
    terminal.send("C-p")
    terminal.send("Continue in Codex", literal=True)
    terminal.wait_for(lambda s: "Hand this session to Codex" in s)
    terminal.send("Enter")
    terminal.wait_for(lambda s: "Enter starts" in s and "messages" in s)


# -- Claude Code ------------------------------------------------------------------------------------------


def claude_home(tmp_path: Path, work: Path) -> None:
    """A daily user's Claude Code state: onboarding done, the folder trusted, the API key approved."""
    config = tmp_path / "home" / ".claude"
    config.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": "9.9.9",
        "theme": "dark",
        "customApiKeyResponses": {"approved": ["stub"], "rejected": []},
        "projects": {str(work): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
    }
    for place in (config / ".claude.json", tmp_path / "home" / ".claude.json"):
        place.write_text(json.dumps(state))


class _Connecting(_Messages):
    """As a model does in Claude Code's interactive mode, where MCP servers connect while the first turn
    starts: the first request offers ``WaitForMcpServers`` rather than sessionref's tools, and the briefing
    names the server to wait for; then ``read_session`` once it is offered, then DONE."""

    requests: list[dict[str, Any]] = []

    def call(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        offered = {tool.get("name") for tool in body.get("tools", [])}
        if self.TOOL not in offered and WAIT in offered and not called(body, WAIT):
            return WAIT, {"servers": ["sessionref"]}
        return super().call(body)


WAIT = "WaitForMcpServers"


@pytest.mark.skipif(_OPTIONAL and CLAUDE is None, reason="Claude Code is not installed (make interop)")
def test_handoff_to_claude_code_in_a_terminal(tmp_path: Path) -> None:
    work = setup(tmp_path)
    claude_home(tmp_path, work)
    _Connecting.requests = []
    with serving(_Connecting) as port:
        environment = {**_changed(claude_environment(tmp_path, port)), **app_env(tmp_path / "home")}
        screen = handoff_in_terminal(tmp_path, "claude", environment, work, "DONE")
    assert "EXITED:0" in screen and "Claude Code exited 0" in screen, screen
    requests = [body for body in _Connecting.requests if GOAL in json.dumps(body.get("messages"))]
    first = requests[0]
    offered = [tool["name"] for tool in first["tools"]]
    assert _Messages.TOOL in offered or WAIT in offered, offered  # our tools, or the wait for them
    tools = next(body for body in requests if any(t["name"] == _Messages.TOOL for t in body["tools"]))
    check_first(_said(first["messages"][0]["content"]), [tool["name"] for tool in tools["tools"]])
    read_back(requests[-1])
    recorded(tmp_path, "claude", headless=False)


# -- Codex --------------------------------------------------------------------------------------------------


def trust_in_codex(tmp_path: Path, work: Path) -> None:
    """A daily user's Codex: the folder trusted (no first-run question)."""
    config = tmp_path / "codex-home" / "config.toml"
    with config.open("a") as handle:
        handle.write(f'\n[projects.{json.dumps(str(work))}]\ntrust_level = "trusted"\n')


@pytest.mark.skipif(_OPTIONAL and (NODE is None or not CODEX.exists()), reason="Codex is not installed (make interop)")
def test_handoff_to_codex_in_a_terminal(tmp_path: Path) -> None:
    work = setup(tmp_path)
    _Responses.requests = []
    with serving(_Responses) as port:
        environment = codex_home(tmp_path, port)
        trust_in_codex(tmp_path, work)
        before = (tmp_path / "codex-home" / "config.toml").read_text()
        changed = {**_changed(environment), "PYTHONPATH": str(REPO), "TERM": "xterm-256color"}
        screen = handoff_in_terminal(tmp_path, "codex", changed, work, "DONE")
    assert "EXITED:0" in screen and "Codex CLI exited 0" in screen, screen
    codex_saw(_Responses.requests)
    # Codex writes its own screen state ([tui]) to the file; nothing else changed and nothing is ours.
    after = tomllib.loads((tmp_path / "codex-home" / "config.toml").read_text())
    after.pop("tui", None)
    assert after == tomllib.loads(before) and "sessionref" not in json.dumps(after)
    recorded(tmp_path, "codex", headless=False)


@pytest.mark.skipif(_OPTIONAL and (NODE is None or not CODEX.exists()), reason="Codex is not installed (make interop)")
def test_continue_in_codex_from_the_app(tmp_path: Path) -> None:
    """The palette's "Continue in Codex": the dialog, Codex in the app's terminal, the app back after it."""
    work = setup(tmp_path)
    _Responses.requests = []
    with serving(_Responses) as port:
        environment = codex_home(tmp_path, port)
        trust_in_codex(tmp_path, work)
        terminal = open_app(tmp_path, work, {**_changed(environment), **app_env(tmp_path)})
        try:
            continue_in_codex(terminal)
            terminal.send(GOAL, literal=True)  # the goal, typed at once: the briefing below follows it
            terminal.wait_for(lambda s: s.count(GOAL) == 2, timeout=60)  # in the field and the briefing
            terminal.send("Enter")
            terminal.wait_for(lambda s: "DONE" in s, timeout=120)
            leave(terminal, "Codex CLI exited 0")  # the app is back
            terminal.wait_for(lambda s: "handed to Codex" in s)
            terminal.send("C-q")
            screen = terminal.wait_for(lambda s: "EXITED:" in s)
        finally:
            terminal.close()
    assert "EXITED:0" in screen, screen
    codex_saw(_Responses.requests)
    recorded(tmp_path, "codex", headless=False)


def test_ctrl_c_in_a_handed_agent_is_the_agents_and_the_app_comes_back(tmp_path: Path) -> None:
    """An agent that leaves the terminal in its normal mode gets Ctrl-C as a signal, and so would the
    suspended app, which shares its process group: the app ignores it while the agent runs."""
    work = setup(tmp_path)
    agent = tmp_path / "bin" / "codex"
    agent.parent.mkdir()
    agent.write_text(
        "#!/bin/sh\n"
        "trap 'echo \"stand-in got Ctrl-C\"; exit 5' INT\n"
        "echo 'STAND-IN READY'\n"
        "while :; do sleep 0.1; done\n"
    )
    agent.chmod(0o755)
    environment = {**app_env(tmp_path), "PATH": f"{agent.parent}{os.pathsep}{os.environ['PATH']}"}
    terminal = open_app(tmp_path, work, environment)
    try:
        continue_in_codex(terminal)
        terminal.send("Enter")
        terminal.wait_for(lambda s: "STAND-IN READY" in s)
        terminal.send("C-c")
        screen = terminal.wait_for(lambda s: "Codex CLI exited 5" in s and "handed to Codex" in s)
        assert "Traceback" not in screen and "KeyboardInterrupt" not in screen
        terminal.send("C-q")
        screen = terminal.wait_for(lambda s: "EXITED:" in s)
    finally:
        terminal.close()
    assert "EXITED:0" in screen, screen


# -- Gemini CLI and opencode ------------------------------------------------------------------------------


@pytest.mark.skipif(_OPTIONAL and (NODE is None or not GEMINI.exists()), reason="Gemini CLI is not installed")
def test_handoff_to_gemini_cli_in_a_terminal(tmp_path: Path) -> None:
    work = setup(tmp_path)
    home = tmp_path / "home"
    with reading(_Gemini) as (port, script):
        environment = gemini_with_stub(tmp_path, port)
        before = (home / ".gemini" / "settings.json").read_text()
        screen = handoff_in_terminal(tmp_path, "gemini", {**_changed(environment), **app_env(home)}, work, "ANSWER")
    assert "EXITED:0" in screen and "Gemini CLI exited 0" in screen, screen
    gemini_saw(script.requests)
    assert (home / ".gemini" / "settings.json").read_text() == before
    recorded(tmp_path, "gemini", headless=False)


@pytest.mark.skipif(_OPTIONAL and OPENCODE is None, reason="opencode is not installed (make interop)")
def test_handoff_to_opencode_in_a_terminal(tmp_path: Path) -> None:
    work = setup(tmp_path)
    with reading(_OpenAI) as (port, script):
        environment = opencode_with_stub(tmp_path, work, port)
        changed = {**_changed(environment), **app_env(tmp_path / "home")}
        screen = handoff_in_terminal(tmp_path, "opencode", changed, work, "ANSWER", twice=False)
    assert "EXITED:0" in screen and "opencode exited 0" in screen, screen
    opencode_saw(script.requests)
    recorded(tmp_path, "opencode", headless=False)
