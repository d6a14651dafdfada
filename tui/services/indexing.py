"""Keeping the body index current for the app, and what the app says about it.

Small changes are indexed in a thread of the app; a large catch-up (a first build) runs in a builder
process (``python -m core.search.builder``) so the UI keeps its interpreter and a core, while the app
searches the growing index read-only and polls its progress. No widget here: the indexer posts
what happened (``MessageIndexer.Changed``, ``MessageIndexer.BuilderFailed``) and the app repaints
what shows it.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from textual.message import Message

from core import (
    MIN_BODY_QUERY,
    BodyIndex,
    IndexStatus,
    IndexUnavailable,
    JsonlSessionStore,
    SearchResult,
)
from core.search.index_values import INDEX_DISK_FULL, INDEX_READ_ONLY
from tui.services.workspace import Workspace

TYPING_PAUSE = 1.0
"""Seconds after a keystroke during which background work waits (the app's re-listing too)."""
INDEX_SLICE = 0.004
"""Seconds of body indexing between two pauses that hand the interpreter back to the UI."""
BUILDER_THRESHOLD = 200
"""Sessions to (re)index above which a builder process does it instead of a thread of the app."""
BUILDER_ATTEMPTS = 2
"""Builder processes that may fail before the app indexes in its own thread."""
BUILDER_POLL = 0.5
"""Seconds between two looks at a running builder's progress."""
CHECKPOINT_AFTER = 1000
"""Sessions indexed in one run after which the index is compacted."""
INDEX_RETRY = 30.0
"""Seconds before indexing is tried again after it failed (a full disk, say)."""


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
    """The app's body index keeper: one indexing run at a time, a builder process for big ones.

    Runs on a thread of its own; ``post`` (thread-safe, the app's ``post_message``) carries what
    happened back to the UI, and ``last_key`` says when the user last typed.
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
        self.last_key = last_key
        self.running = False
        """Whether an indexing run is going on."""
        self.builder: subprocess.Popen[bytes] | None = None
        """The builder process while one runs."""
        self.stop = threading.Event()
        self._started = False
        self._failed_at = 0.0
        self._builder_failures = 0
        self._builder_finished = False

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
        return ""

    def note(self, result: SearchResult) -> str | None:
        """The picker's line about message search for this result, if it has anything to say."""
        status = result.status
        if result.body == "short":
            return f"Type {MIN_BODY_QUERY}+ characters to search messages too"
        if result.body == "indexing" and status is not None and status.code == INDEX_DISK_FULL:
            # What was indexed before the disk filled up is still searched.
            searchable = f"{status.indexed:,} of {status.total:,} searchable"
            return f"Messages: {searchable}; indexing stopped, disk full ({status.code})"
        if result.body == "indexing" and status is not None:
            if status.state == "read-only" and self.builder is None:
                return f"Messages: another sessionref is indexing ({status.indexed:,} of {status.total:,} searchable)"
            return f"Messages: indexing… {status.indexed:,} of {status.total:,} sessions searchable"
        if not result.complete:
            return "Searching more messages…"
        if result.body == "unavailable" and status is not None:
            return f"Message search unavailable: {status.message} ({status.code})"
        if result.body == "ready" and status is not None and status.code not in (None, INDEX_READ_ONLY):
            # (A complete copy another instance keeps searches just as well: nothing to say.)
            return f"Message search: {status.message} ({status.code})"
        return None

    # -- indexing -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Bring the body index up to date with the catalog, off the UI thread (one run at a time)."""
        index = self.index
        if index is None or self.running or self.stop.is_set():
            return
        if index.status.state == "failed" and time.monotonic() - self._failed_at < INDEX_RETRY:
            return
        self.running = True
        threading.Thread(target=self._sync, name="index", daemon=True).start()

    def shutdown(self) -> None:
        """Stop indexing (the app is closing): a running builder is stopped, a search interrupted."""
        self.stop.set()
        if self.builder is not None and self.builder.poll() is None:
            self.builder.terminate()  # what it committed stays; the next start goes on from there
        if self.index is not None:
            self.index.interrupt()

    def _sync(self) -> None:
        workspace = self.workspace
        index = self.index
        assert index is not None
        catalog = workspace.catalog
        try:
            if not self._started:
                # Titles the index already holds make every session findable by title at once.
                self._started = True
                with contextlib.suppress(IndexUnavailable):
                    index.open()
                    catalog.titles.accept_titles(index.titles())
                    self.post(self.Changed(True))
            while True:
                sources = catalog.index_sources(workspace.session.cwd)
                if not self._use_builder(index, sources):
                    break
                if self.stop.wait(BUILDER_POLL):
                    return  # the app is closing; the builder was stopped
            report = index.sync(
                sources,
                catalog.read_indexed,
                pause=_Politeness(self.last_key),
                stop=self.stop,
                progress=self._progressed,
            )
            catalog.titles.accept_titles(report.titles)
            if report.indexed > CHECKPOINT_AFTER:
                index.checkpoint()  # a big build: merge the segments, fold the logs into the files
            self.post(self.Changed(bool(report.titles or report.removed)))
        except IndexUnavailable:
            self._failed_at = time.monotonic()
            self.post(self.Changed(False))
        finally:
            self.running = False

    def _use_builder(self, index: BodyIndex, sources: list[tuple[str, str]]) -> bool:
        """Start (or follow) a builder process for a large catch-up; whether one is running now."""
        workspace = self.workspace
        builder = self.builder
        if builder is not None:
            returncode = builder.poll()
            if returncode is None:
                index.refresh(sources)  # its progress, read-only
                self.post(self.Changed(False))
                return True
            self.builder = None
            if returncode == 0:
                # What is left (sessions this app writes, which the builder sees at another
                # revision) is indexed here: one builder run per app, never a loop of them.
                self._builder_finished = True
                with contextlib.suppress(IndexUnavailable):
                    index.open()
                    workspace.catalog.titles.accept_titles(index.titles())
            else:
                self._builder_failures += 1
                message = builder.stderr.read().decode(errors="replace").strip() if builder.stderr else ""
                self.post(self.BuilderFailed(message or f"exit code {returncode}"))
        store = workspace.store
        if (
            not isinstance(store, JsonlSessionStore)
            or index.path is None
            or self._builder_finished
            or self._builder_failures >= BUILDER_ATTEMPTS
        ):
            return False
        if not index.writable or index.pending(sources) < BUILDER_THRESHOLD:
            return False  # little to do, or another process keeps the index (sync reads its progress)
        command = [sys.executable, "-m", "core.search.builder", str(store.root), "--compression", store.compression]
        if workspace.session.cwd is not None:
            command += ["--first-cwd", workspace.session.cwd]
        command += ["--index", str(index.path)]
        index.release()  # the builder takes the writer locks
        self.builder = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        return True

    def _progressed(self, status: IndexStatus) -> None:
        if not self.stop.is_set():
            self.post(self.Changed(True))
