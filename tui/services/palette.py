"""Colours in one place: every coloured style the app's Python code paints with, named by role and
written in the theme's design tokens, so a theme switch (or a light terminal's theme) repaints them.

Widgets' CSS uses the same tokens directly. Text built as ``Content`` takes ``STYLES[role]`` as it is
(Textual resolves the variables at render); Rich renderables take a ``Paint``, which resolves a role
under the app's current theme (``theme_paint``) or, outside any app, under the default dark theme.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from rich.style import Style
from textual.app import App
from textual.markup import parse_style
from textual.theme import BUILTIN_THEMES

STYLES: dict[str, str] = {
    "you": "bold $text-primary",  # the user's name over their prompts, and their role in a preview
    "assistant": "bold $text-accent",  # the assistant's name over its replies, and its role in a preview
    "steering": "italic $text-warning",  # a prompt sent while the reply streamed
    "mention": "bold $text-primary",  # a mention token in the prompt
    "problem": "bold $text-error",  # what stops a send
    "caution": "$text-warning",  # what a send will cut or compact
    "fits": "$text-success",  # a budget or window bar with room left
    "over": "$text-error",  # a budget or window bar that is full
    "badge-compacted": "bold $background on $primary",
    "badge-truncated": "bold $background on $warning",
}
"""Role → style, in Textual's style syntax over the theme's variables."""

Paint = Callable[[str], Style]
"""A role's Rich style under one theme."""

DEFAULT_THEME = "textual-dark"


@cache
def default_paint(role: str) -> Style:
    """A role's Rich style under the default dark theme (for text rendered outside any app)."""
    return parse_style(STYLES[role], _default_variables()).rich_style


@cache
def _default_variables() -> dict[str, str]:
    return BUILTIN_THEMES[DEFAULT_THEME].to_color_system().generate()


def theme_paint(app: App[object]) -> Paint:
    """The roles under ``app``'s current theme (its stylesheet caches the parse until the theme changes)."""
    parse = app.stylesheet.parse_style
    return lambda role: parse(STYLES[role]).rich_style
