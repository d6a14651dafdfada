"""``sessionref handoff`` and "Continue in …": the briefing, every refusal (one line, nothing started,
nothing written), the note where a session went (dsh still reads the log), and the app's side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import Input, TextArea

from core.folder.jsonl_store import JsonlSessionStore
from core.handoff.agents import AGENTS, ToolServer
from core.handoff.record import HANDOFF_EVENT, SIDE_FILE, Handoff, handoffs_beside, handoffs_in, record_handoff
from core.reference.uri import encode_session_reference_uri
from tests.support.app_harness import open_app, until
from tests.support.rc8 import NODE, dsh
from tests.test_handoff_agents import FIRST, FRAME, GOAL, _bin, seed
from tui.screens.handoff_dialog import HandoffScreen
from tui.widgets.prompt import PromptArea

REPO = Path(__file__).resolve().parent.parent


def run(tmp_path: Path, *arguments: str, path: str | None = None, cwd: Path | None = None) -> Any:
    environment = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path / "home")}
    if path is not None:
        environment["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "handoff", *arguments, "--root", str(tmp_path / "store"), "--no-external"],
        cwd=cwd or tmp_path / "work", env=environment, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "notes.txt").write_text("first\n")
    git = ["git", "-C", str(folder), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "the first commit"], check=True)
    (folder / "notes.txt").write_text("first\nsecond\n")
    (folder / "new.txt").write_text("x")
    seed(tmp_path / "store", folder)
    return folder


def _log(tmp_path: Path) -> list[Any]:
    store = JsonlSessionStore(tmp_path / "store")
    try:
        return store.read_log("design")[1]
    finally:
        store.close()


def test_print_writes_the_briefing_and_nothing_else(tmp_path: Path, work: Path) -> None:
    before = _log(tmp_path)
    done = run(tmp_path, "last", "--to", "claude", "--print", "--goal", GOAL)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith('You are continuing work begun in another session (sessionref session "Storage design")')
    assert f"Goal: {GOAL}" in text and f"Folder: {work}" in text
    assert "Branch: " in text and "the first commit" in text and "notes.txt | 1 +" in text
    assert "1 untracked file" in text
    assert FRAME in text and FIRST not in text and "older ones left out" in text
    assert "sk-ant-api03" not in text and "[redacted: anthropic-key]" in text
    assert 'read_session with session "design"' in text
    assert _log(tmp_path) == before  # --print records nothing


def test_the_snapshot_is_the_one_prepare_gives(tmp_path: Path, work: Path) -> None:
    import asyncio

    from core import ReferenceInput, SessionReferenceService

    store = JsonlSessionStore(tmp_path / "store")
    try:
        prepared = asyncio.run(
            SessionReferenceService(store).prepare(
                type("Caller", (), {"id": "x", "cwd": str(work)})(), [{"type": "text", "text": ""}],
                [ReferenceInput("design", "Storage design")],
            )
        )  # fmt: skip
    finally:
        store.close()
    done = run(tmp_path, "design", "--to", "codex", "--print")
    assert done.stdout.endswith("\n\n" + str(prepared.contexts[0].content[0]["text"]) + "\n")


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["design", "--to", "claude", "--yes"], "Claude Code is not installed (no claude on PATH)"),
        (["nope", "--to", "codex", "--print"], "session 'nope' cannot be read"),
        (["last", "--to", "codex", "--print"], "no session was started in"),
        (["dsh-session:%ZZ", "--to", "codex", "--print"], "SESSION_REFERENCE_INVALID_REFERENCE"),
    ],
)
def test_what_cannot_go_ahead_is_one_line_and_nothing_happens(
    tmp_path: Path, work: Path, arguments: list[str], said: str
) -> None:
    before = _log(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run(tmp_path, *arguments, path="/nonexistent", cwd=elsewhere)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert said in line and "nothing was started" in line and "Traceback" not in done.stderr
    assert done.stdout == "" and _log(tmp_path) == before


def test_a_folder_that_is_gone_is_refused(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    seed(tmp_path / "store", tmp_path / "gone")
    done = run(tmp_path, "design", "--to", "codex", "--print")
    assert done.returncode == 1 and "the session's folder" in done.stderr and "no longer exists" in done.stderr


def test_without_a_terminal_it_asks_for_yes(tmp_path: Path, work: Path) -> None:
    path = _bin(tmp_path, "codex", ["/bin/true"])
    done = run(tmp_path, "design", "--to", "codex", "--goal", GOAL, path=path)
    assert done.returncode == 2 and "add --yes" in done.stderr
    assert not any(event.type == HANDOFF_EVENT for event in _log(tmp_path))


def test_an_agent_ended_by_a_signal_exits_as_a_shell_says(tmp_path: Path, work: Path) -> None:
    """Killed by SIGTERM: 143 (128 + 15), not Python's -15 (which an exit status would turn into 241)."""
    fake = tmp_path / "fake_codex.py"
    fake.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    path = _bin(tmp_path, "codex", [sys.executable, str(fake)])
    done = run(tmp_path, "design", "--to", "codex", "--goal", GOAL, "--yes", "--headless", path=path)
    assert done.returncode == 143, done.stderr
    assert "Codex CLI exited 143" in done.stderr


