"""Mention chips in the prompt (``tui.services.chips``, ``tui.widgets.prompt``): the prompt shows
``@Label`` where the draft holds the canonical mention, and every editing rule treats a chip as one
unit, while what is sent, copied and stored stays the canonical text byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import TextArea

from core import format_session_reference_mention, js_json_stringify
from tests.support.app_harness import SIZE, open_app, open_picker, settle, type_text, until
from tui.app.sessionref_app import SessionRefApp
from tui.services.chips import LABEL_CELLS, ChipBook, strip_marks

DESIGN = format_session_reference_mention("design-notes", "Storage design")


def _cursor_after_chip(prompt: Any) -> int:
    """Load ``a <chip> b`` and put the cursor just after the chip; the chip's end column."""
    prompt.load_text(f"a {DESIGN} b")
    end = len(prompt.document.get_line(0)) - 2
    prompt.move_cursor((0, end))
    return int(end)


async def test_an_accepted_candidate_shows_as_its_label_and_the_draft_stays_canonical(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "see ")
        await open_picker(pilot, "design")
        await pilot.press("tab")
        prompt = app.chat.prompt
        assert prompt.shown_text == "see @Storage design "
        assert "dsh-session:" not in prompt.shown_text
        assert prompt.text == f"see {DESIGN} "


