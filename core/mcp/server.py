"""The session tools as a Model Context Protocol server (``sessionref mcp``), so any agent (Claude
Code, Codex, Cursor, Zed) can search, reference and read the sessions sessionref sees.

One implementation serves both the agent loop and this server (``core.agent.session_tools``): the
same schemas, bounds, codes and bytes; the server adds only the transport (``core.mcp.stdio``),
MCP's annotations (read-only, not destructive, closed world, ``core.mcp.protocol``) and an optional
``exclude_session`` (the calling agent's own session is unknown to us). It never writes a session;
a call that takes longer than ``CALL_SECONDS`` answers a ``TOOL_TIMEOUT`` error instead of
blocking the client. Stdout carries only protocol messages.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.agent.defaults import READ_BYTES
from core.agent.session_tools import SessionTools, ToolResult
from core.catalog import SessionCatalog
from core.reference.service import SessionReferenceService
from core.search.finder import SearchConfig, SessionSearch
from core.search.index_keeper import IndexKeeper
from core.search.index_values import IndexStatus
from core.search.meaning import Embedder
from core.search.meaning_index import MeaningProgress
from core.sessions.models import ReferenceConfig
from core.stores import open_message_index

STILL_POLLS = 25
"""Looks at the vectors' progress without a change after which ``wait_for_index`` stops waiting."""
CALL_SECONDS = 20.0
"""The longest one tool call may take before it answers ``TOOL_TIMEOUT`` (a store that hangs
must not hang the agent)."""
TITLED_WITHOUT_INDEX = 500
"""The newest sessions whose titles a search reads when the index has not read them yet."""
CATCH_UP_SESSIONS = 50
"""Changed sessions a search waits to see indexed (up to ``CATCH_UP_SECONDS``); more are indexed
in the background while it answers."""
CATCH_UP_SECONDS = 5.0


@dataclass(frozen=True)
class _Caller:
    """Who calls: the session to leave out (if any), and the folder the agent works in."""

    id: str
    cwd: str | None


