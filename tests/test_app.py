"""Pilot tests of the app: the picker, the preview, sending, the transcript and the sessions sidebar.

Every test runs the real app on a copy of the demo store on disk with a fixed clock.
"""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from core import (
    EchoModel,
    JsonlSessionStore,
    ModelError,
    ReferenceConfig,
    format_session_reference_mention,
    parse_session_reference_text,
)
from tests.app_harness import HOME, NOW, SIZE, fixed_clock, open_app, settle, until
from tests.conftest import say_assistant, say_user
from tui.app.sessionref_app import SessionRefApp
from tui.cli.demo import DEMO_PROJECT
from tui.screens.dialogs import RenameScreen, ViewerScreen
from tui.widgets.picker import MentionPicker
from tui.widgets.preview import PreviewPane, render_report
from tui.widgets.sidebar import SessionSidebar
from tui.widgets.tool_line import ToolLine
from tui.widgets.transcript import AssistantBlock, CheckpointBlock, NoteLine, UserBlock


@pytest.fixture
def app(demo_template: Path, tmp_path: Path) -> SessionRefApp:
    built, _ = open_app(demo_template, tmp_path / "store")
    return built


def picker_ids(app: SessionRefApp) -> list[str]:
    return [candidate.session_id for candidate in app.chat.picker.candidates]


def picker_rows(app: SessionRefApp) -> list[str]:
    return [row.text.rstrip() for row in app.chat.picker.rows]


async def type_text(pilot: Any, text: str) -> None:
    for character in text:
        await pilot.press("space" if character == " " else character)


async def open_picker(pilot: Any, query: str = "") -> None:
    app = pilot.app
    before = app.picker_updates
    await pilot.press("@", *query)
    await until(
        pilot, lambda: app.chat.picker.is_open and app.picker_updates > before and app.chat.picker.query_text == query
    )


async def preview_of(pilot: Any) -> Any:
    """The preview report once it matches the current draft."""
    app = pilot.app
    pane = app.chat.query_one(PreviewPane)
    await until(pilot, lambda: pane.report is not None and pane.report.draft == app.chat.prompt.text)
    return pane.report


# -- the picker -----------------------------------------------------------------------------------


async def test_at_opens_the_picker_in_contract_order_with_three_groups(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot)
        assert picker_ids(app) == [
            "design-notes",
            "retention-work",
            "load-test-log",
            "pasted-web-page",
            'odd/"id"\twith\x07control 😀',
            "website-redesign",
        ]
        rows = picker_rows(app)
        headings = [row for row in rows if row in ("This folder", "No folder", "Elsewhere")]
        assert headings == ["This folder", "No folder", "Elsewhere"]
        assert app.chat.picker.highlighted == 1  # the first candidate, below its heading


async def test_picker_rows_show_label_cwd_and_age(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot, "retention")
        row = app.chat.picker.rows[1].text
        assert row.split() == ["Retention", "(compacted)", "~/projects/sessionref", "3m"]
        assert len(row) == 61  # label, cwd and age columns line up on every row


async def test_query_filters_by_id_or_cwd_case_insensitively(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot, "WEB")
        assert picker_ids(app) == ["pasted-web-page", "website-redesign"]


async def test_picker_stays_closed_mid_word_after_a_quote_and_inside_a_token(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "mail@x")
        await pilot.pause(0.05)
        assert not app.chat.picker.is_open
        app.chat.prompt.load_text('say @"quoted')
        app.chat.prompt.move_cursor((0, 12))
        await pilot.pause(0.05)
        assert not app.chat.picker.is_open
        mention = format_session_reference_mention("design-notes", "Storage design")
        app.chat.prompt.load_text(mention)
        app.chat.prompt.move_cursor((0, len(mention)))
        await pilot.pause(0.05)
        assert not app.chat.picker.is_open


