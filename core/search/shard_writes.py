"""Keeping one SQLite file of the message index current: which sessions to (re)index, writing
their chunks in batches, and following another process's progress read-only."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from core.search import vocabulary
from core.search.index_chunks import (
    CHUNK_BITS,
    CHUNK_MASK,
    Prepared,
    sqlite_text,
    stored_title,
    unindex,
    write_counts,
)
from core.search.index_values import (
    INDEX_CORRUPT,
    INDEX_DISK_FULL,
    INDEX_READ_ONLY,
    IndexState,
    IndexUnavailable,
    SyncReport,
)
from core.search.shard_files import AUTOMERGE, BULK_CRISISMERGE, CRISISMERGE, ShardFiles, classify_failure, transaction
from core.search.shard_vectors import forget_chunks, queue_chunk

COMMIT_INTERVAL = 0.25
"""Seconds of indexing between two commits (what another reader sees, and what a crash can lose)."""


class ShardWriter:
    """Keeping a shard current: which sessions to (re)index, writing them in batches.

    Args:
        files: the shard's file and the state its reader and writer share.
    """

    def __init__(self, files: ShardFiles) -> None:
        self._files = files
        self._new_postings: list[tuple[str, int, int]] = []
        """The postings of sessions new to the index, written in word order when the batch commits
        (what makes a first build fast: the B-tree's pages are visited in order, once per batch)."""
        self._vocabulary = False
        """Whether writes keep the vocabulary row by row (it is fresh and the batch is small)."""

    def _flush_postings(self, connection: sqlite3.Connection) -> None:
        rows = sorted(self._new_postings)
        self._new_postings.clear()
        if rows:
            connection.executemany("INSERT OR REPLACE INTO postings(word, key, count) VALUES (?, ?, ?)", rows)
            if self._vocabulary:
                held: Counter[str] = Counter()
                for word, _key, _count in rows:
                    held[word] += 1
                vocabulary.change(connection, held)

    def refresh(self, sources: Sequence[tuple[str, str]]) -> None:
        """Read another process's progress from the file, never taking the writer lock."""
        with self._files.lock:
            if self._files.closed:
                return
            if self._files.reader is not None and self._files.file_replaced():
                self._files.drop_connections()
            if self._files.reader is None:
                try:
                    self._files.open_reader_only()
                except (IndexUnavailable, sqlite3.Error, OSError):
                    self._files.set_status("building", 0, len(sources))
                    return
            self._refresh_read_only(sources)

    # -- keeping it current ---------------------------------------------------------------------------

    def plan(self, sources: Sequence[tuple[str, str]]) -> list[tuple[str, str]] | None:
        """Open the shard, drop sessions no longer in ``sources``, and say which to (re)index.

        ``None`` when another process keeps this shard (its progress and titles are read instead).

        Raises:
            IndexUnavailable: the shard cannot be opened or written.
        """
        self._files.wanted = wanted = dict(sources)
        with self._files.lock:
            if self._files.closed:
                return []
            try:
                try:
                    self._files.open_locked()
                except (sqlite3.Error, OSError) as error:
                    raise classify_failure(error) from error
            except IndexUnavailable as problem:
                state: IndexState = "read-only" if problem.code == INDEX_READ_ONLY else "failed"
                self._files.set_status(state, 0, len(sources), problem)
                if problem.code == INDEX_READ_ONLY:
                    return None
                raise
            if self._files.writer is None:
                self._refresh_read_only(sources)
                return None
            writer = self._files.writer
        todo = [(sid, revision) for sid, revision in sources if self._files.known_revision(sid) != revision]
        self._files.set_status("building" if todo else "ready", len(wanted) - len(todo), len(wanted))
        gone = [session_id for session_id in list(self._files.known) if session_id not in wanted]
        if gone:
            self._vocabulary = self._keep_vocabulary(writer, len(gone))
            batch = self._batch()
            try:
                batch.begin()
                for session_id in gone:
                    self._delete_session(writer, session_id)
                if not self._vocabulary:
                    vocabulary.remake(writer)
                batch.commit()
            except (sqlite3.Error, OSError) as error:
                batch.rollback()
                raise self._after_failure(classify_failure(error), wanted) from error
            finally:
                self._vocabulary = False
            self._files.removed = len(gone)
        elif not todo:
            self._remake_stale_vocabulary(writer, wanted)  # (a sync with writes makes it at their end)
        return todo

    def _remake_stale_vocabulary(self, writer: sqlite3.Connection, wanted: Mapping[str, str]) -> None:
        """Make the vocabulary again if it is stale (a build stopped midway, a file from before it)."""
        try:
            with self._files.write_lock, self._files.lock:
                if not vocabulary.is_fresh(writer):
                    with transaction(writer):
                        vocabulary.remake(writer)
        except (sqlite3.Error, OSError) as error:
            raise self._after_failure(classify_failure(error), wanted) from error

    def _batch(self) -> WriteBatch:
        # A file-backed shard has its own reader connection, so searches never wait for a batch;
        # in memory the one connection is shared and the lock keeps a search out of a batch.
        assert self._files.writer is not None
        shared = self._files.reader is self._files.writer
        lock = self._files.lock if shared else self._files.write_lock
        self._new_postings.clear()
        return WriteBatch(self._files.writer, lock, shared, self._flush_postings, self._new_postings.clear)

    def apply(
        self,
        todo: Sequence[tuple[str, str]],
        prepared: Iterable[Prepared],
        report: SyncReport,
        *,
        pause: Callable[[], None] | None = None,
        progress: Callable[[], None] | None = None,
    ) -> None:
        """Write ``prepared`` sessions (those of ``todo``, in order), committing every ``COMMIT_INTERVAL``.

        Raises:
            IndexUnavailable: the disk is full or the shard cannot be written (what was committed
                stays; the next sync goes on from there).
        """
        wanted = self._files.wanted
        writer = self._files.writer
        assert writer is not None
        total = len(wanted)
        done = total - len(todo)
        self._vocabulary = self._keep_vocabulary(writer, len(todo))
        bulk = len(todo) > vocabulary.STALE_AFTER
        if bulk:
            self._merging(writer, bulk=True)
        batch = self._batch()
        try:
            started = time.perf_counter()
            for item in prepared:
                if pause is not None:
                    if batch.shared:
                        batch.commit()
                    pause()
                if item.unreadable:
                    report.unreadable += 1
                if item.session is not None:
                    batch.begin()
                    self._write_session(writer, item)
                    report.titles[item.session_id] = (item.revision, item.session.title)
                    report.indexed += 1
                done += 1
                if time.perf_counter() - started > COMMIT_INTERVAL:
                    batch.commit()
                    started = time.perf_counter()
                    self._files.set_status("building", done, total)
                    if progress is not None:
                        progress()
            batch.commit()
            if not self._vocabulary:
                batch.begin()
                vocabulary.remake(writer)
                batch.commit()
        except (sqlite3.Error, OSError) as error:
            batch.rollback()
            raise self._after_failure(classify_failure(error), wanted) from error
        finally:
            batch.rollback()
            self._vocabulary = False
            if bulk:
                with contextlib.suppress(sqlite3.Error, OSError):  # (a writer opened later sets it again)
                    self._merging(writer, bulk=False)
        current = self._count_current(wanted)
        self._files.set_status("ready" if current >= total else "building", current, total)

    def _merging(self, writer: sqlite3.Connection, *, bulk: bool) -> None:
        """How the FTS segments merge: lazily during a big batch (``BULK_CRISISMERGE``), else as usual."""
        automerge, crisismerge = (0, BULK_CRISISMERGE) if bulk else (AUTOMERGE, CRISISMERGE)
        with self._files.write_lock, self._files.lock, transaction(writer):
            writer.execute("INSERT INTO terms(terms, rank) VALUES ('automerge', ?)", (automerge,))
            writer.execute("INSERT INTO terms(terms, rank) VALUES ('crisismerge', ?)", (crisismerge,))

    def _keep_vocabulary(self, writer: sqlite3.Connection, sessions: int) -> bool:
        """Whether this batch keeps the vocabulary row by row; a big one marks it stale first (it
        is made again at the end)."""
        with self._files.write_lock, self._files.lock:
            fresh = vocabulary.is_fresh(writer)
            if fresh and sessions > vocabulary.STALE_AFTER:
                with transaction(writer):
                    vocabulary.mark_stale(writer)
                return False
        return fresh

    def _after_failure(self, failure: IndexUnavailable, wanted: Mapping[str, str]) -> IndexUnavailable:
        with self._files.lock:
            # What was not committed is gone from the file: forget it here too.
            connection = self._files.reader or self._files.writer
            try:
                if connection is not None:
                    self._files.load_known(connection)
            except sqlite3.Error as error:
                self._files.known, self._files.ids, self._files.lengths = {}, {}, {}
                if failure.code != INDEX_DISK_FULL:
                    failure = classify_failure(error)
            if failure.code == INDEX_CORRUPT:
                self._files.damaged = failure
            self._files.set_status("failed", self._count_current(wanted), len(wanted), failure)
        return failure

    def _refresh_read_only(self, sources: Sequence[tuple[str, str]]) -> None:
        # Another process writes; take its progress from the file.
        wanted = dict(sources)
        try:
            assert self._files.reader is not None
            self._files.load_known(self._files.reader)
        except sqlite3.Error as error:
            self._files.set_status("failed", 0, len(wanted), classify_failure(error))
            return
        owned = IndexUnavailable("another sessionref keeps the index; searching its copy", INDEX_READ_ONLY)
        self._files.set_status("read-only", self._count_current(wanted), len(wanted), owned)

    def _count_current(self, wanted: Mapping[str, str]) -> int:
        return sum(1 for session_id, revision in wanted.items() if self._files.known_revision(session_id) == revision)

    def _delete_session(self, connection: sqlite3.Connection, session_id: str) -> None:
        known = self._files.known.pop(session_id, None)
        if known is None:
            return
        key = known[0]
        self._files.ids.pop(key, None)
        self._files.lengths.pop(key, None)
        self._files.length_version += 1
        low, high = key << CHUNK_BITS, (key << CHUNK_BITS) | CHUNK_MASK
        gone: Counter[str] = Counter()
        for rowid, body in connection.execute(
            "SELECT rowid, body FROM chunks WHERE rowid BETWEEN ? AND ?", (low, high)
        ).fetchall():
            gone.update(unindex(connection, rowid, body))
        connection.executemany(
            "DELETE FROM postings WHERE word = ? AND key = ?", [(sqlite_text(word), key) for word in gone]
        )
        if self._vocabulary:
            vocabulary.change(connection, {sqlite_text(word): -1 for word, count in gone.items() if count > 0})
        connection.execute("DELETE FROM chunks WHERE rowid BETWEEN ? AND ?", (low, high))
        forget_chunks(connection, low, high)
        connection.execute("DELETE FROM sessions WHERE key = ?", (key,))

    def _write_session(self, connection: sqlite3.Connection, prepared: Prepared) -> None:
        session = prepared.session
        assert session is not None
        session_id, chunks = prepared.session_id, prepared.chunks
        title = session.title
        known = self._files.known.get(session_id)
        if known is None:
            key = self._files.next_key
            self._files.next_key += 1
            connection.execute(
                "INSERT INTO sessions(key, id, revision, title, messages) VALUES (?, ?, ?, ?, ?)",
                (key, sqlite_text(session_id), session.revision, stored_title(title), len(session.messages)),
            )
            old: list[tuple[int, bytes, bytes]] = []
        else:
            key = known[0]
            connection.execute(
                "UPDATE sessions SET revision = ?, title = ?, messages = ? WHERE key = ?",
                (session.revision, stored_title(title), len(session.messages), key),
            )
            old = connection.execute(
                "SELECT rowid, digest, body FROM chunks WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
                (key << CHUNK_BITS, (key << CHUNK_BITS) | CHUNK_MASK),
            ).fetchall()
        base = key << CHUNK_BITS
        change: Counter[str] = Counter()
        for ordinal, chunk in enumerate(chunks[: CHUNK_MASK + 1]):
            rowid = base | ordinal
            row = (chunk.first_message, chunk.roles, chunk.starts.tobytes(), chunk.digest, chunk.body, rowid)
            if ordinal < len(old):
                if old[ordinal][1] == chunk.digest:
                    continue  # unchanged: an append re-indexes only the last chunk
                change.subtract(unindex(connection, rowid, old[ordinal][2]))
                connection.execute(
                    "UPDATE chunks SET first_message = ?, roles = ?, starts = ?, digest = ?, body = ? WHERE rowid = ?",
                    row,
                )
            else:
                connection.execute(
                    "INSERT INTO chunks(first_message, roles, starts, digest, body, rowid) VALUES (?, ?, ?, ?, ?, ?)",
                    row,
                )
            connection.execute("INSERT INTO terms(rowid, text) VALUES (?, ?)", (rowid, chunk.terms))
            queue_chunk(connection, rowid)  # its vectors follow its words
            change.update(chunk.counts)
        for rowid, _digest, body in old[len(chunks) :]:
            change.subtract(unindex(connection, rowid, body))
            connection.execute("DELETE FROM chunks WHERE rowid = ?", (rowid,))
            forget_chunks(connection, rowid, rowid)
        if known is None:
            length = 0
            for word, count in change.items():
                if count > 0:
                    self._new_postings.append((sqlite_text(word), key, count))
                    length += count
        else:
            length = self._files.lengths.get(key, 0) + write_counts(connection, key, change, self._vocabulary)
        connection.execute("UPDATE sessions SET words = ? WHERE key = ?", (length, key))
        self._files.lengths[key] = length
        self._files.known[session_id] = (key, session.revision)
        self._files.ids[key] = session_id
        self._files.length_version += 1  # (last: a search that reads this version sees the session)

    def checkpoint(self) -> None:
        """Merge the FTS segments and fold the write-ahead log into the file (after a big build)."""
        with self._files.write_lock, self._files.lock:
            if self._files.writer is None:
                return
            with contextlib.suppress(sqlite3.Error):
                self._files.writer.execute("INSERT INTO terms(terms) VALUES ('optimize')")
                self._files.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class WriteBatch:
    """An ``IMMEDIATE`` transaction opened on the first write and committed on demand."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        lock: threading.RLock,
        shared: bool,
        before_commit: Callable[[sqlite3.Connection], None] = lambda _connection: None,
        discard: Callable[[], None] = lambda: None,
    ) -> None:
        self.connection = connection
        self.lock = lock
        self.shared = shared
        self.before_commit = before_commit
        self.discard = discard
        self.active = False

    def begin(self) -> None:
        if not self.active:
            self.lock.acquire()
            try:
                self.connection.execute("BEGIN IMMEDIATE")
            except BaseException:
                self.lock.release()
                raise
            self.active = True

    def commit(self) -> None:
        if self.active:
            try:
                self.before_commit(self.connection)
                self.connection.execute("COMMIT")
            except BaseException:
                # A failed commit (a full disk) can leave the transaction open: end it here.
                with contextlib.suppress(sqlite3.Error):
                    self.connection.execute("ROLLBACK")
                raise
            finally:
                self.active = False
                self.lock.release()

    def rollback(self) -> None:
        if self.active:
            self.discard()
            try:
                with contextlib.suppress(sqlite3.Error):
                    self.connection.execute("ROLLBACK")
            finally:
                self.active = False
                self.lock.release()
