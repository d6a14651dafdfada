"""Pilot tests of the prompt's mention tokens (``tui.widgets.prompt``): one token the cursor steps over
and Backspace or Delete removes whole, highlighted.
"""

from __future__ import annotations

from core import (
    format_session_reference_mention,
)
from tests.support.app_harness import (
    SIZE,
    open_picker,
    settle,
    type_text,
)
from tui.app.sessionref_app import SessionRefApp

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
        chip = len(app.chat.prompt.document.get_line(0)) - len("a  b")  # the chip's length in the document
        app.chat.prompt.move_cursor((0, 2 + chip))
        await pilot.press("left")
        assert app.chat.prompt.cursor_location == (0, 2)
        await pilot.press("right")
        assert app.chat.prompt.cursor_location == (0, 2 + chip)
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
        line = app.chat.prompt.document.get_line(0)
        assert app.chat.prompt._highlights[0] == [(2, len(line.encode()), "mention")]  # the whole chip


async def test_the_prompt_shows_its_own_mode_in_its_title_and_border(app: SessionRefApp) -> None:
    """The screen tells the prompt what is going on (``mode``); the prompt alone sets its title and
    its ``-preparing`` / ``-compacting`` classes from it."""
    from core.agent.compaction import CompactionProgress
    from tui.widgets.prompt import PREPARING_TITLE, PROMPT_TITLE, PromptMode

    async with app.run_test(size=SIZE) as pilot:
        prompt = app.chat.prompt
        assert prompt.border_title == PROMPT_TITLE and not prompt.has_class("-preparing")
        prompt.mode = PromptMode(preparing=True)
        await pilot.pause()
        assert prompt.border_title == PREPARING_TITLE and prompt.has_class("-preparing")
        prompt.mode = PromptMode(preparing=True, compacting=CompactionProgress(part=2, parts=3, messages=40))
        await pilot.pause()
        assert prompt.has_class("-compacting") and not prompt.has_class("-preparing")
        assert str(prompt.border_title).startswith("Compacting")
        prompt.mode = PromptMode()
        await pilot.pause()
        assert prompt.border_title == PROMPT_TITLE and not prompt.has_class("-compacting")


async def test_widget_messages_name_their_widget_as_control(app: SessionRefApp) -> None:
    """Each widget message carries its widget as ``control``, so a screen routes it with
    ``@on(Message, "#id")``."""
    from tui.widgets.prompt import PromptArea

    async with app.run_test(size=SIZE):
        prompt = app.chat.prompt
        assert PromptArea.Submitted(prompt, "hi").control is prompt
        assert PromptArea.QueryChanged(prompt, None, 0).control is prompt
        assert app.chat.picker.Painted(app.chat.picker, 0.0).control is app.chat.picker