async def test_tab_accepts_and_places_the_cursor_after_mention_and_space(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "compare ")
        await open_picker(pilot, "ret")
        await pilot.press("tab")
        mention = format_session_reference_mention("retention-work", "Retention (compacted)")
        assert app.chat.prompt.text == f"compare {mention} "
        assert app.chat.prompt.cursor_location == (0, len(f"compare {mention} "))
        assert not app.chat.picker.is_open


async def test_enter_accepts_the_highlighted_row_and_does_not_send(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot)
        await pilot.press("down", "enter")
        parsed = parse_session_reference_text(app.chat.prompt.text)
        assert [r.session_id for r in parsed.references] == ["retention-work"]
        assert app.sent == 0


async def test_arrows_and_ctrl_n_ctrl_p_move_the_highlight_over_headings(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot)
        picker = app.chat.picker
        await pilot.press("ctrl+n", "ctrl+n", "ctrl+n")
        assert picker.highlighted_candidate.session_id == "pasted-web-page"  # skipped the "No folder" heading
        await pilot.press("ctrl+p")
        assert picker.highlighted_candidate.session_id == "load-test-log"
        await pilot.press("down", "up", "up")
        assert picker.highlighted_candidate.session_id == "retention-work"
        assert app.chat.prompt.text == "@"  # the keys never reached the prompt


async def test_escape_closes_and_the_picker_stays_closed_until_the_text_changes(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot, "de")
        await pilot.press("escape")
        assert not app.chat.picker.is_open
        await pilot.press("left", "right")  # same text before the cursor again
        await pilot.pause(0.05)
        assert not app.chat.picker.is_open
        await pilot.press("s")
        await until(pilot, lambda: app.chat.picker.is_open and app.chat.picker.query_text == "des")
        # This folder: the id match, then a body match (the summary: "the ol*des*t"), then elsewhere.
        assert picker_ids(app) == ["design-notes", "retention-work", "website-redesign"]


async def test_closed_picker_leaves_keys_to_the_prompt(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "ab")
        await pilot.press("ctrl+j")
        await type_text(pilot, "cd")
        await pilot.press("up")
        assert app.chat.prompt.text == "ab\ncd"
        assert app.chat.prompt.cursor_location[0] == 0


async def test_mouse_click_accepts_a_row(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot)
        picker = app.chat.picker
        await pilot.click(MentionPicker, offset=(5, 1 + 5))  # border row, then row 5 is "pasted-web-page"
        await pilot.pause()
        parsed = parse_session_reference_text(app.chat.prompt.text)
        assert [r.session_id for r in parsed.references] == ["pasted-web-page"]
        assert not picker.is_open


async def test_control_characters_are_escaped_in_rows_and_label_but_the_id_stays_raw(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot, "odd")
        row = app.chat.picker.rows[1].text
        assert row.startswith('odd/"id"\\x09with\\x07control 😀 ')
        await pilot.press("tab")
        parsed = parse_session_reference_text(app.chat.prompt.text)
        assert parsed.references[0].session_id == 'odd/"id"\twith\x07control 😀'
        assert parsed.references[0].label == 'odd/"id"\\x09with\\x07control 😀'
        assert "\x07" not in app.chat.prompt.text


