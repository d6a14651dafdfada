"""Pilot tests of sending (``tui.screens.sender``): the baked event, failures that keep the draft,
cancelling, steering, stopping a reply, a model's failure.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core import (
    EchoModel,
    JsonlSessionStore,
    ModelError,
)
from tests.support.app_harness import (
    SIZE,
    mention,
    open_app,
    open_picker,
    settle,
    type_text,
    until,
)
from tui.app.sessionref_app import SessionRefApp
from tui.widgets.tool_line import ToolLine
from tui.widgets.transcript_blocks import AssistantBlock, UserBlock

# -- sending --------------------------------------------------------------------------------------


async def test_send_writes_the_baked_event_and_streams_the_reply(demo_template: Path, tmp_path: Path) -> None:
    app, store = open_app(demo_template, tmp_path / "store")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "what did we decide in ")
        await open_picker(pilot, "design")
        await pilot.press("tab", "enter")
        await until(pilot, lambda: app.trace.sent == 1 and app.workspace.agent.status == "idle")
        await until(pilot, lambda: app.chat.query(AssistantBlock))
        assert app.chat.prompt.text == ""
        (line,) = app.chat.query(ToolLine)  # the echo model read past the reference's first message
        assert line.summary == "· read_session · Storage design · messages 1–3 of 4 · 897 B"
        you = app.chat.query(UserBlock).last()
        assert "what did we decide in @Storage design" in str(you.render())
        assert "Referenced sessions · Storage design (design-notes)" in str(you.render())
    store.close()
    reopened = JsonlSessionStore(tmp_path / "store")
    surface = (await reopened.read_surface("today")).events
    prompt = next(e for e in surface if e.type == "user/message")
    assert prompt.data["envelope"]["displayContent"] == [
        {"type": "text", "text": "what did we decide in @Storage design "}
    ]
    assert prompt.data["content"][-1]["text"] == "what did we decide in @Storage design "
    assert prompt.data["content"][-2]["text"] == "\n\n## My request:\n"
    # The echo model, offered the session tools, first read past the reference's first message...
    call, result = (e for e in surface if e.type in ("assistant/message", "tool/result") and e.seq < surface[-1].seq)
    assert call.data["content"][0]["name"] == "read_session"
    assert result.data["message"]["content"][0]["isError"] is False
    # ... then answered, saying what it read.
    reply = [e for e in surface if e.type == "assistant/message"][-1]
    assert "Storage design" in reply.data["content"][0]["text"]
    assert "With read_session I also read messages 1–" in reply.data["content"][0]["text"]


async def test_send_failure_keeps_the_draft_writes_nothing_and_notifies_the_code(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        draft = "use " + mention("gone")
        app.chat.prompt.load_text(draft)
        events_before = len(app.workspace.session.events)
        await pilot.press("enter")
        await until(pilot, lambda: app._notifications)
        assert app.chat.prompt.text == draft
        assert len(app.workspace.session.events) == events_before
        message = list(app._notifications)[-1].message
        assert "SESSION_REFERENCE_READ_FAILED" in message and "draft is kept" in message


async def test_escape_cancels_preparing_and_keeps_the_draft(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        release = asyncio.Event()
        original = app.workspace.catalog.read_surface

        async def stalled(session_id: str) -> Any:
            await release.wait()
            return await original(session_id)

        app.workspace.catalog.read_surface = stalled  # type: ignore[method-assign]
        draft = "slow " + mention("design-notes")
        app.chat.prompt.load_text(draft)
        events_before = len(app.workspace.session.events)
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.preparing)
        assert app.chat.prompt.has_class("-preparing")
        await pilot.press("enter")  # a second send is refused
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.preparing)
        release.set()
        await pilot.pause(0.05)
        assert app.chat.prompt.text == draft
        assert len(app.workspace.session.events) == events_before
        messages = [n.message for n in app._notifications]
        assert any("SESSION_REFERENCE_CANCELLED" in m for m in messages)
        assert any("Still preparing" in m for m in messages)


async def test_a_failed_send_restores_the_draft_when_the_prompt_was_emptied(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        release = asyncio.Event()

        async def broken(session_id: str) -> Any:
            await release.wait()
            raise OSError("disk went away")

        app.workspace.catalog.read_surface = broken  # type: ignore[method-assign]
        draft = "x " + mention("design-notes")
        app.chat.prompt.load_text(draft)
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.preparing)
        app.chat.prompt.clear()
        release.set()
        await until(pilot, lambda: not app.chat.preparing)
        assert app.chat.prompt.text == draft


class GatedModel:
    """Streams one piece, then waits for ``gate`` before finishing the reply."""

    name = "gated"
    provider = "test"

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def stream(self, messages: list[dict[str, Any]], *, signal: Any) -> Any:
        yield {"type": "text-delta", "index": 0, "text": "Thinking"}
        await self.gate.wait()
        yield {"type": "text-delta", "index": 0, "text": " … done."}


async def test_sending_while_a_reply_streams_writes_a_steering_message(demo_template: Path, tmp_path: Path) -> None:
    model = GatedModel()
    app, _ = open_app(demo_template, tmp_path / "store", model=model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "first")
        await pilot.press("enter")
        await until(pilot, lambda: app.workspace.agent.status == "running")
        await type_text(pilot, "also ")
        await open_picker(pilot, "web")
        await pilot.press("tab", "enter")
        await until(pilot, lambda: app.trace.sent == 2)
        assert app.workspace.agent.status == "running"
        await until(pilot, lambda: "Thinking" in app.chat.query(AssistantBlock).last().text)
        model.gate.set()
        await until(pilot, lambda: app.workspace.agent.status == "idle")
        steering = [e for e in app.workspace.session.events if e.type == "steering/message"]
        assert len(steering) == 1
        assert steering[0].data["envelope"]["displayContent"][0]["text"].startswith("also @")
        await until(pilot, lambda: any("steering" in str(b.render()) for b in app.chat.query(UserBlock)))


class EndlessModel(EchoModel):
    """A reply that streams until it is stopped (a short one could end before a busy test saw it run)."""

    async def stream(self, messages: Any, *, signal: Any, **_options: Any) -> Any:
        yield {"type": "text-delta", "index": 0, "text": "streaming"}
        while not signal.aborted:
            await asyncio.sleep(0.05)
            yield {"type": "text-delta", "index": 0, "text": "."}


async def test_escape_stops_a_streaming_reply(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", model=EndlessModel())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "long")
        await pilot.press("enter")
        await until(pilot, lambda: app.workspace.agent.status == "running", timeout=30)
        await pilot.press("escape")
        await until(pilot, lambda: app.workspace.agent.status == "idle", timeout=30)
        end = [e for e in app.workspace.session.events if e.type == "turn/end"][-1]
        assert end.data["reason"] == {"kind": "aborted"}


class FailingModel:
    """A model whose API refuses the key."""

    name = "failing"
    provider = "test"

    async def stream(self, messages: list[dict[str, Any]], *, signal: Any) -> Any:
        raise ModelError("the model API refused the key (HTTP 401)", "MODEL_UNAUTHORIZED")
        yield {}


async def test_a_model_failure_is_notified_with_its_code(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", model=FailingModel())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await until(pilot, lambda: any("MODEL_UNAUTHORIZED" in n.message for n in app._notifications))
        end = [e for e in app.workspace.session.events if e.type == "turn/end"][-1]
        assert end.data["reason"]["code"] == "MODEL_UNAUTHORIZED"
        assert app.chat.prompt.text == ""  # the prompt itself was sent and recorded