def test_the_agent_gets_the_briefing_the_server_and_its_exit_code_passes_through(tmp_path: Path, work: Path) -> None:
    """A stand-in ``codex`` on PATH writes what it was started with; its exit code comes back."""
    seen = tmp_path / "seen.json"
    fake = tmp_path / "fake_codex.py"
    fake.write_text(
        "import json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'cwd': os.getcwd()}}, open({str(seen)!r}, 'w'))\n"
        "sys.exit(7)\n"
    )
    path = _bin(tmp_path, "codex", [sys.executable, str(fake)])
    done = run(tmp_path, "design", "--to", "codex", "--goal", GOAL, "--yes", "--headless", path=path)
    assert done.returncode == 7, done.stderr
    started = json.loads(seen.read_text())
    assert started["cwd"] == str(work)
    argv = started["argv"]
    assert argv[:2] == ["exec", "--skip-git-repo-check"]
    assert 'mcp_servers.sessionref.args=["-m", "tui.cli", "mcp", "--root", ' in " ".join(argv)
    assert GOAL in argv[-1] and FRAME in argv[-1]
    assert "briefing: " in done.stderr and "Codex CLI exited 7" in done.stderr
    (note,) = handoffs_in(_log(tmp_path), "design")
    assert (note.to, note.goal, note.headless) == ("codex", GOAL, True)


@pytest.mark.skipif(NODE is None, reason="the interop packages are not installed (make interop)")
def test_dsh_reads_a_log_with_hand_off_notes(tmp_path: Path, work: Path) -> None:
    store = JsonlSessionStore(tmp_path / "store")
    try:
        record_handoff(store, Handoff("design", "claude", GOAL, 5, False, 100), None, own=True)
        surface = [event.seq for event in store.get("design").surface()]  # type: ignore[union-attr]
    finally:
        store.close()
    loaded = dsh("load", root=str(tmp_path / "store"), compression="zstd", ids=["design"])["design"]
    assert loaded["inspect"]["ok"], loaded["inspect"]
    assert loaded["inspect"]["types"][-1] == HANDOFF_EVENT
    assert dsh("surface", root=str(tmp_path / "store"), compression="zstd", id="design")["nodes"] == surface


def test_another_writer_or_another_tool_gets_a_side_note(tmp_path: Path, work: Path) -> None:
    store = JsonlSessionStore(tmp_path / "store")
    other = JsonlSessionStore(tmp_path / "store")
    try:
        held = other.get("design")  # another process writes it (the app has it open)
        assert held is not None
        side = str(tmp_path / "store" / SIDE_FILE)
        where = record_handoff(store, Handoff("design", "codex", GOAL, 1), side, own=True)
        record_handoff(store, Handoff("claude:abc", "gemini", "go on", 2), side, own=False)
    finally:
        other.close()
        store.close()
    assert where == side and oct(os.stat(side).st_mode & 0o777) == "0o600"
    assert [(h.session_id, h.to) for h in handoffs_beside(side)] == [("design", "codex"), ("claude:abc", "gemini")]
    assert [h.to for h in handoffs_beside(side, "claude:abc")] == ["gemini"]
    with open(side, "ab") as handle:  # a torn or foreign line is skipped, never an error
        handle.write(b'{"sessionId": 3}\nnot json\n')
    assert len(handoffs_beside(side)) == 2


