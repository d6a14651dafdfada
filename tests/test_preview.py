"""Pilot tests of the live preview (``tui.widgets.live_preview``, ``tui.widgets.preview``): what
each reference sends, its problems in place, the model view, staleness.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core import (
    JsonlSessionStore,
    ReferenceConfig,
)
from tests.conftest import say_assistant, say_user
from tests.support.app_harness import (
    SIZE,
    fixed_clock,
    mention,
    open_app,
    open_picker,
    preview_of,
    preview_text,
    settle,
    type_text,
    until,
)
from tui.app.sessionref_app import SessionRefApp
from tui.cli.demo import DEMO_PROJECT
from tui.screens.dialogs import ViewerScreen
from tui.widgets.transcript_blocks import UserBlock

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


@pytest.mark.parametrize(
    ("draft", "code", "words"),
    [
        ("@[bad](dsh-session:!!)", "SESSION_REFERENCE_INVALID_REFERENCE", "malformed"),
        (mention("today"), "SESSION_REFERENCE_SELF_REFERENCE", "cannot reference itself"),
        (
            " ".join(mention(i) for i in ["design-notes", "retention-work", "pasted-web-page", "website-redesign"]),
            "SESSION_REFERENCE_TOO_MANY",
            "Too many",
        ),
        (mention("gone"), "SESSION_REFERENCE_READ_FAILED", "does not exist"),
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
        app.chat.prompt.load_text(mention("retention-work") + " " + mention("design-notes"))
        report = await preview_of(pilot)
        assert report.problem.code == "SESSION_REFERENCE_READ_FAILED"
        ok, broken = report.cards
        assert ok.problem is None and ok.session_id == "retention-work"
        assert broken.problem.code == "SESSION_REFERENCE_READ_FAILED" and "could not be read" in broken.problem.summary


async def test_a_budget_too_small_is_reported(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", config=ReferenceConfig(max_reference_bytes=16))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.chat.prompt.load_text(mention("design-notes"))
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


async def test_what_the_preview_shows_is_exactly_what_is_sent(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        draft = "diff " + mention("load-test-log", "Load test") + " and " + mention("pasted-web-page")
        app.chat.prompt.load_text(draft)
        report = await preview_of(pilot)
        expected = report.model_visible_text()
        await pilot.press("enter")
        await until(pilot, lambda: app.trace.sent == 1)
        prompt = next(e for e in app.workspace.session.events if e.type == "user/message")
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
        await until(pilot, lambda: app.trace.sent == 1 and app.workspace.agent.status == "idle")
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
