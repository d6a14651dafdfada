"""``Host``: the Textual node a part of the app or of a screen schedules its work on.

The parts (``tui.app.listing_keeper.ListingKeeper``, the chat screen's controls) are plain objects;
what they need of Textual (workers, timers, notifications, posting a message) they ask of the app or
the screen that owns them, typed by this ``Protocol`` and nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from textual.geometry import Size
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.timer import Timer
from textual.worker import Worker


class Host(Protocol):
    """What a part asks of the app or screen that owns it."""

    def run_worker(
        self, work: Any, name: str | None = ..., group: str = ..., *, exclusive: bool = ..., thread: bool = ...
    ) -> Worker[Any]:
        """Run ``work`` in a worker (a coroutine, or a callable on a thread)."""
        ...

    def set_timer(self, delay: float, callback: Callable[[], Any]) -> Timer:
        """Call ``callback`` once after ``delay`` seconds."""
        ...

    def set_interval(self, interval: float, callback: Callable[[], Any]) -> Timer:
        """Call ``callback`` every ``interval`` seconds."""
        ...

    def notify(
        self,
        message: str,
        *,
        title: str = ...,
        severity: SeverityLevel = ...,
        timeout: float | None = ...,
        markup: bool = ...,
    ) -> None:
        """Show a notification."""
        ...

    def post_message(self, message: Message) -> bool:
        """Post ``message`` to the host (thread-safe)."""
        ...

    @property
    def size(self) -> Size:
        """The host's size in cells."""
        ...
