"""What the chat screen shows of the store: the sidebar's sessions (the target marked, a new one listed
before its first write), its subtitle (how many, how far message indexing is), and what the
transcript says of the sessions its prompts referenced."""

from __future__ import annotations

from core import AbortController, SessionHeader, SessionRecord
from core.search.finder import FULL_BUDGET
from tui.services.indexing import MessageIndexer
from tui.services.workspace import Workspace
from tui.widgets.sidebar import SessionSidebar
from tui.widgets.transcript import Transcript

SIDEBAR_FOUND = 200
"""Sessions the sidebar's filter lists at most."""


class SessionsView:
    """The sidebar and the transcript's references, kept in step with the catalog.

    Args:
        workspace: the catalog and the target.
        indexer: how far message indexing is.
        sidebar: the sessions sidebar it fills.
        transcript: whose referenced sessions it refreshes.
    """

    def __init__(
        self, workspace: Workspace, indexer: MessageIndexer, sidebar: SessionSidebar, transcript: Transcript
    ) -> None:
        self._workspace = workspace
        self._indexer = indexer
        self._sidebar = sidebar
        self._transcript = transcript

    def show(self) -> None:
        """Repaint the sidebar from the catalog, and what the transcript says of referenced sessions."""
        self._transcript.refresh_references()
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
        self._sidebar.show(
            records, title_of, catalog.problems, workspace.session.id, workspace.session.cwd, workspace.clock()
        )
        self.show_progress(len(records))

    async def filter(self, text: str) -> None:
        """List only the sessions the search finds for ``text`` (every session when it is empty):
        the search of the `@` picker and the model's tool, best first in the contract's groups."""
        sidebar = self._sidebar
        if not text.strip():
            sidebar.show_found(None)
        else:
            result = await self._workspace.search_sessions(
                text, AbortController().signal, FULL_BUDGET, limit=SIDEBAR_FOUND
            )
            listed = {record.header.id: record.header for record in self._workspace.catalog.records}
            sidebar.show_found(
                [listed[hit.candidate.session_id] for hit in result.hits if hit.candidate.session_id in listed]
            )
        self.show()

    def show_progress(self, count: int | None = None) -> None:
        """The sidebar's subtitle: how many sessions, and how far message indexing is."""
        workspace = self._workspace
        if count is None:
            count = len(workspace.catalog.records) + (0 if workspace.catalog.has(workspace.session.id) else 1)
        if not workspace.catalog_loaded.is_set():
            self._sidebar.border_subtitle = "loading…"
            return
        progress = self._indexer.progress()
        self._sidebar.border_subtitle = f"{count} · {progress}" if progress else f"{count}"
