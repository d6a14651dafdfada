"""Hostile data in the real app: titles, ids and server errors are text, never markup or terminal control."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.command import CommandPalette
from textual.widgets import Input, OptionList

from core import JsonlSessionStore
from tests.conftest import say_user
from tests.support.app_harness import SIZE, open_app, settle, until
from tui.screens.dialogs import RenameScreen

CLICK = "[@click=app.quit]x[/]"
ESCAPES = "\x1b]52;c;aGVsbG8=\x07\x1b[2J\x1b[31mred\u202eevil\u2066"
RAW = set("\x1b\x07\u202e\u2066")


def hostile(store: JsonlSessionStore) -> None:
    for session_id, title in [("evil", CLICK), ("a[/]b", "[/]"), ("esc", ESCAPES), ("dollar", "[$accent]x[B]y")]:
        session = store.create(session_id, cwd="/home/demo/projects/sessionref")
        say_user(session, f"hello from {session_id}")
        session.append("session/title", {"title": title, "messageSeqs": [], "source": "user"})


async def test_the_palette_shows_hostile_titles_as_text_and_never_runs_them(
    demo_template: Path, tmp_path: Path
) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", setup=hostile)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(pilot, lambda: app.workspace.catalog.titles.title("evil") == CLICK)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.pause(0.3)  # the palette alone lists its discovery hits: the hostile titles among them
        assert app.is_running
        for key in "switch":
            await pilot.press(key)
        options = app.screen.query_one(OptionList)
        await until(pilot, lambda: options.option_count > 3)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        shown = "\n".join(prompts)
        assert f"Switch to: {CLICK}" in shown and "Switch to: [/]" in shown and "[$accent]x[B]y" in shown
        assert "a[/]b" in shown
        assert not RAW & set(shown)
        assert "\\x1b]52;c;aGVsbG8=\\x07" in shown and "\\u202e" in shown
        await pilot.press("escape")
        assert app.is_running


async def test_renaming_prefills_the_title_escaped_and_keeps_it_when_unchanged(
    demo_template: Path, tmp_path: Path
) -> None:
    app, _ = open_app(demo_template, tmp_path / "store", setup=hostile, session="esc")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, RenameScreen))
        field = app.screen.query_one(Input)
        assert not RAW & set(field.value) and "\\x1b[2J" in field.value
        await pilot.press("enter")
        await pilot.pause()
        assert (
            app.workspace.session.title is not None and app.workspace.session.title.title == ESCAPES
        )  # unchanged, not escaped


async def test_a_server_error_with_markup_is_shown_as_text(demo_template: Path, tmp_path: Path) -> None:
    from core import ModelError

    class Overloaded:
        name = "m"
        provider = "test"

        async def stream(self, messages: Any, *, signal: Any, max_tokens: int | None = None) -> Any:
            raise ModelError("the model API failed (HTTP 500): overloaded [/] \x1b[2J", "MODEL_SERVER_ERROR")
            yield {}

    app, _ = open_app(demo_template, tmp_path / "store", model=Overloaded())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.chat.prompt.load_text("hi")
        await pilot.press("enter")
        await until(pilot, lambda: any("overloaded" in n.message for n in app._notifications))
        await pilot.pause(0.2)
        assert app.is_running
        message = next(n.message for n in app._notifications if "overloaded" in n.message)
        assert "overloaded [/]" in message and "\x1b" not in message


async def test_an_unwritable_trace_file_does_not_stop_the_app_quitting(
    demo_template: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("SESSIONREF_TRACE", str(tmp_path / "no" / "such" / "folder" / "trace.json"))
    app, _ = open_app(demo_template, tmp_path / "store")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    assert app.return_code in (0, None)
