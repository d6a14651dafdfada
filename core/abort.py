"""``AbortController`` / ``AbortSignal``: cooperative cancellation shaped like the web platform's."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Callable

from core.errors import ReferenceCancelled


class AbortSignal:
    """Tells whether an operation was aborted; listeners and awaiters learn of it at once."""

    __slots__ = ("_aborted", "_listeners", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: Any = None
        self._listeners: list[Callable[[], None]] = []

    @property
    def aborted(self) -> bool:
        """``True`` once ``abort()`` was called on the controller."""
        return self._aborted

    @property
    def reason(self) -> Any:
        """What was passed to ``abort()`` (``None`` when nothing was)."""
        return self._reason

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` once on abort (at once if already aborted); returns a remover."""
        if self._aborted:
            listener()
            return lambda: None
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return remove

    def throw_if_aborted(self) -> None:
        """Raise ``ReferenceCancelled`` (``SESSION_REFERENCE_CANCELLED``) if aborted."""
        if self._aborted:
            raise cancelled_error(self)

    def _fire(self, reason: Any) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()


class AbortController:
    """Owns an ``AbortSignal`` and aborts it."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        """Abort the signal (idempotent); safe to call from any thread."""
        self.signal._fire(reason)


def cancelled_error(signal: AbortSignal | None) -> ReferenceCancelled:
    """The ``SESSION_REFERENCE_CANCELLED`` error, chained to the abort reason when it is an exception."""
    error = ReferenceCancelled("session reference operation was cancelled")
    if signal is not None and isinstance(signal.reason, BaseException):
        error.__cause__ = signal.reason
    return error


def _consume(task: asyncio.Future[Any]) -> None:
    # A result nobody awaits any more; retrieve it so asyncio does not report it as lost.
    if not task.cancelled():
        task.exception()


async def race_abort(awaitable: Any, signal: AbortSignal | None) -> Any:
    """Await ``awaitable`` unless ``signal`` aborts first.

    On abort the pending work is cancelled and *not* awaited, and ``SESSION_REFERENCE_CANCELLED``
    is raised immediately. Cancelling the calling task cancels the work too.

    Raises:
        ReferenceCancelled: when the signal aborts first.
        Exception: whatever the awaitable raised.
    """
    task = asyncio.ensure_future(awaitable)
    if signal is None:
        return await task
    if signal.aborted:
        task.cancel()
        task.add_done_callback(_consume)
        raise cancelled_error(signal)
    loop = asyncio.get_running_loop()
    aborted: asyncio.Future[None] = loop.create_future()

    def on_abort() -> None:
        def settle() -> None:
            if not aborted.done():
                aborted.set_result(None)

        loop.call_soon_threadsafe(settle)

    remove = signal.add_listener(on_abort)
    try:
        await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        task.add_done_callback(_consume)
        raise
    finally:
        remove()
        if not aborted.done():
            aborted.cancel()
    if task.done():
        return task.result()
    task.cancel()
    task.add_done_callback(_consume)
    raise cancelled_error(signal)
