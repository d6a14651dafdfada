"""A query layer whose reads can hang until cancelled: for the cancellation tests and their benchmark."""

from __future__ import annotations

import asyncio

from core import MemorySessionStore, SessionRecord, SurfaceSnapshot, TitleSnapshot


class HangingQuery:
    """A query layer whose reads never finish unless told to; records what was asked."""

    def __init__(self, inner: MemorySessionStore, *, hang_list: bool = False, hang_read: bool = False) -> None:
        self.inner = inner
        self.hang_list = hang_list
        self.hang_read = hang_read
        self.reads: list[str] = []
        self.cancelled = 0

    async def _hang(self) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    async def list_sessions(self) -> list[SessionRecord]:
        if self.hang_list:
            await self._hang()
        return await self.inner.list_sessions()

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        self.reads.append(session_id)
        if self.hang_read:
            await self._hang()
        return await self.inner.read_surface(session_id)

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        return await self.inner.read_title(session_id)
