"""The message-body index beside a store: SQLite FTS5 with a trigram tokenizer, never the truth.

It holds the *projected* conversation of every session (CONTRACT §5: what a reference would send,
so tool output and baked snapshots are never indexed) and answers "which sessions contain this
text, and where". ``sync`` brings it in line with the store's per-file revisions; a missing,
replaced, outdated or damaged file is rebuilt from the store.

One SQLite file (WAL journal), five tables:

- ``sessions``: one row per session: key, id, the revision it was indexed at, its title.
- ``chunks``: a session's projected messages in runs of at most ``CHUNK_BYTES`` of text. Each row
  keeps the run's original text (messages joined by ``\\n``, zstd-compressed), where each message
  starts, their roles, and a digest, so an append re-indexes only the last chunk. The row id is
  ``session key << CHUNK_BITS | ordinal``: a session's chunks are one id range.
- ``terms``: a contentless FTS5 table (``detail=none``: no positions, so the index stays well under
  the size of the text) over the case-folded chunk text. A match is a *candidate*: every hit is
  verified against the stored text, which also gives the snippet.
- ``postings``: each word's (its stem's) count in each session, for ranking (``rank``).
- ``vectors``: each chunk's messages' vectors, for search by meaning (``meaning_index``).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import zstandard

from core.abort import AbortSignal
from core.search.index_chunks import (
    READ_AHEAD,
    Prepared,
    prepare_session,
    prepared_ahead,
)
from core.search.index_values import (
    IndexStatus,
    Reader,
    SyncReport,
)
from core.search.matching import Snippet
from core.search.meaning import Embedder
from core.search.meaning_index import MeaningIndex
from core.search.ranking import Passage, RankedWords
from core.search.search_query import SearchQuery
from core.search.shard import Shard
from core.search.word_ranking import WordRanking

INDEX_FILE_NAME = ".sessionref-index"
"""The index folder, in the store root (its files are never taken for sessions by a listing)."""
SHARDS = 2
"""SQLite files the index is spread over (written in parallel by a first build)."""
DENSE_CANDIDATES = 4096
"""Above this many candidate chunks a query is "dense": sessions are scanned one by one, in order."""


def index_path_beside(root: str | os.PathLike[str]) -> Path:
    """Where the body index of the store at ``root`` lives."""
    return Path(root) / INDEX_FILE_NAME


# -- values ------------------------------------------------------------------------------------------


class BodyIndex:
    """The full-text index of every session's projected conversation, beside the store.

    Args:
        path: the index folder (``index_path_beside(root)`` for a store); ``None`` keeps it in memory.
        shards: how many SQLite files the sessions are spread over (by a hash of the id). A first
            build writes the shards in parallel, one thread each (SQLite works without the
            interpreter lock), so it uses every core the machine has.
        embedder: what makes the messages' vectors for search by meaning (``None``: words only).

    Every failure is contained: a search raises ``IndexUnavailable`` and the next ``sync`` recovers
    (a damaged, deleted, replaced or outdated file is rebuilt from the store). Another process
    building the index (``python -m core.search.builder``, or a second app) makes this instance a
    reader of its files until it exits.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None, shards: int = SHARDS, embedder: Embedder | None = None
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.shards = [
            Shard(self.path / f"shard-{number}.sqlite3" if self.path is not None else None) for number in range(shards)
        ]
        self.meaning = MeaningIndex(self.shards, self.shard_of, embedder) if embedder is not None else None
        """The messages' vectors (``None``: search by meaning is off)."""
        self.words = WordRanking(self.shards, self.shard_of)
        """The postings and chunks read for a ranked search."""

    def shard_of(self, session_id: str) -> Shard:
        """The shard that holds ``session_id``."""
        digest = zlib.crc32(session_id.encode("utf-8", "surrogatepass"))
        return self.shards[digest % len(self.shards)]

    def _partition(self, sources: Sequence[tuple[str, str]]) -> list[list[tuple[str, str]]]:
        parts: list[list[tuple[str, str]]] = [[] for _ in self.shards]
        index_of = {id(shard): number for number, shard in enumerate(self.shards)}
        for entry in sources:
            parts[index_of[id(self.shard_of(entry[0]))]].append(entry)
        return parts

    # -- status -----------------------------------------------------------------------------------------

    @property
    def status(self) -> IndexStatus:
        """Where the index stands, all shards together (safe to read from any thread)."""
        statuses = [shard.files.status for shard in self.shards]
        indexed = sum(status.indexed for status in statuses)
        total = sum(status.total for status in statuses)
        for state in ("failed", "closed", "read-only", "building", "empty"):
            for status in statuses:
                if status.state == state:
                    return IndexStatus(status.state, indexed, total, status.code, status.message)
        return IndexStatus("ready", indexed, total)

    @property
    def writable(self) -> bool:
        """Whether this instance holds every shard's writer lock."""
        return all(shard.files.writable for shard in self.shards)

    def pending(self, sources: Sequence[tuple[str, str]]) -> int:
        """How many of ``sources`` are not indexed at their revision (as this instance last saw)."""
        return sum(shard.files.pending(part) for shard, part in zip(self.shards, self._partition(sources), strict=True))

    # -- opening and closing --------------------------------------------------------------------------

    def open(self) -> None:
        """Open the files now (``sync`` opens them too); damaged or outdated ones are rebuilt empty.

        Raises:
            IndexUnavailable: ``SEARCH_INDEX_READ_ONLY`` while another process creates them,
                ``SEARCH_INDEX_DISK_FULL`` or ``SEARCH_INDEX_FAILED``.
        """
        for shard in self.shards:
            shard.files.open()

    def close(self) -> None:
        """Close the files and give up the writer locks."""
        for shard in self.shards:
            shard.files.close()

    def release(self) -> None:
        """Close the files and give up the writer locks for now (another process is to write);
        the next ``open`` or ``sync`` opens them again."""
        for shard in self.shards:
            shard.files.release()

    def refresh(self, sources: Sequence[tuple[str, str]]) -> None:
        """Take the progress of another process that writes the index (a builder), read-only."""
        for shard, part in zip(self.shards, self._partition(sources), strict=True):
            shard.writes.refresh(part)

    # -- keeping it current ---------------------------------------------------------------------------

    def sync(
        self,
        sources: Sequence[tuple[str, str]],
        read: Reader,
        *,
        pause: Callable[[], None] | None = None,
        stop: threading.Event | None = None,
        progress: Callable[[IndexStatus], None] | None = None,
        processes: bool = False,
    ) -> SyncReport:
        """Bring the index in line with ``sources`` (session id, revision key), in their order.

        Sessions that are gone are removed; sessions new or at another revision are read with
        ``read`` (a few ahead, on a helper thread) and (re)indexed, each shard by its own writer
        thread, committing every ``COMMIT_INTERVAL`` seconds so progress shows and a crash loses
        little. ``pause`` runs between sessions (a host yields to its UI there); ``stop`` ends the
        sync early; ``progress`` gets the status after each commit (from a writer thread). Safe to
        run in a thread while others search. Shards another process keeps are only read (their
        progress and titles). ``processes`` reads in a forked helper process instead: only for a
        single-threaded indexer process, such as ``python -m core.search.builder``.

        Raises:
            IndexUnavailable: the disk is full or the index cannot be written (the store is never
                touched; the next sync goes on from where this one stopped).
        """
        report = SyncReport()
        parts = self._partition(sources)
        plans: list[list[tuple[str, str]] | None] = []
        for shard, part in zip(self.shards, parts, strict=True):
            shard.files.removed = 0
            plans.append(shard.writes.plan(part))
            report.removed += shard.files.removed
        if any(plan is None for plan in plans):
            titles = self.titles()
            for plan, part in zip(plans, parts, strict=True):
                if plan is None:
                    report.titles.update({sid: titles[sid] for sid, _revision in part if sid in titles})
        todo_ids = {sid for plan in plans if plan for sid, _revision in plan}
        todo = [(sid, revision) for sid, revision in sources if sid in todo_ids]
        if todo:
            self._write(todo, plans, read, report, pause, stop, progress, processes)
        report.finished = stop is None or not stop.is_set()
        if progress is not None:
            progress(self.status)
        return report

    def _write(
        self,
        todo: list[tuple[str, str]],
        plans: list[list[tuple[str, str]] | None],
        read: Reader,
        report: SyncReport,
        pause: Callable[[], None] | None,
        stop: threading.Event | None,
        progress: Callable[[IndexStatus], None] | None,
        processes: bool,
    ) -> None:
        def changed() -> None:
            if progress is not None:
                progress(self.status)

        pool = None
        if processes and len(todo) > 1:
            global _FORKED
            _FORKED = (read, zstandard.ZstdCompressor(level=3))
            # Forked before any writer thread starts, so the helper inherits no thread's locks.
            pool = multiprocessing.get_context("fork").Pool(1)
            feed: Iterator[Prepared] = pool.imap(_prepare_forked, todo, chunksize=4)
        else:
            feed = prepared_ahead(todo, read, stop)
        queues: list[queue.Queue[Prepared | None]] = [queue.Queue(maxsize=2 * READ_AHEAD) for _ in self.shards]
        reports = [SyncReport() for _ in self.shards]
        failures: list[BaseException] = []
        workers = []
        for number, (shard, plan) in enumerate(zip(self.shards, plans, strict=True)):
            if plan:
                worker = threading.Thread(
                    target=_apply,
                    args=(shard, plan, queues[number], reports[number], changed, failures),
                    name=f"index-shard-{number}",
                    daemon=True,
                )
                worker.start()
                workers.append(worker)
        index_of = {id(shard): number for number, shard in enumerate(self.shards)}
        try:
            for item in feed:
                if failures or (stop is not None and stop.is_set()):
                    break
                if pause is not None:
                    pause()
                queues[index_of[id(self.shard_of(item.session_id))]].put(item)
        finally:
            if pool is not None:
                pool.terminate()
            for shard_queue in queues:
                with contextlib.suppress(queue.Full):
                    shard_queue.put(None, timeout=30)
            for worker in workers:
                worker.join()
        for part in reports:
            report.indexed += part.indexed
            report.unreadable += part.unreadable
            report.titles.update(part.titles)
        if failures:
            raise failures[0]

    # -- reading ----------------------------------------------------------------------------------------

    def titles(self) -> dict[str, tuple[str, str | None]]:
        """Session id -> (revision, title) of every indexed session.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        titles: dict[str, tuple[str, str | None]] = {}
        for shard in self.shards:
            titles.update(shard.reads.titles())
        return titles

    def candidates(
        self, needle: str, cap: int | None = None, budget: float | None = None
    ) -> dict[str, list[int]] | None:
        """Sessions whose chunks may contain folded ``needle``, newest chunk first; ``None`` when
        more than ``cap`` (default ``DENSE_CANDIDATES``) chunks may (a dense query: ``scan`` the
        sessions wanted instead). ``budget`` is not needed here (the FTS lookup is bounded by ``cap``).

        A superset (the index keeps no positions): ``verify`` decides.

        Raises:
            IndexUnavailable: the index cannot be read (or ``interrupt`` stopped the search).
        """
        if cap is None:
            cap = DENSE_CANDIDATES  # read now, not when the module loaded
        found: dict[str, list[int]] = {}
        for shard in self.shards:
            part = shard.reads.candidates(needle, cap)
            if part is None:
                return None
            found.update(part)
            cap -= sum(len(rowids) for rowids in part.values())
        return found

    def scan(self, session_id: str, needle: str) -> Snippet | None:
        """The newest message of ``session_id`` containing ``needle``, reading every chunk of it.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        return self.shard_of(session_id).reads.scan(session_id, needle)

    def verify(self, session_id: str, chunk_rowids: Sequence[int], needle: str) -> Snippet | None:
        """The newest message among these chunks of ``session_id`` that really contains ``needle``.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        return self.shard_of(session_id).reads.verify(chunk_rowids, needle)

    def messages(self, session_id: str) -> list[tuple[str, str]]:
        """The indexed projected conversation of a session as ``(role, text)`` pairs (empty if unknown).

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        return self.shard_of(session_id).reads.messages(session_id)

    # -- ranked words (``word_ranking``) -----------------------------------------------------------------

    def rank(self, query: SearchQuery, *, quick: bool = False, signal: AbortSignal | None = None) -> RankedWords:
        """Every indexed session holding a word of ``query``, with its BM25 score (see ``ranking``).

        Raises:
            IndexUnavailable: the index cannot be read (or ``interrupt`` stopped the search).
        """
        return self.words.rank(query, quick=quick, signal=signal)

    def passages(self, session_id: str, query: SearchQuery, ranked: RankedWords, count: int) -> list[Passage]:
        """The ``count`` messages of ``session_id`` that match ``query`` best, best first.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        return self.words.passages(session_id, query, ranked, count)

    def interrupt(self) -> None:
        """Abort a search running on another thread (it raises ``IndexUnavailable``)."""
        for shard in self.shards:
            shard.reads.interrupt()

    def size_bytes(self) -> int:
        """Bytes on disk (files and write-ahead logs)."""
        return sum(shard.reads.size_bytes() for shard in self.shards)

    def checkpoint(self) -> None:
        """Merge the FTS segments and fold the write-ahead logs into the files (after a big build)."""
        for shard in self.shards:
            shard.writes.checkpoint()


def _apply(
    shard: Shard,
    plan: list[tuple[str, str]],
    items: queue.Queue[Prepared | None],
    report: SyncReport,
    changed: Callable[[], None],
    failures: list[BaseException],
) -> None:
    ended = False

    def drain() -> Iterator[Prepared]:
        nonlocal ended
        while not ended:
            item = items.get()
            if item is None:
                ended = True
                return
            yield item

    try:
        shard.writes.apply(plan, drain(), report, progress=changed)
    except BaseException as error:  # handed to the coordinating thread, which raises it
        failures.append(error)
        # Keep the coordinator from blocking on a full queue, up to its end mark (which the
        # apply may already have taken: the last commit comes after it, and can fail too).
        for _ in drain():
            pass


_FORKED: tuple[Reader, zstandard.ZstdCompressor] | None = None
"""The reader a forked helper process inherited (see ``prepared_ahead``)."""


def _prepare_forked(item: tuple[str, str]) -> Prepared:
    assert _FORKED is not None
    return prepare_session(item[0], item[1], *_FORKED)
