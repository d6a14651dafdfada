"""The real app in a real terminal: tmux runs ``sessionref``, we type like a person, then read the store."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from core import JsonlSessionStore, parse_session_reference_text
from tui.cli.demo import DEMO_PROJECT

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(
    TMUX is None and not os.environ.get("SESSIONREF_REQUIRE_TMUX"),
    reason="tmux is not installed (.ci/run installs it and sets SESSIONREF_REQUIRE_TMUX)",
)


class Terminal:
    """One tmux server on a private socket running one program in a 120x40 window."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        assert TMUX is not None, "tmux is required"
        self.socket = f"sessionref-test-{uuid.uuid4().hex[:8]}"
        environment = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
        # -u: a parent that ran Textual headless may have exported its own COLUMNS and LINES.
        line = f"env -u COLUMNS -u LINES {environment} {shlex.join(command)}; echo EXITED:$?; sleep 30"
        where = ["-c", str(cwd)] if cwd is not None else []
        self._tmux("new-session", "-d", "-s", "app", "-x", "120", "-y", "40", *where, line)
        self._tmux("set-option", "-t", "app", "remain-on-exit", "on")  # its last screen stays readable

    def _tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, check=True)
        return done.stdout

    def send(self, *keys: str, literal: bool = False) -> None:
        self._tmux("send-keys", "-t", "app", *(["-l"] if literal else []), *keys)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "app")

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"terminal never showed what was expected; last screen:\n{screen}")
            time.sleep(0.1)

    def mention(self, before: str, query: str) -> None:
        """Type ``before``, then ``@`` and ``query`` (the picker opens on the ``@``)."""
        self.send(before, literal=True)
        self.send("@", literal=True)
        self.send(query, literal=True)

    def accept_and_send(self, label: str, kept: str = "messages kept") -> None:
        """Tab (the mention shows as its chip, ``@label``, never its URI, and its preview shows), then
        Enter (the turn shows its references)."""
        self.send("Tab")
        self.wait_for(lambda s: f"@{label}" in s and "dsh-session:" not in s and kept in s)
        self.send("Enter")
        self.wait_for(lambda s: f"Referenced sessions · {label}" in s and "You asked" in s)

    def quit(self) -> None:
        """Ctrl+Q, and the app exits cleanly."""
        self.send("C-q")
        self.wait_for(lambda s: "EXITED:0" in s)

    def close(self) -> None:
        assert TMUX is not None
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True, check=False)


def open_demo_copy(demo_template: Path, tmp_path: Path, *options: str) -> tuple[Path, Terminal]:
    """A copy of the demo store and ``sessionref`` on it in tmux (``--session today``, HOME in tmp)."""
    root = tmp_path / "store"
    shutil.copytree(demo_template, root)
    command = [sys.executable, "-m", "tui.cli", "--root", str(root), "--cwd", DEMO_PROJECT, "--session", "today"]
    return root, Terminal([*command, *options], app_env(tmp_path))


