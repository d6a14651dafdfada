"""Pilot tests of the transcript (``tui.widgets.transcript``): tool results and injected context as one
line each, checkpoints, what the model received.
"""

from __future__ import annotations

from pathlib import Path

from core import (
    JsonlSessionStore,
)
from tests.support.app_harness import (
    NOW,
    SIZE,
    open_app,
    settle,
    until,
)
from tui.cli.demo import DEMO_PROJECT
from tui.screens.dialogs import ViewerScreen
from tui.widgets.tool_line import ToolLine
from tui.widgets.transcript_blocks import AssistantBlock, CheckpointBlock, NoteLine, UserBlock

# -- transcript -----------------------------------------------------------------------------------


def _with_tools(store: JsonlSessionStore) -> None:
    session = store.create("tool-run", cwd=DEMO_PROJECT, created_at=NOW)
    session.append(
        "user/message",
        {"content": [{"type": "text", "text": "list files"}], "source": {"kind": "user"}},
        surface_op="append",
    )
    session.append(
        "user/message",
        {
            "content": [{"type": "text", "text": "workspace: 3 files"}],
            "source": {"kind": "plugin", "plugin": "workspace"},
        },
        surface_op="append",
    )
    result = {
        "turn": 0,
        "step": 0,
        "callId": "call-1",
        "content": [{"type": "text", "text": "a.py b.py"}],
        "isError": False,
    }
    session.append("tool/result", result, surface_op="append")
    session.append(
        "assistant/message",
        {"turn": 0, "step": 1, "content": [{"type": "text", "text": "Two **Python** files."}]},
        surface_op="append",
    )


async def test_tool_results_and_injected_context_are_one_dim_line_each(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", session="tool-run", setup=_with_tools)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        notes = [str(note.render()) for note in app.chat.query(NoteLine)]
        assert notes == ["· context from workspace"]
        (line,) = app.chat.query(ToolLine)
        assert str(line.render()) == "· tool · 9 B"  # a dsh log's result whose call is not in the log
        assert app.chat.query(AssistantBlock).last().text == "Two **Python** files."
        line.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ViewerScreen))
        assert app.screen.text == "tool()\n\nResult:\na.py b.py"


async def test_transcript_replays_checkpoints_and_shows_what_the_model_received(
    demo_template: Path, tmp_path: Path
) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", session="retention-work")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        transcript = app.chat.query_one("#transcript")
        assert len(transcript.query(CheckpointBlock)) == 1
        assert "Early question" not in " ".join(str(w.render()) for w in transcript.children)
        you = transcript.query(UserBlock).first()
        you.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ViewerScreen))
        assert app.screen.text == "After compaction: does the notice count bytes exactly?"
