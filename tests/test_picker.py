"""Pilot tests of the `@` picker (``tui.widgets.session_picker``, ``tui.widgets.picker``): groups and
order, rows, filtering, keys, the mouse, escaping, superseded lookups.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from core import (
    format_session_reference_mention,
    parse_session_reference_text,
)
from tests.support.app_harness import (
    SIZE,
    open_picker,
    picker_ids,
    picker_rows,
    settle,
    type_text,
    until,
)
from tui.app.sessionref_app import SessionRefApp
from tui.widgets.picker import MentionPicker

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
        assert app.chat.prompt.cursor_location == (0, len(app.chat.prompt.document.get_line(0)))  # after the chip
        assert not app.chat.picker.is_open


async def test_tab_before_the_rows_of_what_was_typed_takes_theirs_not_the_stale_ones(app: SessionRefApp) -> None:
    # A fast typist: "@" shows every session ("Storage design" first), then "ret" and Tab come before
    # the rows for "ret" are in. Tab takes the first row for "ret", never the stale highlight.
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot)
        assert picker_ids(app)[0] == "design-notes"
        workspace = app.workspace
        search = workspace.search_sessions
        released = asyncio.Event()

        async def held_search(query: str, *args: Any, **kwargs: Any) -> Any:
            if query == "ret":
                await released.wait()  # the rows for "ret" come after the Tab
            return await search(query, *args, **kwargs)

        workspace.search_sessions = held_search  # type: ignore[method-assign]
        await pilot.press("r", "e", "t", "tab")
        assert app.chat.picker.is_open  # Tab waits for the rows of what was typed
        released.set()
        await until(pilot, lambda: not app.chat.picker.is_open)
        parsed = parse_session_reference_text(app.chat.prompt.text)
        assert [r.session_id for r in parsed.references] == ["retention-work"]


async def test_enter_accepts_the_highlighted_row_and_does_not_send(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot)
        await pilot.press("down", "enter")
        parsed = parse_session_reference_text(app.chat.prompt.text)
        assert [r.session_id for r in parsed.references] == ["retention-work"]
        assert app.trace.sent == 0


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
        # This folder: the id match, then a body match (the summary: "the ol*des*t"), then elsewhere
        # (the body match may come with the full answer that follows a keystroke's quick one).
        expected = ["design-notes", "retention-work", "website-redesign"]
        await until(pilot, lambda: picker_ids(app) == expected)


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
        index = app.workspace.body_index
        assert index is not None
        original = index.candidates
        signals: list[Any] = []

        def slow_first(needle: str, cap: Any = None, budget: Any = None) -> Any:
            if not signals:
                signals.append(app.chat.picker.lookup_abort.signal)
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
        assert picker_ids(app)[0] == "website-redesign"  # "webs" is in its title
