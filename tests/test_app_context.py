"""A chat that lasts: real turns typed into the app, each referencing three 64 KiB sessions, against a
local server with a finite window (DeepSeek's counting rule and error text)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from core import JsonlSessionStore, OpenAICompatibleModel, format_session_reference_mention
from core.agent.defaults import CompactionPolicy
from core.agent.loop import ContextSettings
from core.agent.tokens import WindowMemory
from tests.conftest import say_assistant, say_user
from tests.support.app_harness import SIZE, open_app, settle, until
from tests.support.fake_deepseek import FakeDeepSeek
from tests.support.rc8 import NODE, dsh
from tui.app.sessionref_app import SessionRefApp
from tui.widgets.preview import PreviewPane
from tui.widgets.transcript_blocks import AssistantBlock, CheckpointBlock

BIG = ("big-one", "big-two", "big-three")


def write_big_sources(store: JsonlSessionStore) -> None:
    """Three sessions of ~150 KB each: every one is cut to its 64 KiB budget when referenced."""
    for number, session_id in enumerate(BIG):
        session = store.create(session_id, cwd="/home/demo/projects/sessionref")
        for index in range(60):
            say_user(session, f"{session_id} question {index}: " + f"detail {number}-{index} " * 120)
            say_assistant(session, f"{session_id} answer {index}: " + f"finding {number}-{index} " * 100)
        session.append("session/title", {"title": session_id.title(), "messageSeqs": [], "source": "user"})


def draft(turn: int) -> str:
    mentions = " ".join(format_session_reference_mention(session_id, session_id) for session_id in BIG)
    return f"turn {turn}: compare {mentions} and tell me what changed"


async def send(pilot: Any, app: SessionRefApp, text: str) -> None:
    prompt = app.chat.prompt
    prompt.load_text(text)
    prompt.move_cursor(prompt.document.end)
    await pilot.press("enter")
    await until(
        pilot,
        lambda: app.trace.sent > 0 and app.workspace.agent.status == "idle" and not app.chat.preparing,
        timeout=30,
    )


async def chat_for(
    pilot: Any, app: SessionRefApp, server: FakeDeepSeek, turns: int
) -> None:  # the whole conversation, turn by turn
    await settle(pilot)
    for turn in range(turns):
        sent = app.trace.sent
        await send(pilot, app, draft(turn))
        assert app.trace.sent == sent + 1, f"turn {turn} was not sent"
        assert app.workspace.agent.last_error is None, app.workspace.agent.last_error
    ends = [event for event in app.workspace.session.events if event.type == "turn/end"]
    assert len(ends) == turns and all(event.data["reason"] == {"kind": "completed"} for event in ends)
    assert len(server.answered) >= turns


def checkpoints(app: SessionRefApp) -> list[Any]:
    return [event for event in app.workspace.session.events if event.type == "compaction/summary"]


@pytest.fixture
def app_on(demo_template: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    def build(server: FakeDeepSeek, context: ContextSettings, name: str = "deepseek-chat") -> SessionRefApp:
        model = OpenAICompatibleModel(base_url=server.base_url, api_key="sk-long-chat", model=name, timeout=30)
        app, _ = open_app(demo_template, tmp_path / "store", model=model, setup=write_big_sources)
        app.workspace.context_settings = context
        app.workspace.agents.clear()
        app.workspace.agent = app.workspace.agent_for(app.workspace.session)
        return app

    return build


@pytest.mark.long
async def test_fifty_turns_with_three_64_kib_references_each_in_a_128k_window(app_on: Any, tmp_path: Path) -> None:
    with FakeDeepSeek(window=131_072) as server:
        app = app_on(server, ContextSettings(memory=WindowMemory(tmp_path / "windows.json")))
        async with app.run_test(size=SIZE) as pilot:
            await chat_for(pilot, app, server, 50)
            assert app.workspace.agent.window.tokens == 131_072 and app.workspace.agent.window.source == "built-in"
            # Every turn answered, no request over the window, never a refusal.
            assert not [request for request in server.requests if request.refused]
            assert max(request.prompt_tokens for request in server.requests) <= 131_072
            assert checkpoints(app)
            assert any(note.title == "Compacted" for note in app._notifications)  # said, not silent
            # Each referenced source really was ~64 KiB (the point of the test).
            last = next(
                e for e in reversed(app.workspace.session.events) if e.type == "user/message" and "envelope" in e.data
            )
            stats = last.data["envelope"]["prefixContexts"][0]["meta"]["references"]
            assert [entry["truncated"] for entry in stats] == [True, True, True]
            await until(pilot, lambda: app.chat.query(CheckpointBlock))
            assert "messages compacted" in str(app.chat.query(CheckpointBlock).last().border_title)
            # Usage is shown under the replies.
            assert app.chat.query(AssistantBlock).last().usage is not None
            surface = [event.seq for event in app.workspace.session.surface()]
            history = [
                (message["role"], "".join(b["text"] for b in message["content"] if b["type"] == "text"))
                for message in app.workspace.session.derive_messages()
            ]
        app.workspace.store.close()
    # dsh rc.8 loads the log of those 50 turns: its session layer accepts it and folds the same surface.
    if NODE is not None:
        root = str(tmp_path / "store")
        loaded = dsh("load", root=root, compression="zstd", ids=["today"])["today"]
        assert loaded["inspect"]["ok"], loaded["inspect"]
        assert loaded["inspect"]["types"].count("compaction/summary") == len(checkpoints(app))
        folded = dsh("surface", root=root, compression="zstd", id="today")
        assert folded["nodes"] == surface
        assert [(message["role"], message["text"]) for message in folded["messages"]] == history


@pytest.mark.long
async def test_the_same_when_the_app_learns_the_window_only_from_the_400(app_on: Any, tmp_path: Path) -> None:
    # The app assumes 131,072 tokens for a model it does not know; the server has 100,000. A
    # threshold of 0.95 lets the second turn go out at ~118k: the server refuses it, the app learns
    # 100,000, compacts inside the turn and retries; every later send compacts before it goes.
    memory = WindowMemory(tmp_path / "windows.json")
    with FakeDeepSeek(window=100_000) as server:
        context = ContextSettings(memory=memory, policy=CompactionPolicy(threshold_ratio=0.95))
        app = app_on(server, context, name="local-model")
        async with app.run_test(size=SIZE) as pilot:
            assert app.workspace.agent.window.source == "assumed"
            await chat_for(pilot, app, server, 50)
            refused = [request for request in server.requests if request.refused]
            assert len(refused) == 1
            assert app.workspace.agent.window.tokens == 100_000 and app.workspace.agent.window.source == "learned"
            accepted = [request for request in server.requests if not request.refused]
            assert max(request.prompt_tokens for request in accepted) <= 100_000
            assert checkpoints(app)
    assert WindowMemory(tmp_path / "windows.json").get(server.base_url, "local-model") == 100_000


async def test_a_draft_that_cannot_fit_is_explained_and_enter_refuses(app_on: Any, tmp_path: Path) -> None:
    with FakeDeepSeek(window=32_768) as server:
        app = app_on(server, ContextSettings(window=32_768), name="small-model")
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            prompt = app.chat.prompt
            prompt.load_text(draft(0))
            pane = app.chat.query_one(PreviewPane)
            await until(pilot, lambda: pane.report is not None and pane.report.draft == prompt.text, timeout=10)
            await until(pilot, lambda: pane.report.context is not None)
            context = pane.report.context
            assert not context.fits and "CONTEXT_PROMPT_TOO_LARGE" in context.refusal()
            count = len(app.workspace.session.events)
            await pilot.press("enter")
            await until(pilot, lambda: not app.chat.preparing and list(app._notifications), timeout=10)
            await pilot.pause(0.2)
            assert len(app.workspace.session.events) == count and not server.requests
            assert prompt.text == draft(0)  # the draft is kept
            assert any("CONTEXT_PROMPT_TOO_LARGE" in str(note.message) for note in app._notifications)


async def test_compact_on_demand_from_the_key_with_progress_and_escape(app_on: Any, tmp_path: Path) -> None:
    with FakeDeepSeek(window=131_072, delay=0.05) as server:
        app = app_on(server, ContextSettings())
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            for turn in range(2):
                await send(pilot, app, f"plain question {turn} " + "words " * 400)
            before = len(app.workspace.session.events)
            await pilot.press("f8")
            await until(pilot, lambda: "Compacting" in str(app.chat.prompt.border_title), timeout=10)
            await pilot.press("escape")
            await until(pilot, lambda: app.workspace.agent.status == "idle", timeout=10)
            assert len(app.workspace.session.events) == before  # cancelled: nothing written
            await pilot.press("f8")
            await until(pilot, lambda: checkpoints(app), timeout=10)
            await until(pilot, lambda: app.chat.query(CheckpointBlock))
            # The older exchange is summarized; the newer one is kept verbatim (within 16% of the window).
            assert app.chat.query_one(CheckpointBlock).border_title == "Checkpoint · 2 messages compacted"


def test_the_key_never_reaches_a_file(tmp_path: Path) -> None:
    # The window memory holds URLs and numbers only.
    memory = WindowMemory(tmp_path / "w.json")
    memory.learn("http://u:sk-secret@127.0.0.1:9/v1", "m", 10)
    assert "sk-secret" not in (tmp_path / "w.json").read_text()
    assert os.stat(tmp_path / "w.json").st_mode & 0o077 == 0
