"""Keeping the body index current for the app, and what the app says about it.

The keeping itself is ``core.search.index_keeper.IndexKeeper`` (the same one ``sessionref mcp``
runs): small changes are indexed in a thread of the app, a large catch-up in a builder process
(``python -m core.search.builder``) so the UI keeps its interpreter and a core. Here: the pauses
that hand the interpreter back to the UI, the messages the keeper's news becomes
(``MessageIndexer.Changed``, ``MessageIndexer.BuilderFailed``), and the words the app shows.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from textual.message import Message

from core import (
    SearchResult,
)
from core.errors import coded_line
from core.search.index_keeper import IndexKeeper
from core.search.index_values import INDEX_DISK_FULL, INDEX_READ_ONLY
from core.search.search_query import MIN_PREFIX
from tui.services.workspace import Workspace

TYPING_PAUSE = 1.0
"""Seconds after a keystroke during which background work waits (the app's re-listing too)."""
INDEX_SLICE = 0.004
"""Seconds of body indexing between two pauses that hand the interpreter back to the UI."""


class _Politeness:
    """The index's pause between sessions: a short sleep every ``INDEX_SLICE`` of work hands the
    interpreter to the UI thread, and while the user types the indexer waits."""

    def __init__(self, last_key: Callable[[], float]) -> None:
        self.last_key = last_key
        self.slice_started = time.perf_counter()

    def __call__(self) -> None:
        while time.perf_counter() - self.last_key() < TYPING_PAUSE / 4:
            time.sleep(0.02)
        if time.perf_counter() - self.slice_started > INDEX_SLICE:
            time.sleep(0.002)
            self.slice_started = time.perf_counter()


class MessageIndexer:
    """The app's body index keeper: an ``IndexKeeper`` whose news reaches the app as messages.

    ``post`` (thread-safe, the app's ``post_message``) carries what happened back to the UI, and
    ``last_key`` says when the user last typed.
    """

    @dataclass
    class Changed(Message):
        """The index moved on: new titles (or removed sessions) when ``titles``, else only progress."""

        titles: bool

    @dataclass
    class BuilderFailed(Message):
        """The builder process failed with ``message``; the app indexes in its own thread from now on."""

        message: str

    def __init__(
        self, workspace: Workspace, *, post: Callable[[Message], object], last_key: Callable[[], float]
    ) -> None:
        self.workspace = workspace
        self.index = workspace.body_index
        self.post = post
        self.keeper: IndexKeeper | None = None
        """What keeps the index (``None`` without a body index: a database's own, or search off)."""
        if self.index is not None:
            catalog = workspace.catalog
            self.keeper = IndexKeeper(
                self.index,
                catalog,
                accept_titles=catalog.titles.accept_titles,
                first_cwd=lambda: workspace.session.cwd,
                builder_store=workspace.store_index.builder,
                pause=_Politeness(last_key),
                changed=lambda titles: post(self.Changed(titles)),
                builder_failed=lambda message: post(self.BuilderFailed(message)),
            )

    @property
    def running(self) -> bool:
        """Whether an indexing run is going on."""
        return self.keeper is not None and self.keeper.running

    @property
    def builder(self) -> subprocess.Popen[bytes] | None:
        """The builder process while one runs."""
        return self.keeper.builder if self.keeper is not None else None

    def start(self) -> None:
        """Bring the body index up to date with the catalog, off the UI thread (one run at a time);
        on a team store, embed the messages of this user's sessions for search by meaning."""
        if self.keeper is not None:
            self.keeper.start()
        meaning = self.workspace.message_index.meaning if self.workspace.message_index is not None else None
        if meaning is not None:
            meaning.start()

    def shutdown(self) -> None:
        """Stop indexing (the app is closing): a running builder is stopped, a search interrupted."""
        if self.keeper is not None:
            self.keeper.shutdown()

    # -- what the app shows -----------------------------------------------------------------------

    def progress(self) -> str:
        """A few words on message indexing for the sidebar ("" when there is nothing to say)."""
        if self.index is None:
            return ""
        status = self.index.status
        if status.state == "building" and status.total:
            return f"indexing {100 * status.indexed // status.total}%"
        if status.state == "failed":
            return "message search off"
        meaning = self.index.meaning
        if meaning is not None and meaning.failure is None and self.running:
            seen = meaning.seen
            if not seen.complete:
                return f"meaning {100 * seen.done // (seen.done + seen.pending)}%"
        return ""

    def note(self, result: SearchResult) -> str | None:
        """The picker's line about message search for this result, if it has anything to say."""
        status = result.status
        if result.body == "short":
            return f"Type {MIN_PREFIX}+ characters to search messages too"
        if result.body == "indexing" and status is not None and status.code == INDEX_DISK_FULL:
            # What was indexed before the disk filled up is still searched.
            searchable = f"{status.indexed:,} of {status.total:,} searchable"
            return coded_line(f"Messages: {searchable}; indexing stopped, disk full", status.code)
        if result.body == "indexing" and status is not None:
            if status.state == "read-only" and self.builder is None:
                return f"Messages: another sessionref is indexing ({status.indexed:,} of {status.total:,} searchable)"
            return f"Messages: indexing… {status.indexed:,} of {status.total:,} sessions searchable"
        if not result.complete:
            return "Searching more messages…"
        if result.body == "unavailable" and status is not None:
            return coded_line(f"Message search unavailable: {status.message}", status.code or "")
        if result.body == "ready" and status is not None and status.code not in (None, INDEX_READ_ONLY):
            # (A complete copy another instance keeps searches just as well: nothing to say.)
            return coded_line(f"Message search: {status.message}", status.code)
        return None
