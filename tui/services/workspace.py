"""What the chat works on: the store, the listing, the reference service, the search, and the target
session with its agent loop. No Textual import: the app builds one and hands it to the chat screen,
which shows it; widgets never reach it through the app.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from core import (
    MIN_BODY_QUERY,
    AbortSignal,
    AgentLoop,
    BodyIndex,
    ChatModel,
    MessageIndex,
    SearchResult,
    Session,
    SessionQueryError,
    SessionReferenceService,
    SessionSearch,
)
from core.agent.defaults import MAX_STEPS
from core.agent.session_tools import SessionTools
from core.catalog.catalog import SessionCatalog
from core.reference.staleness import moved_on_words, newer_messages
from core.search.finder import FULL_BUDGET
from core.sessions import event_types as ev
from core.sessions.models import SessionRecord
from core.sessions.session import not_found
from core.settings.run import RunConfig
from core.stores import OwnIndex, SessionStore, open_message_index

Clock = Callable[[], int]


class Workspace:
    """The store and everything read from it, and the session the chat writes (its "target").

    ``session`` and ``agent`` change when the user switches; an agent whose reply still streams
    keeps writing its own session (``agents`` holds it until it is idle).
    """

    def __init__(
        self,
        *,
        store: SessionStore,
        model: ChatModel,
        session: Session,
        cwd: str | None,
        clock: Clock,
        home: str | None,
        settings: RunConfig,
        index_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.settings = settings
        """What the run is configured with (the reference limits, compaction, tools, sources, search)."""
        self.store = store
        self.model = model
        self.context_settings = settings.compaction
        self.cwd = cwd
        self.clock = clock
        self.home = home
        self.catalog = SessionCatalog(store, settings.sources)
        self.catalog_loaded = asyncio.Event()
        """Set once the first listing and the likely titles are in."""
        self.service = SessionReferenceService(self.catalog, settings.reference, redact=settings.redact)
        """Prepares references (their secrets masked unless ``redact`` is off, ``--no-redaction``)."""
        # A database store keeps its own message index current with every append; a folder store's
        # (or memory store's) is the SQLite index the app builds and keeps beside it.
        self.store_index = open_message_index(
            self.catalog.hosted,
            body_search=settings.search.body_search,
            embedder=settings.search.embedder,
            index_path=index_path,
        )
        self._own_index: OwnIndex | None = self.store_index.own
        self.body_index: BodyIndex | None = self.store_index.body
        self.message_index: MessageIndex | None = self.store_index.searched
        self.search = SessionSearch(self.message_index, settings.search)
        self._search_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="search")
        self.session = session
        self.agents: dict[str, AgentLoop] = {}
        self.agent = self.agent_for(session)

    def agent_for(self, session: Session) -> AgentLoop:
        """The agent loop writing ``session`` (made on first use)."""
        agent = self.agents.get(session.id)
        if agent is None:
            offered = self.settings.offered_tools  # (None: not offered at all, --no-tools)
            agent = self.agents[session.id] = AgentLoop(
                session,
                self.model,
                context=self.context_settings,
                tools=self.session_tools(session) if offered is not None else None,
                max_steps=offered.max_steps if offered is not None else MAX_STEPS,
            )
        return agent

    def moved_on(self, reference: dict[str, Any]) -> str | None:
        """How a referenced session moved on since a prompt captured it (``reference`` is that
        prompt's meta for it): ``3 newer messages since``, or ``None`` (not moved on, or unreadable)."""
        session_id = reference.get("sessionId")
        if not isinstance(session_id, str):
            return None
        try:
            now = self.catalog.surface(session_id)
        except SessionQueryError:
            return None
        return moved_on_words(newer_messages(reference, now))

    def session_tools(self, session: Session) -> SessionTools:
        """The model's session tools for a turn of ``session``: what the `@` picker sees (this
        listing, its titles, its search on its thread, its ``prepare``)."""

        async def listing() -> tuple[Sequence[SessionRecord], Mapping[str, str | None]]:
            return self.catalog.records, self.catalog.titles.title_map()

        return SessionTools(
            self.service,
            self.search,
            session,
            listing=listing,
            executor=self._search_thread,
            read_bytes=self.settings.tools.read_bytes,
        )

    # -- the target -------------------------------------------------------------------------------

    def open_session(self, session_id: str) -> None:
        """Make an existing session the target.

        Raises:
            SessionQueryError: not found, locked by another writer, or corrupt.
        """
        session = open_for_writing(self.store, session_id)
        self._leave()
        self.session = session
        self.agent = self.agent_for(session)

    def new_session(self, cwd: str | None = None) -> None:
        """Create a session in ``cwd`` (default: the launch cwd) and make it the target."""
        session = self.store.create(cwd=cwd if cwd is not None else self.cwd)
        self._leave()
        self.session = session
        self.agent = self.agent_for(session)

    def _leave(self) -> None:
        # Stop writing the previous target unless a reply is still streaming into it.
        previous = self.session
        agent = self.agents.get(previous.id)
        if agent is not None and agent.status != "idle":
            return
        self.agents.pop(previous.id, None)
        if self.catalog.persistent is not None and previous.events:
            self.catalog.persistent.release(previous.id)

    def rename(self, title: str) -> None:
        """Write a ``session/title`` event on the target."""
        self.session.append(ev.SESSION_TITLE, {"title": title, "messageSeqs": [], "source": "user"})
        self.catalog.titles.titles_changed()

    # -- search -----------------------------------------------------------------------------------

    async def search_sessions(
        self, query: str, signal: AbortSignal, budget: float = FULL_BUDGET, *, limit: int | None = None
    ) -> SearchResult:
        """The picker's search for ``query``: titles, ids and cwds, then message bodies.

        A body search runs on the search thread (SQLite there does not hold the interpreter), and
        a newer keystroke interrupts it; anything else is answered from memory at once.
        """
        catalog = self.catalog
        search = partial(
            self.search.search,
            self.session,
            query,
            records=catalog.records,
            titles=catalog.titles.title_map(),
            limit=limit if limit is not None else self.service.config.candidate_limit,
            signal=signal,
            budget=budget,
            typing=True,
        )
        if self.message_index is None or len(query) < MIN_BODY_QUERY:
            return search()
        index = self.message_index
        remove = signal.add_listener(index.interrupt)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._search_thread, search)
        finally:
            remove()

    def close(self) -> None:
        """Stop the search thread (the app is closing)."""
        self._search_thread.shutdown(wait=False, cancel_futures=True)

    def close_index(self) -> None:
        """Close the message index (the CLI calls it after the app exits)."""
        if self.body_index is not None:
            self.body_index.close()
        elif self._own_index is not None:
            self._own_index.close()


def open_for_writing(store: SessionStore, session_id: str) -> Session:
    """The session ``session_id`` of ``store``, opened for writing.

    Raises:
        SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``, ``_SESSION_LOCKED`` or ``_CORRUPT_SESSION``.
    """
    session = store.get(session_id)
    if session is None:
        raise not_found(session_id)
    return session
