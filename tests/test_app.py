"""Pilot tests of the app's sessions: the sidebar, switching, new and rename, sessions other programs
write, the command palette.

Every test runs the real app on a copy of the demo store on disk with a fixed clock.
"""

from __future__ import annotations

from pathlib import Path

from core import (
    JsonlSessionStore,
)
from tests.conftest import say_user
from tests.support.app_harness import (
    NOW,
    SIZE,
    fixed_clock,
    open_app,
    open_picker,
    picker_ids,
    settle,
    type_text,
    until,
)
from tui.app.sessionref_app import SessionRefApp
from tui.cli.demo import DEMO_PROJECT
from tui.screens.dialogs import RenameScreen
from tui.widgets.sidebar import SessionSidebar
from tui.widgets.transcript_blocks import UserBlock

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
        await until(pilot, lambda: app.workspace.session.id == "design-notes")
        assert "Storage design" in app.screen.sub_title
        assert len(app.chat.query(UserBlock)) == 2
        await settle(pilot)
        await open_picker(pilot)
        assert "design-notes" not in picker_ids(app) and "today" in picker_ids(app)


async def test_the_transcript_follows_the_session_it_shows_and_lets_go_of_the_one_it_left(
    app: SessionRefApp,
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = app.workspace.session
        listening = len(first.appended._listeners)
        assert listening >= 1  # (the transcript among them)
        before = len(app.chat.query(UserBlock))
        say_user(first, "written by another part of the app")
        await until(pilot, lambda: len(app.chat.query(UserBlock)) == before + 1)  # shown without anyone asking
        app.chat.switch_to("design-notes")
        await until(pilot, lambda: app.workspace.session.id == "design-notes")
        assert len(first.appended._listeners) == listening - 1  # it let go of the session it left
        second = app.workspace.session
        following = len(second.appended._listeners)
    assert len(second.appended._listeners) == following - 1  # and of this one when it went away


async def test_new_session_and_rename(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f3")
        await until(pilot, lambda: app.workspace.session.id != "today")
        assert app.workspace.session.cwd == DEMO_PROJECT and not app.chat.query(UserBlock)
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, RenameScreen))
        await type_text(pilot, "Fresh start")
        await pilot.press("enter")
        await until(pilot, lambda: app.workspace.session.title is not None)
        assert app.workspace.session.title.title == "Fresh start"
        assert "Fresh start" in app.screen.sub_title


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
        titles = [command.title for command in app.chat.palette_commands()]
        for title in ("New session", "Rename session", "Show model view", "Show what the model received"):
            assert title in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "CommandPalette"
        await type_text(pilot, "rename sess")
        await pilot.pause(0.5)
        await pilot.press("enter")  # the chat screen's own command, found by the palette
        await until(pilot, lambda: app.screen.__class__.__name__ == "RenameScreen")


async def test_the_command_palette_switches_to_a_session_by_title(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette")
        await type_text(pilot, "website")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await until(pilot, lambda: app.workspace.session.id == "website-redesign")
        assert "Website redesign" in app.screen.sub_title
