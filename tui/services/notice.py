"""``Notice``: what a part of the app has to tell the user, as data; the screen or the app shows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.app import App
from textual.notifications import SeverityLevel


@dataclass(frozen=True, slots=True)
class Notice:
    """A notification's words (plain text: the app never parses a notification as markup)."""

    message: str
    title: str = ""
    severity: SeverityLevel = "information"
    timeout: float | None = None
    """Seconds it shows (``None``: Textual's default)."""

    def show(self, app: App[Any]) -> None:
        """Show it as the app's notification."""
        app.notify(self.message, title=self.title, severity=self.severity, timeout=self.timeout, markup=False)
