"""The chat screen's sessions sidebar: a ``SessionSidebar`` that lists the workspace's catalog itself
(the target marked, a new session listed before its first write), filters it with the search of the
`@` picker in its own worker, and says in its subtitle how many sessions there are and how far
message indexing is."""

from __future__ import annotations

from textual import work
from textual.reactive import reactive

from core import AbortController, SessionHeader, SessionRecord
from core.search.finder import FULL_BUDGET
from tui.services.indexing import MessageIndexer
from tui.services.workspace import Workspace
from tui.widgets.sidebar import SessionSidebar

SIDEBAR_FOUND = 200
"""Sessions the sidebar's filter lists at most."""


class StoreSidebar(SessionSidebar):
    """The sidebar of a workspace's sessions, kept in step with its catalog by ``show_store``.

    Args:
        workspace: the catalog and the target.
        indexer: how far message indexing is.
    """

    count: reactive[int | None] = reactive(None, init=False)
    """How many sessions are listed (``None``: the first listing is not in yet)."""
    progress: reactive[str] = reactive("", init=False)
    """A few words on message indexing ("" when there is nothing to say)."""

    def __init__(self, workspace: Workspace, indexer: MessageIndexer, *, id: str | None = None) -> None:
        super().__init__(id=id, home=workspace.home)
        self._workspace = workspace
        self._indexer = indexer
        self.border_subtitle = "loading…"

    def show_store(self) -> None:
        """List the catalog's sessions (what the filter found, when it is set)."""
        workspace = self._workspace
        catalog = workspace.catalog
        live = catalog.live_ids | {workspace.session.id}

        def title_of(header: SessionHeader) -> str | None:
            if header.id in live:
                session = workspace.store.get(header.id)
                return session.title.title if session is not None and session.title is not None else None
            return catalog.titles.title(header.id)

        records = catalog.records
        if not catalog.has(workspace.session.id):
            # A new session is listed before its first write.
            records = [SessionRecord(header=workspace.session.header, live=True, persisted=False), *records]
        self.show(records, title_of, catalog.problems, workspace.session.id, workspace.session.cwd, workspace.clock())
        self.show_progress(len(records))

    def show_progress(self, count: int | None = None) -> None:
        """Count the sessions again (or take ``count``), and ask the indexer how far it is."""
        workspace = self._workspace
        if not workspace.catalog_loaded.is_set():
            self.count = None
            return
        if count is None:
            count = len(workspace.catalog.records) + (0 if workspace.catalog.has(workspace.session.id) else 1)
        self.count = count
        self.progress = self._indexer.progress()

    def watch_count(self) -> None:
        self._subtitle()

    def watch_progress(self) -> None:
        self._subtitle()

    def _subtitle(self) -> None:
        if self.count is None:
            self.border_subtitle = "loading…"
        else:
            self.border_subtitle = f"{self.count} · {self.progress}" if self.progress else f"{self.count}"

    def filter_changed(self, text: str) -> None:
        self._filter(text)

    @work(exclusive=True, group="sidebar-filter")
    async def _filter(self, text: str) -> None:
        """List only the sessions the search finds for ``text`` (every session when it is empty):
        the search of the `@` picker and the model's tool, best first in the contract's groups."""
        workspace = self._workspace
        if not text.strip():
            self.show_found(None)
        else:
            result = await workspace.search_sessions(text, AbortController().signal, FULL_BUDGET, limit=SIDEBAR_FOUND)
            listed = {record.header.id: record.header for record in workspace.catalog.records}
            self.show_found(
                [listed[hit.candidate.session_id] for hit in result.hits if hit.candidate.session_id in listed]
            )
        self.show_store()