class SessionToolServer:
    """The tools over one store and its other agents' sources, listed as the app lists them (a
    ``SessionCatalog``), with the store's message index kept current as the app keeps it.

    A folder store's index is the app's own, beside it (``.sessionref-index``): the same files and
    locks, so the app and any number of servers may keep it at once (one writes, the others read).
    ``start`` lists the store and begins indexing in the background; a search before the index is
    ready says so and answers from titles, ids, folders and what is indexed so far. A database
    store searches with its own index (kept current by every append).

    Args:
        catalog: the store and other agents' sources, as the app lists them.
        cwd: the folder the calling agent works in (its sessions come first).
        index_path: where a folder store's index lives (default: beside the store).
        embedder: embeds a folder store's messages and the queries, for search by meaning.
    """

    def __init__(
        self,
        catalog: SessionCatalog,
        cwd: str | None,
        *,
        config: ReferenceConfig | None = None,
        read_bytes: int = READ_BYTES,
        body_search: bool = True,
        index_path: str | os.PathLike[str] | None = None,
        redact: bool = True,
        embedder: Embedder | None = None,
    ) -> None:
        self.catalog = catalog
        self.cwd = cwd
        self.read_bytes = read_bytes
        self.service = SessionReferenceService(catalog, config, redact=redact)
        opened = open_message_index(catalog.hosted, body_search=body_search, embedder=embedder, index_path=index_path)
        self.own_index = opened.own
        self.body_index = opened.body
        self.keeper: IndexKeeper | None = None
        if self.body_index is not None:
            self.keeper = IndexKeeper(
                self.body_index,
                catalog,
                accept_titles=catalog.titles.accept_titles,
                first_cwd=lambda: cwd,
                builder_store=opened.builder,
            )
        self.search = SessionSearch(opened.searched, SearchConfig(body_search=body_search, embedder=embedder))
        self._refreshing = threading.Lock()

    def start(self) -> None:
        """List the store and begin indexing, in the background (the first request need not wait)."""
        threading.Thread(target=self.refresh, name="first-listing", daemon=True).start()

    def refresh(self) -> None:
        """List the store again, index what changed (waiting up to ``CATCH_UP_SECONDS`` when little
        did) and read the titles of the newest sessions the index has not read. Runs in a thread."""
        with self._refreshing:
            catalog = self.catalog
            catalog.refresh()
            keeper = self.keeper
            own_meaning = self.own_index.meaning if self.own_index is not None else None
            if own_meaning is not None:
                own_meaning.start()  # a team store: embed what this role owns, in the background
            if keeper is not None:
                if not keeper.opened.is_set():
                    keeper.start()  # its first step hands over the titles the index holds: none read twice
                    keeper.opened.wait(CATCH_UP_SECONDS)
                pending = keeper.index.pending(catalog.index_sources(self.cwd))
                if 0 < pending <= CATCH_UP_SESSIONS:
                    keeper.catch_up(CATCH_UP_SECONDS, catalog.index_sources(self.cwd))
                else:
                    keeper.start()
            catalog.titles.request_titles([record.header.id for record in catalog.records[:TITLED_WITHOUT_INDEX]])
            catalog.titles.load_wanted()

    async def _listing(self) -> tuple[Sequence[Any], Mapping[str, str | None]]:
        await asyncio.to_thread(self.refresh)
        return self.catalog.records, self.catalog.titles.title_map()

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        given = dict(arguments or {})
        exclude = given.pop("exclude_session", None)
        caller = _Caller(exclude if isinstance(exclude, str) and exclude else "\x00(no session)", self.cwd)
        tools = SessionTools(self.service, self.search, caller, listing=self._listing, read_bytes=self.read_bytes)
        try:
            return await asyncio.wait_for(tools.call(name, given), CALL_SECONDS)
        except TimeoutError:
            message = f"the store did not answer within {CALL_SECONDS:g} s; try again (TOOL_TIMEOUT)"
            return ToolResult(message, is_error=True, code="TOOL_TIMEOUT")

    async def find(self, query: str, limit: int) -> dict[str, Any]:
        """What ``search_sessions`` answers for ``query``, unframed (``sessionref search`` prints it).

        Raises:
            SessionReferenceError: the search failed.
        """
        caller = _Caller("\x00(no session)", self.cwd)
        tools = SessionTools(self.service, self.search, caller, listing=self._listing, read_bytes=self.read_bytes)
        return await tools.find(query, limit)

    def wait_for_index(
        self,
        progress: Callable[[IndexStatus], None] | None = None,
        poll: float = 0.2,
        meaning: Callable[[MeaningProgress], None] | None = None,
    ) -> IndexStatus:
        """List the store and index it, returning once every listed session is searchable by its
        words and (with an embedder) by its meaning, or the index cannot go on (its status says
        why); ``progress`` hears each step of the words, ``meaning`` each step of the vectors."""
        self.refresh()
        index = self.body_index if self.body_index is not None else self.own_index
        if index is None or self.keeper is None:
            return index.status if index is not None else IndexStatus("empty")
        while True:
            status = index.status
            if progress is not None:
                progress(status)
            if status.state in ("failed", "closed"):
                return status
            if status.complete:
                self._wait_for_meaning(meaning, poll)
                return status
            self.keeper.start()  # (nothing while a run goes on)
            time.sleep(poll)

    def _wait_for_meaning(self, progress: Callable[[MeaningProgress], None] | None, poll: float) -> None:
        """Wait until every indexed message has its vector, the embedder fails, or embedding stops
        moving (another process keeps the index without embedding: ``STILL_POLLS`` looks)."""
        meaning = self.body_index.meaning if self.body_index is not None else None
        if meaning is None or self.keeper is None:
            return
        still, last = 0, -1
        while True:
            done = meaning.progress()
            if progress is not None:
                progress(done)
            if meaning.failure is not None or (done.complete and not self.keeper.running):
                return  # (while a run goes on, a builder process may hold the files: they are not read here)
            still = still + 1 if last != -1 and done.pending >= last else 0
            last = done.pending
            if still >= STILL_POLLS:
                return
            self.keeper.start()
            time.sleep(poll)

    def close(self) -> None:
        """Stop indexing (a running builder too: what it committed stays) and close the index."""
        if self.keeper is not None:
            self.keeper.shutdown()
            self.keeper.idle.wait(5.0)
        if self.body_index is not None:
            self.body_index.close()
        elif self.own_index is not None:
            self.own_index.close()
