"""Listeners: how the engine tells its host that something changed, instead of being polled.

A ``Listeners`` is a list of callbacks a host subscribes to (``subscribe`` returns the function that
unsubscribes). ``emit`` calls each in the order they subscribed, on the thread that emits (the
engine's event loop for a session or an agent). A listener that raises never stops the engine: its
error is logged (``sessionref`` logger) and the others still run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

Value = TypeVar("Value")

_LOG = logging.getLogger("sessionref")


class Listeners(Generic[Value]):
    """Callbacks subscribed to one kind of news (see the module docstring)."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[Value], object]] = []

    def subscribe(self, listener: Callable[[Value], object]) -> Callable[[], None]:
        """Call ``listener`` with each value emitted from now on; returns what unsubscribes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def emit(self, value: Value) -> None:
        """Call every listener with ``value``."""
        for listener in list(self._listeners):
            try:
                listener(value)
            except Exception:
                _LOG.exception("a listener failed")

    def __len__(self) -> int:
        return len(self._listeners)