def test_each_agent_is_started_through_its_own_options(tmp_path: Path) -> None:
    server = ToolServer.for_store(root="/s", url=None)
    for name in ("claude", "codex", "gemini", "qwen", "opencode", "kilo", "copilot"):
        agent = AGENTS[name]
        launch = agent.build(f"/bin/{name}", "BRIEF", str(tmp_path), server, False)  # type: ignore[misc]
        try:
            assert launch.cwd == str(tmp_path) and "BRIEF" in launch.argv
            if name == "claude":
                config = json.loads(Path(launch.argv[launch.argv.index("--mcp-config") + 1]).read_text())
                assert config["mcpServers"]["sessionref"]["args"][-3:] == ["mcp", "--root", "/s"]
                # --allowedTools takes a list: without "--" it swallowed the prompt (seen in a real terminal).
                assert launch.argv[-2:] == ["--", "BRIEF"]
            if name == "gemini":
                overlay = Path(launch.env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json"
                assert json.loads(overlay.read_text())["mcpServers"]["sessionref"]["trust"] is True
            if name == "qwen":
                overlay = Path(launch.env["QWEN_HOME"])
                assert json.loads((overlay / "settings.json").read_text())["mcpServers"]["sessionref"]["trust"] is True
                assert launch.env["QWEN_RUNTIME_DIR"] != launch.env["QWEN_HOME"]
            if name == "copilot":
                (option,) = [a for a in launch.argv if a.startswith("--additional-mcp-config=@")]
                config = json.loads(Path(option.partition("@")[2]).read_text())
                assert config["mcpServers"]["sessionref"]["args"][-3:] == ["mcp", "--root", "/s"]
                assert launch.argv[-3:] == ["--allow-tool=sessionref", "-i", "BRIEF"]
            if name in ("opencode", "kilo"):
                content = launch.env[f"{name.upper()}_CONFIG_CONTENT"]
                assert json.loads(content)["mcp"]["sessionref"]["type"] == "local"
                assert launch.env["PWD"] == str(tmp_path) and launch.argv[1:] == [str(tmp_path), "--prompt", "BRIEF"]
        finally:
            launch.cleanup()
        assert all(not os.path.exists(path) for path in launch.files)


async def test_continue_in_sessionref_starts_a_session_whose_draft_references_the_source(
    demo_template: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()

    def setup(store: JsonlSessionStore) -> None:
        session = store.create("design", cwd=str(work))
        session.append("session/title", {"title": "Storage design", "messageSeqs": [], "source": "user"})

    app, store = open_app(demo_template, tmp_path / "store", session="design", setup=setup, cwd=str(work))
    async with app.run_test(size=(120, 40)) as pilot:
        app.chat.continue_in("sessionref")
        await until(pilot, lambda: isinstance(app.screen, HandoffScreen))
        await pilot.press("end", *"ship it")
        briefing = app.screen.query_one("#handoff-briefing", TextArea)
        await until(pilot, lambda: "ship it" in briefing.text)  # the briefing follows the goal as typing pauses
        assert "ship it" in str(app.screen.query_one("#handoff-goal", Input).value)
        await pilot.press("enter")
        await until(pilot, lambda: app.workspace.session.id != "design")
        prompt = app.chat.query_one(PromptArea)
        await until(pilot, lambda: "ship it" in prompt.text)
        assert encode_session_reference_uri("design") in prompt.text and prompt.shown_text.startswith("@Storage design")
        assert app.workspace.session.cwd == str(work)
        app.chat.switch_to("design")
        await until(pilot, lambda: app.workspace.session.id == "design")
        await until(pilot, lambda: app.chat.query(".handoff-note"))
        note = str(app.chat.query_one(".handoff-note").render())
        assert "handed to sessionref" in note and "ship it" in note
    store.close()


def test_a_bad_reference_setting_or_a_missing_store_is_one_line(tmp_path: Path, work: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[reference]\nmax_reference_bytes = 10000000000000000000\n")
    done = run(tmp_path, "design", "--to", "codex", "--print", "--config", str(config))
    assert done.returncode == 2 and "(SESSION_REFERENCE_INVALID_CONFIG)" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    missing = subprocess.run(
        [sys.executable, "-m", "tui.cli", "handoff", "design", "--to", "codex", "--print", "--root",
         str(tmp_path / "none"), "--no-external"],
        env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert missing.returncode == 3
    assert missing.stderr == f"sessionref handoff: {tmp_path / 'none'} is not a session store folder\n"


async def test_a_rows_menu_hands_on_another_tools_session_and_lists_where_it_went(
    demo_template: Path, tmp_path: Path
) -> None:
    """``m`` on a Claude Code row: the menu lists its earlier hand-off (noted beside the store, its goal
    shown as text, never markup), has no Open (it cannot become the target), and Continue in sessionref
    starts a new session whose draft references it; the note goes beside the store, Claude's files
    untouched."""
    from core.sessions.sources.claude import CLAUDE_PREFIX, ClaudeCodeSource
    from core.sessions.sources.codex import CodexSource
    from tests.support.external_fixtures import CLAUDE_UUID, seed_external, tree_state
    from tui.cli.demo import DEMO_PROJECT
    from tui.screens.handoff_dialog import ContinueMenu
    from tui.widgets.sidebar import SessionSidebar

    work = tmp_path / "work"
    work.mkdir()
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    seed_external(claude, codex)
    (log,) = claude.rglob("*.jsonl")
    log.write_text(log.read_text().replace(DEMO_PROJECT, str(work)))  # a folder that exists
    before = tree_state(claude)
    claude_id = CLAUDE_PREFIX + CLAUDE_UUID
    side = tmp_path / "store" / SIDE_FILE
    app, store = open_app(demo_template, tmp_path / "store", external=(ClaudeCodeSource(claude), CodexSource(codex)))
    record_handoff(store, Handoff(claude_id, "gemini", "[b]earlier[/b] goal", 1), str(side), own=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, app.workspace.catalog_loaded.is_set)
        sidebar = app.chat.query_one(SessionSidebar)
        await until(pilot, lambda: sidebar.index_of(claude_id) is not None)
        sidebar.focus()
        sidebar.highlight_id(claude_id)
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, ContinueMenu))
        menu = app.screen
        assert isinstance(menu, ContinueMenu)
        prompts = [str(option.prompt) for option in menu.options]
        assert "Open" not in prompts and "Continue in sessionref" in prompts
        assert prompts[-1].startswith("→ ") and prompts[-1].endswith("handed to Gemini CLI: [b]earlier[/b] goal")
        assert menu.options[-1].disabled and isinstance(menu.options[-1].prompt, Text)  # text, not markup
        menu.dismiss("sessionref")
        await until(pilot, lambda: isinstance(app.screen, HandoffScreen))
        await pilot.press(*"carry on")
        await pilot.press("enter")
        await until(pilot, lambda: app.workspace.session.cwd == str(work))
        prompt = app.chat.query_one(PromptArea)
        await until(pilot, lambda: "carry on" in prompt.text)
        assert encode_session_reference_uri(claude_id) in prompt.text
    store.close()
    assert [(h.to, h.goal) for h in handoffs_beside(str(side), claude_id)] == [
        ("gemini", "[b]earlier[/b] goal"),
        ("sessionref", "carry on"),
    ]
    assert tree_state(claude) == before  # another tool's files are never written


async def test_a_rows_menu_resumes_another_tools_session_in_that_tool(
    demo_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``m`` on a Claude Code row offers Resume in Claude Code first: chosen, ``claude --resume <id>``
    runs in the session's folder with the app suspended (a stand-in ``claude`` records it)."""
    import json
    import sys

    from core.sessions.sources.claude import CLAUDE_PREFIX, ClaudeCodeSource
    from core.sessions.sources.codex import CodexSource
    from tests.support.external_fixtures import CLAUDE_UUID, seed_external
    from tui.cli.demo import DEMO_PROJECT
    from tui.screens.handoff_dialog import ContinueMenu
    from tui.widgets.sidebar import SessionSidebar

    work = tmp_path / "work"
    work.mkdir()
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    seed_external(claude, codex)
    (log,) = claude.rglob("*.jsonl")
    log.write_text(log.read_text().replace(DEMO_PROJECT, str(work)))
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    recorded = tmp_path / "claude-ran.json"
    program = bin_folder / "claude"
    program.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"open({str(recorded)!r}, 'w').write(json.dumps({{'argv': sys.argv[1:], 'cwd': os.getcwd()}}))\n"
    )
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_folder}{os.pathsep}{os.environ['PATH']}")
    claude_id = CLAUDE_PREFIX + CLAUDE_UUID
    app, store = open_app(demo_template, tmp_path / "store", external=(ClaudeCodeSource(claude), CodexSource(codex)))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, app.workspace.catalog_loaded.is_set)
        sidebar = app.chat.query_one(SessionSidebar)
        await until(pilot, lambda: sidebar.index_of(claude_id) is not None)
        sidebar.focus()
        sidebar.highlight_id(claude_id)
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, ContinueMenu))
        menu = app.screen
        assert isinstance(menu, ContinueMenu)
        assert str(menu.options[0].prompt) == "Resume in Claude Code"
        menu.dismiss("resume")
        await until(pilot, lambda: recorded.exists() or bool(app._notifications))
    store.close()
    if recorded.exists():
        assert json.loads(recorded.read_text()) == {"argv": ["--resume", CLAUDE_UUID], "cwd": str(work)}
    else:  # (a headless app cannot suspend itself: it says so, and nothing ran)
        assert any("cannot hand itself" in str(n.message) for n in app._notifications)