async def test_superseded_lookups_are_aborted_and_dropped(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        index = app.body_index
        assert index is not None
        original = index.candidates
        signals: list[Any] = []

        def slow_first(needle: str, cap: Any = None, budget: Any = None) -> Any:
            if not signals:
                signals.append(app.chat.picker_control.lookup_abort.signal)
                time.sleep(0.5)
            return original(needle, cap, budget)

        index.candidates = slow_first  # type: ignore[method-assign]
        await type_text(pilot, "@web")
        await until(pilot, lambda: bool(signals))
        await pilot.press("s")
        await until(pilot, lambda: app.chat.picker.is_open and app.chat.picker.query_text == "webs")
        assert signals[0].aborted
        await pilot.pause(0.6)
        assert app.chat.picker.query_text == "webs"
        assert picker_ids(app) == ["website-redesign"]


# -- tokens ---------------------------------------------------------------------------------------


async def test_backspace_at_the_end_of_a_token_removes_the_whole_token(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "see ")
        await open_picker(pilot, "design")
        await pilot.press("tab", "backspace")  # the space
        assert app.chat.prompt.text.endswith(")")
        await pilot.press("backspace")
        assert app.chat.prompt.text == "see "


async def test_cursor_steps_over_a_token_and_delete_removes_it(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        mention = format_session_reference_mention("design-notes", "Storage design")
        app.chat.prompt.load_text(f"a {mention} b")
        app.chat.prompt.move_cursor((0, 2 + len(mention)))
        await pilot.press("left")
        assert app.chat.prompt.cursor_location == (0, 2)
        await pilot.press("right")
        assert app.chat.prompt.cursor_location == (0, 2 + len(mention))
        app.chat.prompt.move_cursor((0, 5))  # inside: snaps to the nearer edge
        assert app.chat.prompt.cursor_location == (0, 2)
        await pilot.press("delete")
        assert app.chat.prompt.text == "a  b"


async def test_mention_tokens_are_highlighted(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        mention = format_session_reference_mention("design-notes", "Storage design")
        app.chat.prompt.load_text(f"x {mention}")
        await pilot.pause()
        assert app.chat.prompt._highlights[0] == [(2, 2 + len(mention.encode()), "mention")]


# -- the preview ----------------------------------------------------------------------------------


async def test_preview_of_a_truncated_compacted_source(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot, "load")
        await pilot.press("tab")
        report = await preview_of(pilot)
        assert report.problem is None
        (card,) = report.cards
        assert card.session_id == "load-test-log"
        assert card.compacted and card.truncated
        assert card.original_messages == 201 and card.retained_messages < card.original_messages
        assert card.omitted_messages == card.original_messages - card.retained_messages
        assert card.omitted_bytes > 0
        assert card.size <= card.budget == 65536
        assert card.conversation[0]["text"].startswith("Checkpoint: runs 0-19")  # checkpoints are kept
        meta = report.contexts[0].meta["references"][0]
        assert (meta["retainedMessages"], meta["omittedBytes"]) == (card.retained_messages, card.omitted_bytes)
        body = preview_text(report)
        assert f"{card.retained_messages} of 201 messages kept" in body
        assert "compacted" in body and "truncated" in body and "/ 64.0 KiB" in body
        assert "≈" in body and "tokens" in body


async def test_preview_never_changes_the_draft(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        draft = "look @[x](dsh-session:!!) here"
        app.chat.prompt.load_text(draft)
        report = await preview_of(pilot)
        assert report.problem is not None
        assert app.chat.prompt.text == draft


def preview_text(report: Any) -> str:
    """The preview pane's content as plain text."""
    console = Console(width=60, record=True, file=io.StringIO())
    console.print(render_report(report, HOME))
    return console.export_text()


def _mention(session_id: str, label: str | None = None) -> str:
    return format_session_reference_mention(session_id, label)


@pytest.mark.parametrize(
    ("draft", "code", "words"),
    [
        ("@[bad](dsh-session:!!)", "SESSION_REFERENCE_INVALID_REFERENCE", "malformed"),
        (_mention("today"), "SESSION_REFERENCE_SELF_REFERENCE", "cannot reference itself"),
        (
            " ".join(_mention(i) for i in ["design-notes", "retention-work", "pasted-web-page", "website-redesign"]),
            "SESSION_REFERENCE_TOO_MANY",
            "Too many",
        ),
        (_mention("gone"), "SESSION_REFERENCE_READ_FAILED", "does not exist"),
    ],
)
async def test_each_preview_problem_is_shown_in_place_with_its_code(
    app: SessionRefApp, draft: str, code: str, words: str
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.chat.prompt.load_text(draft)
        report = await preview_of(pilot)
        assert report.problem.code == code
        body = preview_text(report)
        assert code in body and words in body


async def test_an_unreadable_source_is_shown_under_its_own_mention(demo_template: Path, tmp_path: Path) -> None:
    app, store = open_app(demo_template, tmp_path / "store")
    path = store.session_path("design-notes", DEMO_PROJECT)
    path.write_bytes(b"\x28\xb5\x2f\xfd garbage")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.chat.prompt.load_text(_mention("retention-work") + " " + _mention("design-notes"))
        report = await preview_of(pilot)
        assert report.problem.code == "SESSION_REFERENCE_READ_FAILED"
        ok, broken = report.cards
        assert ok.problem is None and ok.session_id == "retention-work"
        assert broken.problem.code == "SESSION_REFERENCE_READ_FAILED" and "could not be read" in broken.problem.summary


async def test_a_budget_too_small_is_reported(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", config=ReferenceConfig(max_reference_bytes=16))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.chat.prompt.load_text(_mention("design-notes"))
        report = await preview_of(pilot)
        assert report.problem.code == "SESSION_REFERENCE_BUDGET_EXCEEDED"
        assert report.cards[0].problem.code == "SESSION_REFERENCE_BUDGET_EXCEEDED"


async def test_model_view_shows_the_exact_model_visible_text(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "summarise ")
        await open_picker(pilot, "past")
        await pilot.press("tab")
        report = await preview_of(pilot)
        await pilot.press("f2")
        await until(pilot, lambda: isinstance(app.screen, ViewerScreen))
        text = app.screen.text
        assert text == report.model_visible_text()
        assert text.startswith("## Referenced sessions")
        assert "\n\n## My request:\nsummarise @Pasted web page (hostile) " in text
        assert text.count("</referenced-sessions>") == 1  # the hostile text cannot close the frame
        await pilot.press("escape")
        assert not isinstance(app.screen, ViewerScreen)


# -- sending --------------------------------------------------------------------------------------


async def test_send_writes_the_baked_event_and_streams_the_reply(demo_template: Path, tmp_path: Path) -> None:
    app, store = open_app(demo_template, tmp_path / "store")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "what did we decide in ")
        await open_picker(pilot, "design")
        await pilot.press("tab", "enter")
        await until(pilot, lambda: app.sent == 1 and app.agent.status == "idle")
        await until(pilot, lambda: app.chat.query(AssistantBlock))
        assert app.chat.prompt.text == ""
        (line,) = app.chat.query(ToolLine)  # the echo model read past the reference's first message
        assert line.summary == "· read_session · Storage design · messages 1–3 of 4 · 772 B"
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
        draft = "use " + _mention("gone")
        app.chat.prompt.load_text(draft)
        events_before = len(app.session.events)
        await pilot.press("enter")
        await until(pilot, lambda: app._notifications)
        assert app.chat.prompt.text == draft
        assert len(app.session.events) == events_before
        message = list(app._notifications)[-1].message
        assert "SESSION_REFERENCE_READ_FAILED" in message and "draft is kept" in message


async def test_escape_cancels_preparing_and_keeps_the_draft(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        release = asyncio.Event()
        original = app.catalog.read_surface

        async def stalled(session_id: str) -> Any:
            await release.wait()
            return await original(session_id)

        app.catalog.read_surface = stalled  # type: ignore[method-assign]
        draft = "slow " + _mention("design-notes")
        app.chat.prompt.load_text(draft)
        events_before = len(app.session.events)
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.preparing)
        assert app.chat.prompt.has_class("-preparing")
        await pilot.press("enter")  # a second send is refused
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.preparing)
        release.set()
        await pilot.pause(0.05)
        assert app.chat.prompt.text == draft
        assert len(app.session.events) == events_before
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

        app.catalog.read_surface = broken  # type: ignore[method-assign]
        draft = "x " + _mention("design-notes")
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
        await until(pilot, lambda: app.agent.status == "running")
        await type_text(pilot, "also ")
        await open_picker(pilot, "web")
        await pilot.press("tab", "enter")
        await until(pilot, lambda: app.sent == 2)
        assert app.agent.status == "running"
        await until(pilot, lambda: "Thinking" in app.chat.query(AssistantBlock).last().text)
        model.gate.set()
        await until(pilot, lambda: app.agent.status == "idle")
        steering = [e for e in app.session.events if e.type == "steering/message"]
        assert len(steering) == 1
        assert steering[0].data["envelope"]["displayContent"][0]["text"].startswith("also @")
        await until(pilot, lambda: any("steering" in str(b.render()) for b in app.chat.query(UserBlock)))


async def test_escape_stops_a_streaming_reply(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", model=EchoModel(delay=0.2))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "long")
        await pilot.press("enter")
        await until(pilot, lambda: app.agent.status == "running")
        await pilot.press("escape")
        await until(pilot, lambda: app.agent.status == "idle")
        end = [e for e in app.session.events if e.type == "turn/end"][-1]
        assert end.data["reason"] == {"kind": "aborted"}


class FailingModel:
    """A model whose API refuses the key."""

    name = "failing"
    provider = "test"

    async def stream(self, messages: list[dict[str, Any]], *, signal: Any) -> Any:
        raise ModelError("MODEL_UNAUTHORIZED", "the model API refused the key (HTTP 401)")
        yield {}


async def test_a_model_failure_is_notified_with_its_code(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", model=FailingModel())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await until(pilot, lambda: any("MODEL_UNAUTHORIZED" in n.message for n in app._notifications))
        end = [e for e in app.session.events if e.type == "turn/end"][-1]
        assert end.data["reason"]["code"] == "MODEL_UNAUTHORIZED"
        assert app.chat.prompt.text == ""  # the prompt itself was sent and recorded


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


# -- sessions -------------------------------------------------------------------------------------


async def test_sidebar_lists_every_session_in_groups_and_marks_the_current_one(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sidebar = app.chat.query_one(SessionSidebar)
        headings = [row.heading for row in sidebar.rows if row.heading is not None]
        assert headings == ["This folder (4)", "No folder (2)", "Elsewhere (1)"]
        today = sidebar.row_text(sidebar.index_of("today"))
        assert today.startswith("▸ Today") and today.endswith("1m")
        assert sidebar.row_text(sidebar.index_of("design-notes")).startswith("  Storage design")


async def test_choosing_a_session_in_the_sidebar_switches_the_target(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sidebar = app.chat.query_one(SessionSidebar)
        sidebar.focus()
        sidebar.highlight_id("load-test-log")
        await pilot.press("up", "up", "enter")  # from the load test up past the retention work
        await until(pilot, lambda: app.session.id == "design-notes")
        assert "Storage design" in app.sub_title
        assert len(app.chat.query(UserBlock)) == 2
        await settle(pilot)
        await open_picker(pilot)
        assert "design-notes" not in picker_ids(app) and "today" in picker_ids(app)


async def test_new_session_and_rename(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f3")
        await until(pilot, lambda: app.session.id != "today")
        assert app.session.cwd == DEMO_PROJECT and not app.chat.query(UserBlock)
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, RenameScreen))
        await type_text(pilot, "Fresh start")
        await pilot.press("enter")
        await until(pilot, lambda: app.session.title is not None)
        assert app.session.title.title == "Fresh start"
        assert "Fresh start" in app.sub_title


async def test_sessions_written_by_other_programs_show_up(app: SessionRefApp, tmp_path: Path) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        other = JsonlSessionStore(tmp_path / "store", clock=fixed_clock)
        outside = other.create("from-elsewhere", cwd=DEMO_PROJECT, created_at=NOW)
        outside.append("session/title", {"title": "Written outside", "messageSeqs": [], "source": "user"})
        other.close()
        app.refresh_catalog(force=True)
        sidebar = app.chat.query_one(SessionSidebar)

        def listed() -> bool:
            index = sidebar.index_of("from-elsewhere")
            return index is not None and "Written outside" in sidebar.row_text(index)

        await until(pilot, listed)


async def test_a_corrupt_session_is_listed_as_unreadable_and_the_app_keeps_working(
    demo_template: Path, tmp_path: Path
) -> None:
    app, store = open_app(demo_template, tmp_path / "store")
    store.session_path("website-redesign", "/home/demo/projects/website").write_bytes(b"not a log")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sidebar = app.chat.query_one(SessionSidebar)
        rows = [sidebar.row_text(i) for i in range(len(sidebar.rows))]
        assert "Unreadable (1)" in rows and any("✖ website-redesign" in row for row in rows)
        await open_picker(pilot)
        assert "website-redesign" not in picker_ids(app)


async def test_command_palette_offers_the_app_commands(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for title in ("New session", "Rename session", "Show model view", "Show what the model received"):
            assert title in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "CommandPalette"


async def test_the_command_palette_switches_to_a_session_by_title(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette")
        await type_text(pilot, "website")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await until(pilot, lambda: app.session.id == "website-redesign")
        assert "Website redesign" in app.sub_title


async def test_what_the_preview_shows_is_exactly_what_is_sent(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        draft = "diff " + _mention("load-test-log", "Load test") + " and " + _mention("pasted-web-page")
        app.chat.prompt.load_text(draft)
        report = await preview_of(pilot)
        expected = report.model_visible_text()
        await pilot.press("enter")
        await until(pilot, lambda: app.sent == 1)
        prompt = next(e for e in app.session.events if e.type == "user/message")
        sent = "".join(block["text"] for block in prompt.data["content"])
        assert sent == expected


async def test_a_referenced_session_that_moved_on_is_marked_in_the_transcript_and_the_preview(
    demo_template: Path, tmp_path: Path
) -> None:
    """The model holds the snapshot it was sent; when that session moves on, the transcript's
    "Referenced sessions" line says how, and so does the preview of a draft that mentions it again."""
    app, store = open_app(demo_template, tmp_path / "store", refresh_interval=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "summarise ")
        await open_picker(pilot, "design")
        await pilot.press("tab", "enter")
        await until(pilot, lambda: app.sent == 1 and app.agent.status == "idle")
        sent = app.chat.query(UserBlock).last()
        assert "newer" not in str(sent.render())
        other = JsonlSessionStore(tmp_path / "store", clock=fixed_clock)  # another process writes on
        later = other.get("design-notes")
        assert later is not None
        say_user(later, "one more thing")
        say_assistant(later, "noted")
        say_user(later, "and another")
        other.close()
        await until(pilot, lambda: "Storage design (design-notes) · 3 newer messages since" in str(sent.render()))
        await type_text(pilot, "again ")
        await open_picker(pilot, "design")
        await pilot.press("tab")
        report = await preview_of(pilot)
        (card,) = report.cards
        assert card.earlier is not None and card.earlier.endswith("· 3 newer messages since")
        assert card.earlier.startswith(f"referenced in message #{sent.event.seq} through #")
        assert "the model still holds that older snapshot" in preview_text(report)
    store.close()


def test_staleness_counts_the_messages_past_what_a_reference_captured() -> None:
    from core import MemorySessionStore
    from core.reference.staleness import moved_on_words, newer_messages

    source = MemorySessionStore(clock=lambda: 0).create("s")
    say_user(source, "one")
    snapshot = source.snapshot()
    captured = {"capturedThroughSeq": snapshot.captured_through_seq, "originalMessages": 1}
    assert newer_messages(captured, source.snapshot()) == 0 and moved_on_words(0) is None
    say_assistant(source, "two")
    say_user(source, "three")
    assert newer_messages(captured, source.snapshot()) == 2 and moved_on_words(2) == "2 newer messages since"
    assert newer_messages({"capturedThroughSeq": 0, "originalMessages": 9}, source.snapshot()) is None  # compacted
    assert moved_on_words(None) == "changed since (compacted)" and moved_on_words(1) == "1 newer message since"
