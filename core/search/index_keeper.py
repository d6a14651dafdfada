"""Keeping a store's body index current, for whoever serves searches over it: the app, or
``sessionref mcp`` on a store the app never opened.

One indexing run at a time, on a thread of its own: small changes are indexed in that thread; a
large catch-up (a first build) runs in a builder process (``python -m core.search.builder``) so the
host keeps its interpreter and a core, while it searches the growing index read-only and follows the
builder's progress. Several hosts may keep one store's index at once (the app and a server, two
apps): the index's writer locks make one of them the writer, the others read what it commits.

No UI here: the keeper calls ``changed`` when the index moved on and ``builder_failed`` when a builder
process failed; the host shows what it wants of that.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from core.search.body_index import BodyIndex
from core.search.index_values import IndexedSession, IndexStatus, IndexUnavailable
from core.search.meaning import MeaningUnavailable, builder_arguments

BUILDER_THRESHOLD = 200
"""Sessions to (re)index above which a builder process does it instead of the keeper's thread."""
MEANING_BUILDER_THRESHOLD = 2000
"""Chunks waiting for their vectors (about 30,000 messages, seconds of embedding) above which a
builder process makes them instead of the keeper's thread."""
BUILDER_ATTEMPTS = 2
"""Builder processes that may fail before the keeper indexes in its own thread."""
BUILDER_POLL = 0.5
"""Seconds between two looks at a running builder's progress."""
CHECKPOINT_AFTER = 1000
"""Sessions indexed in one run after which the index is compacted."""
INDEX_RETRY = 30.0
"""Seconds before indexing is tried again after it failed (a full disk, say)."""
WORDS_CHECK = 0.25
"""Seconds between two looks, while embedding, for sessions whose words wait to be indexed."""
MEANING_TOLD = 2.0
"""Seconds between two ``changed`` calls while embedding (a host shows the progress)."""
CATCH_UP_POLL = 0.02
"""Seconds between two looks at the sessions ``catch_up`` waits for."""
FOLLOW_STILL = 20
"""Looks (``BUILDER_POLL`` apart) at another process's indexing without progress before the keeper
stops following it (a listing change or a search starts it again)."""


class IndexedListing(Protocol):
    """What the keeper reads: the listing's sessions at their revisions, and each one's content."""

    def index_sources(self, target_cwd: str | None) -> list[tuple[str, str]]:
        """(session id, revision key) of every listed session, ``target_cwd``'s first."""
        ...

    def read_indexed(self, session_id: str) -> IndexedSession | None:
        """One session as the index keeps it (``None``: no longer listed). Safe in a thread."""
        ...


@dataclass(frozen=True)
class BuilderTarget:
    """A folder store a builder process can index by itself: its folder and how its logs are written."""

    root: str
    compression: str