def app_env(home: Path) -> dict[str, str]:
    """The app's environment in tmux: this checkout importable, a colour terminal, HOME in tmp."""
    return {"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "TERM": "xterm-256color", "HOME": str(home)}


def test_type_a_mention_send_it_and_find_it_in_the_store(demo_template: Path, tmp_path: Path) -> None:
    root, terminal = open_demo_copy(demo_template, tmp_path)
    try:
        terminal.wait_for(lambda s: "Prompt" in s and "Storage design" in s)
        terminal.mention("tell me about ", "ret")
        terminal.wait_for(lambda s: "Retention (compacted)" in s)  # the sidebar only has room for "Retention (c…"
        terminal.accept_and_send("Retention (compacted)")
        terminal.quit()
    finally:
        terminal.close()

    store = JsonlSessionStore(root)
    events = store.get("today").events
    prompt = next(e for e in events if e.type == "user/message")
    display = prompt.data["envelope"]["displayContent"][0]["text"]
    assert display == "tell me about @Retention (compacted) "
    assert prompt.data["envelope"]["prefixContexts"][0]["meta"]["references"][0]["sessionId"] == "retention-work"
    assert prompt.data["content"][0]["text"].startswith("## Referenced sessions")
    reply = [e for e in events if e.type == "assistant/message"][-1]  # (after the echo model read with a tool)
    assert "Retention (compacted)" in reply.data["content"][0]["text"]
    assert [e.data["reason"] for e in events if e.type == "turn/end"] == [{"kind": "completed"}]
    assert parse_session_reference_text(display).references == []


def test_a_word_said_only_in_a_message_finds_the_session_to_reference(demo_template: Path, tmp_path: Path) -> None:
    # "fsync" is in no title, id or cwd: only in an answer of "Storage design" (design-notes).
    root, terminal = open_demo_copy(demo_template, tmp_path)
    try:
        terminal.wait_for(lambda s: "Prompt" in s and "Storage design" in s)
        terminal.mention("how did we make writes durable in ", "fsync")
        # The row, and under it the message that matched (the index builds on first start).
        screen = terminal.wait_for(lambda s: "ai: Write each batch as one frame and fsync" in s)
        lines = screen.splitlines()
        at = next(i for i, line in enumerate(lines) if "ai: Write each batch" in line)
        assert "Storage design" in lines[at - 1]  # the row, the snippet line under it
        terminal.accept_and_send("Storage design", kept="4 of 4 messages kept")
        terminal.quit()
    finally:
        terminal.close()

    events = JsonlSessionStore(root).get("today").events
    prompt = next(e for e in events if e.type == "user/message")
    assert prompt.data["envelope"]["displayContent"][0]["text"] == "how did we make writes durable in @Storage design "
    assert prompt.data["envelope"]["prefixContexts"][0]["meta"]["references"][0]["sessionId"] == "design-notes"
    assert "Write each batch as one frame and fsync" in prompt.data["content"][0]["text"]
    assert (root / ".sessionref-index").is_dir()  # beside the store, never inside a session folder


def test_reference_a_claude_code_session_from_the_terminal(demo_template: Path, tmp_path: Path) -> None:
    from tests.support.external_fixtures import CLAUDE_UUID, seed_external

    seed_external(tmp_path / "claude", tmp_path / "codex")
    external = ["--claude-root", str(tmp_path / "claude"), "--codex-root", str(tmp_path / "codex")]
    root, terminal = open_demo_copy(demo_template, tmp_path, *external)
    try:
        terminal.wait_for(lambda s: "CC Flaky lock test" in s and "CX Make the hero" in s)
        terminal.mention("why did it flake? ", "flaky")
        terminal.wait_for(lambda s: "CC Flaky lock test fix" in s and "s/sessionref" in s)
        terminal.accept_and_send("Flaky lock test fix")
        terminal.quit()
    finally:
        terminal.close()

    events = JsonlSessionStore(root).get("today").events
    prompt = next(e for e in events if e.type == "user/message")
    assert prompt.data["envelope"]["displayContent"][0]["text"] == "why did it flake? @Flaky lock test fix "
    reference = prompt.data["envelope"]["prefixContexts"][0]["meta"]["references"][0]
    assert reference["sessionId"] == f"claude:{CLAUDE_UUID}" and reference["label"] == "Flaky lock test fix"
    context = prompt.data["content"][0]["text"]
    assert "before the wombat fixture releases it" in context and "SECRET TOOL OUTPUT" not in context


def test_the_demo_shows_ages_relative_to_now(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "tui.cli", "--demo", "--root", str(tmp_path / "demo")]
    terminal = Terminal(command, app_env(tmp_path))
    try:
        screen = terminal.wait_for(lambda s: "Storage design" in s and "Website redesign" in s)
        terminal.quit()
    finally:
        terminal.close()
    rows = {line.split("│")[1].strip() for line in screen.splitlines() if line.count("│") >= 2}
    storage = next(row for row in rows if row.startswith("Storage design"))
    website = next(row for row in rows if row.startswith("Website redesign"))
    assert storage.split()[-1] in ("2m", "3m") and website.split()[-1] in ("7m", "8m")  # not "48w"


def test_compact_on_demand_in_a_real_terminal(demo_template: Path, tmp_path: Path) -> None:
    """A profile from config.toml points at a local DeepSeek-like server; two long turns, then F8: the
    checkpoint replaces the older exchange on screen and in the store, in dsh's shape."""
    from tests.support.fake_deepseek import FakeDeepSeek

    with FakeDeepSeek() as server:
        config = tmp_path / "config.toml"
        config.write_text(
            'default_profile = "local"\n\n[profiles.local]\n'
            f'model = "deepseek-chat"\nbase_url = "{server.base_url}"\napi_key_env = "LOCAL_TEST_KEY"\n'
        )
        root, terminal = open_demo_copy(demo_template, tmp_path, "--config", str(config))
        terminal_env_key = "sk-terminal-test"
        try:
            terminal.close()
            command = [
                sys.executable,
                "-m",
                "tui.cli",
                "--root",
                str(root),
                "--cwd",
                DEMO_PROJECT,
                "--session",
                "today",
                "--config",
                str(config),
            ]
            terminal = Terminal(command, {**app_env(tmp_path), "LOCAL_TEST_KEY": terminal_env_key})
            terminal.wait_for(lambda s: "Prompt" in s and "context 0% of 131k" in s)
            for words in ("first long question about the release plan " * 20, "second question " * 30):
                terminal.send(words, literal=True)
                terminal.send("Enter")
                terminal.wait_for(lambda s: "Noted. Here is my answer." in s and "completion" in s)
                time.sleep(0.3)
            # F8 as soon as the reply is on screen may come before its turn has ended (the app then
            # says to wait, and the user presses it again): the screen shows the answer first.
            for _ in range(5):
                terminal.send("F8")
                screen = terminal.wait_for(lambda s: "Wait for the reply" in s or "Compacting" in s or "Compacted" in s)
                if "Compacting" in screen or "Compacted" in screen:
                    break
                time.sleep(1)
            # The checkpoint's summary on screen (the transcript follows its end), the context smaller.
            terminal.wait_for(lambda s: "What the user wants" in s and "Decisions" in s and "Compacted" in s)
            terminal.quit()
        finally:
            terminal.close()
        assert server.keys and all(key == f"Bearer {terminal_env_key}" for key in server.keys)
    events = JsonlSessionStore(root).get("today").events
    types = [event.type for event in events]
    assert types[-4:] == ["compaction/start", "compaction/summary", "user/message", "compaction/end"]
    assert events[-2].data["source"]["plugin"] == "compact" and events[-4].data["turn"] is None
    assert terminal_env_key not in "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*.json"))
