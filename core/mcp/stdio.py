"""``sessionref mcp`` on stdio: the protocol (``core.mcp.protocol``) on the client's own pipes
(``core.mcp.wire``), answering the handshake at once while the store and its index open on a thread
of their own; a tool call waits for them. If they cannot open, serving ends with that failure (one
line and its exit code, as before anything was served)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from core.mcp.protocol import Protocol, ToolAnswer, check_frame, listed_tools
from core.mcp.wire import Lines, Wire, claim_stdio

if TYPE_CHECKING:
    from core.mcp.server import SessionToolServer


class Opening:
    """The tool server, opened by ``open_server`` on a daemon thread once ``start`` is called (the
    process may end before it is done: a client that quits at once is never held up by a slow store)."""

    def __init__(self, open_server: Callable[[], SessionToolServer]) -> None:
        self._open_server = open_server
        self._future: concurrent.futures.Future[SessionToolServer] = concurrent.futures.Future()
        self._future.set_running_or_notify_cancel()  # (a waiter that gives up cancels its wait, not this)
        self._started = threading.Event()

    def start(self) -> None:
        """Begin opening it (once)."""
        if self._started.is_set():
            return
        self._started.set()

        def run() -> None:
            try:
                self._future.set_result(self._open_server())
            except BaseException as error:  # handed to whoever waits for the server
                self._future.set_exception(error)

        threading.Thread(target=run, name="open-store", daemon=True).start()

    async def server(self) -> SessionToolServer:
        """The server, once open (opening it now if it was not begun).

        Raises:
            BaseException: what opening it raised.
        """
        self.start()
        return await self.finished()

    async def finished(self) -> SessionToolServer:
        """The server, once whoever began opening it is done (this does not begin it)."""
        return await asyncio.wrap_future(self._future)

    def opened(self) -> SessionToolServer | None:
        """The server if it opened (``None`` while it opens, or when it failed)."""
        if self._future.done() and self._future.exception() is None:
            return self._future.result()
        return None


OPEN_AFTER = 0.5
"""Seconds after start when the store begins opening even if the client has not listed the tools
(it begins at once when it does: the handshake is answered first, without waiting for it)."""


async def serve(opening: Opening, read_bytes: int, version: str) -> None:
    """Answer MCP requests on stdin/stdout until the client goes (``version``: sessionref's).

    Raises:
        BaseException: what opening the server raised (serving stops).
    """
    source, out = claim_stdio()
    wire = Wire(out)

    async def call(name: str, arguments: Mapping[str, Any] | None) -> ToolAnswer:
        server = await opening.server()
        result = await server.call(name, arguments)
        return ToolAnswer(result.text, result.is_error)

    protocol = Protocol(wire.send, listed_tools(read_bytes), call, version, on_listed=opening.start)
    asyncio.get_running_loop().call_later(OPEN_AFTER, opening.start)
    serving = asyncio.ensure_future(protocol.serve(aiter(Lines(source, wire, check_frame))))
    opened = asyncio.ensure_future(opening.finished())
    await asyncio.wait({serving, opened}, return_when=asyncio.FIRST_COMPLETED)
    if opened.done() and opened.exception() is not None:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        raise opened.exception()  # type: ignore[misc]
    if not opened.done():
        opened.cancel()  # (the client went while the store opened)
    await serving


def client_gone(error: BaseException) -> bool:
    """Whether ``error`` only says the client left: its pipe broke or was reset, or it interrupted us
    (a task group wraps these in an exception group)."""
    if isinstance(error, BaseExceptionGroup):
        return all(client_gone(inner) for inner in error.exceptions)
    return isinstance(error, BrokenPipeError | ConnectionResetError | KeyboardInterrupt)