class IndexKeeper:
    """Keeps ``index`` in line with ``listing`` (see the module docstring).

    Args:
        index: the body index.
        listing: what to index (the app's catalog).
        accept_titles: takes the titles the index holds (session id -> (revision key, title)).
        first_cwd: the folder whose sessions are indexed first.
        builder_store: the folder store a builder process may index (``None``: never a builder).
        pause: runs between two sessions of a run in this thread (a host yields to its UI there).
        changed: the index moved on (``True``: titles came in or sessions went), from the keeper's thread.
        builder_failed: a builder process failed with this message (the keeper indexes itself from then on).
    """

    def __init__(
        self,
        index: BodyIndex,
        listing: IndexedListing,
        *,
        accept_titles: Callable[[Mapping[str, tuple[str, str | None]]], None],
        first_cwd: Callable[[], str | None] = lambda: None,
        builder_store: BuilderTarget | None = None,
        pause: Callable[[], None] | None = None,
        changed: Callable[[bool], object] = lambda _titles: None,
        builder_failed: Callable[[str], object] = lambda _message: None,
    ) -> None:
        self.index = index
        self.listing = listing
        self.accept_titles = accept_titles
        self.first_cwd = first_cwd
        self.builder_store = builder_store
        self.pause = pause
        self.changed = changed
        self.builder_failed = builder_failed
        self.running = False
        """Whether an indexing run is going on."""
        self.builder: subprocess.Popen[bytes] | None = None
        """The builder process while one runs."""
        self.stop = threading.Event()
        self.idle = threading.Event()
        """Set while no run goes on."""
        self.idle.set()
        self.opened = threading.Event()
        """Set once the first run opened the index and handed over the titles it holds (or failed to)."""
        self._lock = threading.Lock()
        self._started = False
        self._failed_at = 0.0
        self._builder_failures = 0
        self._builder_finished = False

    def start(self) -> None:
        """Bring the index up to date with the listing, on the keeper's thread (one run at a time;
        a call while one runs does nothing)."""
        index = self.index
        with self._lock:
            if self.running or self.stop.is_set():
                return
            if index.status.state == "failed" and time.monotonic() - self._failed_at < INDEX_RETRY:
                return
            self.running = True
            self.idle.clear()
        threading.Thread(target=self._sync, name="index", daemon=True).start()

    def catch_up(self, seconds: float, sources: Sequence[tuple[str, str]] | None = None) -> bool:
        """Start a run and wait up to ``seconds`` for it to end, or with ``sources`` only until
        their words are indexed (a run busy embedding turns to them first); whether it did."""
        self.start()
        if sources is None:
            return self.idle.wait(seconds)
        deadline = time.monotonic() + seconds
        while self.index.pending(sources) > 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self.idle.is_set():
                self.start()  # the run ended before these were listed
            time.sleep(min(CATCH_UP_POLL, remaining))
        return True

    def shutdown(self) -> None:
        """Stop indexing (the host is closing): a running builder is stopped, a search interrupted."""
        self.stop.set()
        if self.builder is not None and self.builder.poll() is None:
            self.builder.terminate()  # what it committed stays; the next start goes on from there
        self.index.interrupt()

    def _sync(self) -> None:
        index = self.index
        try:
            if not self._started:
                # Titles the index already holds make every session findable by title at once.
                self._started = True
                try:
                    with contextlib.suppress(IndexUnavailable):
                        index.open()
                        self.accept_titles(index.titles())
                        self.changed(True)
                finally:
                    self.opened.set()
            while True:
                sources = self.listing.index_sources(self.first_cwd())
                if not self._use_builder(sources):
                    break
                if self.stop.wait(BUILDER_POLL):
                    return  # the host is closing; the builder was stopped
            self._sync_following(sources)
        except IndexUnavailable:
            self._failed_at = time.monotonic()
            self.changed(False)
            self._retry_later()
        finally:
            with self._lock:
                self.running = False
                self.idle.set()

    def _sync_following(self, sources: list[tuple[str, str]]) -> None:
        """Index what is pending; while another process keeps the index (it holds the writer locks),
        follow its progress until it has caught up or stops moving (``FOLLOW_STILL`` looks)."""
        index = self.index
        still = 0
        while True:
            before = index.pending(sources)
            report = index.sync(
                sources,
                self.listing.read_indexed,
                pause=self.pause,
                stop=self.stop,
                progress=self._progressed,
            )
            self.accept_titles(report.titles)
            if report.indexed > CHECKPOINT_AFTER:
                index.checkpoint()  # a big build: merge the segments, fold the logs into the files
            self.changed(bool(report.titles or report.removed))
            if self._embed():
                sources = self.listing.index_sources(self.first_cwd())
                continue  # sessions came in while embedding: their words first, then the rest
            after = index.pending(sources)
            if index.writable or after == 0:
                return
            still = still + 1 if after >= before else 0
            if still >= FOLLOW_STILL or self.stop.wait(BUILDER_POLL):
                return

    def _embed(self) -> bool:
        """Give the newly indexed messages their vectors (search by meaning), after their words: a
        failing embedder leaves word search as it is and is tried again on the next run. Stops
        for sessions whose words wait (looked at every ``WORDS_CHECK`` seconds); whether it did."""
        meaning = self.index.meaning
        if meaning is None or not self.index.writable:
            return False
        looked = told = time.monotonic()
        words_wait = False

        def interrupted() -> bool:
            nonlocal looked, told, words_wait
            if self.pause is not None:
                self.pause()
            if self.stop.is_set():
                return True
            now = time.monotonic()
            if now - told >= MEANING_TOLD:
                told = now
                self.changed(False)  # the host shows how far embedding is
            if now - looked >= WORDS_CHECK:
                looked = now
                words_wait = self.index.pending(self.listing.index_sources(self.first_cwd())) > 0
            return words_wait

        with contextlib.suppress(MeaningUnavailable):
            if meaning.embed_pending(interrupted):
                self.changed(False)
        return words_wait and not self.stop.is_set()

    def _retry_later(self) -> None:
        """Try again in ``INDEX_RETRY`` seconds (the keeper's own timer; none once stopping)."""
        if self.stop.is_set():
            return
        timer = threading.Timer(INDEX_RETRY + 0.05, self.start)
        timer.daemon = True
        timer.start()

    def _use_builder(self, sources: list[tuple[str, str]]) -> bool:
        """Start (or follow) a builder process for a large catch-up; whether one is running now."""
        index = self.index
        builder = self.builder
        if builder is not None:
            returncode = builder.poll()
            if returncode is None:
                index.refresh(sources)  # its progress, read-only
                self.changed(False)
                return True
            self.builder = None
            if returncode == 0:
                # What is left (sessions this host writes, which the builder sees at another
                # revision) is indexed here: one builder run per host, never a loop of them.
                self._builder_finished = True
                with contextlib.suppress(IndexUnavailable):
                    index.open()
                    self.accept_titles(index.titles())
            else:
                self._builder_failures += 1
                message = builder.stderr.read().decode(errors="replace").strip() if builder.stderr else ""
                self.builder_failed(message or f"exit code {returncode}")
        store = self.builder_store
        if store is None or index.path is None or self._builder_finished or self._builder_failures >= BUILDER_ATTEMPTS:
            return False
        if not index.writable or (index.pending(sources) < BUILDER_THRESHOLD and not self._meaning_backlog()):
            return False  # little to do, or another process keeps the index (sync reads its progress)
        command = [sys.executable, "-m", "core.search.builder", store.root, "--compression", store.compression]
        first_cwd = self.first_cwd()
        if first_cwd is not None:
            command += ["--first-cwd", first_cwd]
        command += ["--index", str(index.path)]
        command += builder_arguments(index.meaning.embedder if index.meaning is not None else None)
        index.release()  # the builder takes the writer locks
        self.builder = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        return True

    def _meaning_backlog(self) -> bool:
        """Whether so many chunks wait for their vectors (an index made before them, another
        embedder's) that the builder process should make them, not the host's thread."""
        meaning = self.index.meaning
        if meaning is None:
            return False
        try:
            return meaning.progress().pending >= MEANING_BUILDER_THRESHOLD
        except IndexUnavailable:
            return False

    def _progressed(self, _status: IndexStatus) -> None:
        if not self.stop.is_set():
            self.changed(True)