async def test_backspace_delete_and_the_cursor_treat_a_chip_as_one_unit(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = app.chat.prompt
        end = _cursor_after_chip(prompt)
        await pilot.press("left")
        assert prompt.cursor_location == (0, 2)
        await pilot.press("right")
        assert prompt.cursor_location == (0, end)
        await pilot.press("backspace")
        assert prompt.text == "a  b" and prompt.shown_text == "a  b"
        prompt.load_text(f"a {DESIGN} b")
        prompt.move_cursor((0, 2))
        await pilot.press("delete")
        assert prompt.text == "a  b"


async def test_a_selection_that_covers_part_of_a_chip_covers_all_of_it(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = app.chat.prompt
        end = _cursor_after_chip(prompt)
        await pilot.press("shift+left")
        assert prompt.selection.start == (0, end) and prompt.selection.end == (0, 2)
        assert prompt.chips.canonical(prompt.selected_text) == DESIGN
        prompt.selection = prompt.selection.__class__((0, 0), (0, 4))  # into the chip from the left
        assert prompt.selection.end == (0, end)


async def test_undo_and_redo_bring_a_chip_back_whole(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "see ")
        await open_picker(pilot, "design")
        await pilot.press("tab", "backspace", "backspace")  # the space, then the chip
        prompt = app.chat.prompt
        assert prompt.text == "see "
        await pilot.press("ctrl+z")  # back come the chip (and the space, typed in the same burst)
        assert prompt.text.rstrip() == f"see {DESIGN}" and prompt.shown_text.rstrip() == "see @Storage design"
        await pilot.press("ctrl+y")
        assert prompt.text == "see "


async def test_a_mention_typed_by_hand_becomes_a_chip_once_it_parses(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = app.chat.prompt
        await type_text(pilot, DESIGN[:-1])
        assert "dsh-session:" in prompt.shown_text  # not yet a mention: plain text
        await pilot.press(")")
        assert prompt.shown_text == "@Storage design" and prompt.text == DESIGN
        prompt.load_text("")
        await type_text(pilot, "@[x](dsh-session:!!)")  # does not parse: stays text, one token
        assert prompt.shown_text == prompt.text == "@[x](dsh-session:!!)"
        report = await _preview(pilot)
        assert report.problem is not None and report.problem.code == "SESSION_REFERENCE_INVALID_REFERENCE"


async def _preview(pilot: object) -> object:
    from tui.widgets.preview import PreviewPane

    app = pilot.app  # type: ignore[attr-defined]
    pane = app.chat.query_one(PreviewPane)
    await until(pilot, lambda: pane.report is not None and pane.report.draft == app.chat.prompt.text)  # type: ignore[arg-type]
    return pane.report


async def test_copy_gives_the_canonical_text_and_paste_gives_chips(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = app.chat.prompt
        prompt.load_text(f"compare {DESIGN} now")
        prompt.select_all()
        prompt.action_copy()
        assert app.clipboard == f"compare {DESIGN} now"
        prompt.load_text("")
        app.post_message(events.Paste(f"again {DESIGN}"))  # as the terminal driver hands a paste over
        await pilot.pause()
        assert prompt.shown_text == "again @Storage design" and prompt.text == f"again {DESIGN}"
        prompt.action_paste()  # the app's own clipboard
        assert prompt.text == f"again {DESIGN}compare {DESIGN} now"
        prompt.select_all()
        prompt.action_cut()
        assert app.clipboard == f"again {DESIGN}compare {DESIGN} now" and prompt.text == ""


async def test_badges_long_labels_and_hostile_labels(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = app.chat.prompt
        prompt.badge_of = lambda session_id: (
            "@bob" if session_id == "shared" else "CC" if session_id == "claude:x" else None
        )
        long = "A label that goes on and on well past what a chip shows"
        hostile = "evil\x1b[31m\u202e[b]bold[/b]\U000e0001"
        mentions = [
            format_session_reference_mention("shared", "Plan"),
            format_session_reference_mention("claude:x", "Fix"),
            format_session_reference_mention("long", long),
            format_session_reference_mention("hostile", hostile),
        ]
        prompt.load_text(" ".join(mentions))
        shown = prompt.shown_text
        assert shown.startswith("@Plan @bob @Fix CC @A label that goes on")
        cut = shown[len("@Plan @bob @Fix CC @") :].split(" @evil")[0]
        assert cut.endswith("…") and len(cut) == LABEL_CELLS and long.startswith(cut[:-1])
        assert "\x1b" not in shown and "\u202e" not in shown and "\\x1b" in shown
        assert prompt.text == " ".join(mentions)  # the canonical text keeps each label whole


def test_forged_marks_in_pasted_text_make_no_chip() -> None:
    book = ChipBook()
    real = book.chip(DESIGN, "Storage design")
    forged = real.replace("Storage design", "Something else")
    assert book.canonical(forged) == DESIGN  # a chip of this book: its number finds its text
    other = ChipBook()
    assert other.canonical(real) == "@Storage design"  # another prompt's marks are dropped
    assert strip_marks(other.chipify(real)) == "@Storage design"


async def test_sending_a_draft_with_chips_stores_the_same_bytes_as_the_canonical_draft(
    demo_template: Path, tmp_path: Path
) -> None:
    stored = []
    for number, chips in enumerate((True, False)):
        app, _ = open_app(demo_template, tmp_path / f"store-{number}")
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            if chips:
                await type_text(pilot, "compare ")
                await open_picker(pilot, "design")
                await pilot.press("tab")
                await type_text(pilot, "please")
            else:  # as the prompt held it before chips: the canonical text itself
                TextArea.load_text(app.chat.prompt, f"compare {DESIGN} please")
            await pilot.press("enter")
            await until(pilot, lambda: app.trace.sent == 1 and app.workspace.agent.status == "idle", timeout=20)  # noqa: B023
            prompt_event = next(event for event in app.workspace.session.events if event.type == "user/message")
            stored.append(js_json_stringify(prompt_event.data))
    assert stored[0] == stored[1]
    assert '"sessionId":"design-notes"' in stored[0] and strip_marks(stored[0]) == stored[0]


async def test_deleting_a_word_or_a_line_part_takes_a_chip_whole_and_leaves_no_marks(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = app.chat.prompt
        retention = format_session_reference_mention("retention-work", "Retention (compacted)")
        prompt.load_text(f"see {retention}")
        prompt.move_cursor(prompt.document.end)
        await pilot.press("ctrl+w")  # the word before the cursor is the chip's last word
        assert prompt.text == "see " and strip_marks(prompt.document.text) == prompt.document.text
        prompt.load_text(f"see {retention} now")
        prompt.move_cursor((0, 4))
        await pilot.press("ctrl+k")  # to the end of the line: the chip goes whole
        assert prompt.text == "see "
        prompt.load_text(f"{retention} and more")
        prompt.move_cursor(prompt.document.end)
        await pilot.press("ctrl+u")  # to the start of the line
        assert prompt.text == ""


async def test_a_mouse_drag_into_a_chip_selects_all_of_it(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = app.chat.prompt
        prompt.load_text(f"see {DESIGN} now")
        await pilot.pause()
        region = prompt.content_region
        await pilot.mouse_down(prompt, offset=(region.x - prompt.region.x, region.y - prompt.region.y))
        await pilot.hover(prompt, offset=(region.x - prompt.region.x + 8, region.y - prompt.region.y))
        await pilot.mouse_up(prompt, offset=(region.x - prompt.region.x + 8, region.y - prompt.region.y))
        await pilot.pause()
        assert prompt.chips.canonical(prompt.selected_text) == f"see {DESIGN}"


def test_what_is_left_of_a_broken_chip_never_reaches_the_draft_and_emoji_flags_stay() -> None:
    book = ChipBook()
    chip = book.chip(DESIGN, "Storage design")
    assert book.canonical("a " + chip[:-3] + " b") == "a @Storage desi b"  # its end cut off
    scotland = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"
    assert book.canonical(f"{scotland} {chip}") == f"{scotland} {DESIGN}"


async def test_no_sequence_of_edits_leaves_a_mark_in_the_draft(app: SessionRefApp) -> None:
    """A seeded random walk over the keys that edit (and undo/redo), with chips pasted in between:
    after every key the draft holds no chip mark, and every chip left is whole (its text canonical)."""
    import random

    from tui.services.chips import CLOSE, OPEN

    rng = random.Random(35)
    keys = ["left", "right", "backspace", "delete", "ctrl+w", "ctrl+k", "ctrl+u", "shift+left", "shift+right",
            "home", "end", "x", "space", "ctrl+z", "ctrl+y", "ctrl+j"]  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = app.chat.prompt
        prompt.load_text(f"a {DESIGN} b {DESIGN}")
        for step in range(160):
            if step % 20 == 0:
                app.post_message(events.Paste(f" {DESIGN} "))
            await pilot.press(rng.choice(keys))
            draft = prompt.text
            assert OPEN not in draft and CLOSE not in draft, (step, draft)
            for chip in prompt.chips.chips_of(prompt.document.text):
                assert chip.canonical == DESIGN