async def test_the_palette_resumes_another_tools_session_by_its_title(
    demo_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl+P, "resume in claude": the Claude Code session's "Resume in Claude Code: <title>" is found
    and, chosen, goes to ``sessionref resume``'s plan (Claude Code is not on PATH here: one notice)."""
    from core.sessions.sources.claude import ClaudeCodeSource
    from core.sessions.sources.codex import CodexSource
    from tests.support.external_fixtures import seed_external
    from tests.test_app import type_text

    claude, codex = tmp_path / "claude", tmp_path / "codex"
    seed_external(claude, codex)
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))
    app, store = open_app(demo_template, tmp_path / "store", external=(ClaudeCodeSource(claude), CodexSource(codex)))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, app.workspace.catalog_loaded.is_set)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette")
        await type_text(pilot, "resume in claude")
        await pilot.pause(0.5)
        from textual.widgets import OptionList

        options = app.screen.query_one(OptionList)
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any(text.startswith("Resume in Claude Code: ") for text in shown), shown
        await pilot.press("enter")
        # (claude is not installed here: the line says so, and nothing ran)
        await until(pilot, lambda: any("RESUME_AGENT_NOT_INSTALLED" in str(n.message) for n in app._notifications))
    store.close()


async def test_in_the_app_a_session_whose_folder_is_gone_is_one_notice_and_nothing_else(
    demo_template: Path, tmp_path: Path
) -> None:
    from core.sessions.sources.claude import CLAUDE_PREFIX, ClaudeCodeSource
    from core.sessions.sources.codex import CodexSource
    from tests.support.external_fixtures import CLAUDE_UUID, seed_external

    claude, codex = tmp_path / "claude", tmp_path / "codex"
    seed_external(claude, codex, claude_cwd=str(tmp_path / "gone"))  # a folder that never exists
    app, store = open_app(demo_template, tmp_path / "store", external=(ClaudeCodeSource(claude), CodexSource(codex)))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, app.workspace.catalog_loaded.is_set)
        target = app.workspace.session.id
        app.chat.handoffs.hand_off(CLAUDE_PREFIX + CLAUDE_UUID, "sessionref")
        await until(pilot, lambda: any("HANDOFF_FOLDER_MISSING" in n.message for n in app._notifications))
        assert not isinstance(app.screen, HandoffScreen) and app.workspace.session.id == target
    store.close()
    assert not (tmp_path / "store" / SIDE_FILE).exists()  # nothing noted
