"""Colours follow the theme: switching it (as Textual's command palette does) repaints every coloured
part the app's own code paints: the transcript's names, the prompt's mention, the preview's bars,
counts and badges. Nothing keeps the colours of the theme the app started with."""

from __future__ import annotations

from pathlib import Path

from rich.style import Style
from textual.markup import parse_style
from textual.theme import BUILTIN_THEMES

from core import format_session_reference_mention
from tests.support.app_harness import SIZE, open_app, settle, until
from tui.services.palette import STYLES, default_paint
from tui.widgets.preview import PreviewPane
from tui.widgets.transcript_blocks import AssistantBlock

ON_SCREEN = ("you", "assistant", "mention", "over", "caution", "fits", "badge-compacted", "badge-truncated")
"""The roles the scene below shows."""


def _hexes(style: Style) -> set[str]:
    return {color.triplet.hex for color in (style.color, style.bgcolor) if color is not None and color.triplet}


def _role_colours(theme: str) -> dict[str, set[str]]:
    variables = BUILTIN_THEMES[theme].to_color_system().generate()
    return {role: _hexes(parse_style(STYLES[role], variables).rich_style) for role in ON_SCREEN}


async def test_a_theme_switch_repaints_every_coloured_part(demo_template: Path, tmp_path: Path) -> None:
    app, _ = open_app(demo_template, tmp_path / "store")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        mention = format_session_reference_mention("retention-work", "Retention (compacted)")
        app.chat.prompt.load_text(f"what changed in {mention}")
        await pilot.press("enter")
        await until(pilot, lambda: app.trace.sent == 1 and app.workspace.agent.status == "idle")
        await until(pilot, lambda: app.chat.query(AssistantBlock) and not app.chat.transcript.streaming)
        for key in ["@", "l", "o", "a", "d"]:
            await pilot.press(key)
        await until(pilot, lambda: app.chat.picker.is_open and app.chat.picker.candidates)
        await pilot.press("tab")
        pane = app.chat.query_one(PreviewPane)
        await until(pilot, lambda: pane.report is not None and pane.report.cards)
        await pilot.pause()
        before = app.export_screenshot().lower()
        app.theme = "textual-light"
        await pilot.pause()
        await pilot.pause()
        after = app.export_screenshot().lower()

    dark, light = _role_colours("textual-dark"), _role_colours("textual-light")
    for role in ON_SCREEN:
        assert all(hex_ in before for hex_ in dark[role]), (role, dark[role])
        assert all(hex_ in after for hex_ in light[role]), (role, light[role])
    light_palette = {value.lower() for value in BUILTIN_THEMES["textual-light"].to_color_system().generate().values()}
    gone = set().union(*dark.values()) - set().union(*light.values()) - light_palette
    assert gone, "the two themes must differ for this test to say anything"
    for hex_ in gone:
        assert hex_ not in after, f"{hex_} of the dark theme is still painted after the switch"


def test_outside_an_app_the_roles_paint_in_the_default_dark_theme() -> None:
    variables = BUILTIN_THEMES["textual-dark"].to_color_system().generate()
    for role in STYLES:
        assert default_paint(role) == parse_style(STYLES[role], variables).rich_style
        assert _hexes(default_paint(role)), role  # every role has a colour
