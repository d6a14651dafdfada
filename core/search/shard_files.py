"""One SQLite file of the message index: opening it (writer lock, or read-only beside another
process's writer), checking it is ours and intact, and closing it."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sqlite3
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from core.files import describe, kind_of
from core.folder.jsonl_writer import PRIVATE_FILE, make_private_dirs
from core.search.index_chunks import (
    CHUNK_BYTES,
)
from core.search.index_values import (
    INDEX_CORRUPT,
    INDEX_DISK_FULL,
    INDEX_FAILED,
    INDEX_READ_ONLY,
    INDEX_UNSAFE,
    IndexState,
    IndexStatus,
    IndexUnavailable,
)

INDEX_SCHEMA = 6
"""Bumped whenever the tables or the indexed text change: an older file is rebuilt."""


def classify_failure(error: BaseException) -> IndexUnavailable:
    text = str(error)
    if isinstance(error, sqlite3.OperationalError) and "full" in text:
        return IndexUnavailable(f"the disk is full: {text}", INDEX_DISK_FULL)
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return IndexUnavailable(f"the disk is full: {error.strerror}", INDEX_DISK_FULL)
    damaged = ("malformed", "not a database", "corrupt")
    if isinstance(error, sqlite3.DatabaseError) and (
        not isinstance(error, sqlite3.OperationalError) or any(word in text for word in damaged)
    ):
        return IndexUnavailable(f"the index file is damaged: {text}", INDEX_CORRUPT)
    return IndexUnavailable(f"the index failed: {text}", INDEX_FAILED)


# -- case folding and snippets ------------------------------------------------------------------------


AUTOMERGE = 8
"""FTS segments of one level merged into the next as the index grows (FTS5's ``automerge``)."""
CRISISMERGE = 16
"""Segments of one level that force a merge whatever ``automerge`` says (FTS5's ``crisismerge``)."""
BULK_CRISISMERGE = 64
"""During a big batch: no incremental merging, and a level is merged only once it holds this many
segments (FTS5's ``crisismerge``). A build's merges are mostly redone by the next level's, and the
build ends with an ``optimize``; this spares the work in between (about a tenth of a first build)."""

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(
    key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, revision TEXT NOT NULL, title TEXT, messages INTEGER NOT NULL,
    words INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chunks(
    rowid INTEGER PRIMARY KEY, first_message INTEGER NOT NULL, roles TEXT NOT NULL, starts BLOB NOT NULL,
    digest BLOB NOT NULL, body BLOB NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS terms USING fts5(
    text, tokenize="trigram case_sensitive 1", detail=none, content='', columnsize=0
);
INSERT INTO terms(terms, rank) VALUES ('automerge', {AUTOMERGE});
INSERT INTO terms(terms, rank) VALUES ('crisismerge', {CRISISMERGE});
CREATE TABLE IF NOT EXISTS postings(
    word TEXT NOT NULL, key INTEGER NOT NULL, count INTEGER NOT NULL, PRIMARY KEY(word, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS words(word TEXT PRIMARY KEY, sessions INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vectors(rowid INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS embed_queue(rowid INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS session_vectors(key INTEGER PRIMARY KEY, data BLOB NOT NULL);
"""


def fingerprint() -> dict[str, str]:
    # What the indexed text depends on: a different Python (Unicode tables) folds differently, and
    # a contentless FTS table can only delete exactly the text it indexed.
    return {"schema": str(INDEX_SCHEMA), "unicode": unicodedata.unidata_version, "chunk": str(CHUNK_BYTES)}


class ShardFiles:
    """A shard's file and what its reader and writer share: the connections, the writer lock, the
    sessions it holds (``known``: id -> (key, revision)) and its status. ``Shard`` has one, and
    gives it to its ``ShardReader`` and ``ShardWriter``; their state is this object's, guarded by
    ``lock``.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None
        self.lock = threading.RLock()
        self.write_lock = threading.RLock()
        """Held by whatever writes the file in a transaction of its own: a batch of words, a write of
        vectors (they may run on two threads: a builder embeds while it indexes). Taken before
        ``lock`` when both are."""
        # A search reads on its own connection without ``_lock`` (so it never waits for a batch);
        # ``_reading`` is held for such a read, and closing waits for it. ``_handle`` guards the
        # connections' lifetime for ``interrupt``, which must not wait for the read it stops.
        # Order: ``_lock``, then ``_reading``, then ``_handle``.
        self.reading = threading.Lock()
        self.handle = threading.Lock()
        self.writer: sqlite3.Connection | None = None
        self.reader: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self.known: dict[str, tuple[int, str]] = {}
        self.ids: dict[int, str] = {}
        self.lengths: dict[int, int] = {}
        """Session key -> how many indexed words its conversation holds (BM25's document length)."""
        self.length_version = 0
        """Counts the changes made to ``lengths`` in place (a search's copy of them is made again)."""
        self.length_cache: tuple[int, dict[int, int], Any] | None = None
        self.next_key = 1
        self._status = IndexStatus("empty")
        self.closed = False
        self.damaged: IndexUnavailable | None = None
        self.wanted: dict[str, str] = {}
        self.removed = 0

    # -- status ---------------------------------------------------------------------------------------

    @property
    def status(self) -> IndexStatus:
        """The latest status (safe to read from any thread)."""
        return self._status

    def set_status(self, state: IndexState, indexed: int, total: int, problem: IndexUnavailable | None = None) -> None:
        code = problem.code if problem is not None else None
        self._status = IndexStatus(state, indexed, total, code, problem.message if problem is not None else None)

    @property
    def writable(self) -> bool:
        """Whether this instance holds the writer lock (else another process keeps the index)."""
        return self.writer is not None

    def pending(self, sources: Sequence[tuple[str, str]]) -> int:
        """How many of ``sources`` are not indexed at their revision (as this instance last saw)."""
        return sum(1 for session_id, revision in sources if self.known_revision(session_id) != revision)

    # -- opening --------------------------------------------------------------------------------------

    def open(self) -> None:
        """Open the file now (``sync`` opens it too); a damaged or outdated one is rebuilt empty.

        Raises:
            IndexUnavailable: ``SEARCH_INDEX_READ_ONLY`` while another process creates it,
                ``SEARCH_INDEX_DISK_FULL`` or ``SEARCH_INDEX_FAILED``.
        """
        with self.lock:
            if self.closed:
                raise IndexUnavailable("the index is closed", INDEX_FAILED)
            try:
                self.open_locked()
            except (sqlite3.Error, OSError) as error:
                raise classify_failure(error) from error

    def _connect(self, *, wal: bool = False) -> sqlite3.Connection:
        if self.path is not None:
            # Owner-only from the start, whatever the umask: SQLite gives -wal and -shm its mode.
            with contextlib.suppress(FileExistsError):
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                os.close(os.open(self.path, flags, PRIVATE_FILE))
        target = ":memory:" if self.path is None else str(self.path)
        connection = sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=5.0)
        if self.path is not None:
            if wal:
                # Only on a file known to be ours (checked by _fresh_writer first): a foreign SQLite file
                # is never switched to WAL.
                connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    def open_locked(self) -> None:
        """Open (or re-open) the file, taking the writer lock when it is free.

        A file found damaged (here or by a search), replaced or deleted since it was opened is
        dropped; the writer then rebuilds it from nothing.
        """
        if self.writer is not None or self.reader is not None:
            if self.damaged is None and not self.file_replaced() and not self._probe_fails():
                if self.writer is None:
                    self._try_become_writer()
                return
            self.drop_connections(keep_lock=True)
            if self._lock_fd is not None and self.damaged is not None:
                self._remove_files()
        self.damaged = None
        if self.path is not None:
            self._check_files()
            make_private_dirs(self.path.parent)
            self._try_lock()
        if self._lock_fd is not None or self.path is None:
            self._open_writer()
        else:
            self.open_reader_only()

    def _probe_fails(self) -> bool:
        # A cheap read of the first pages: an overwritten file shows here, not only in a search.
        connection = self.reader or self.writer
        assert connection is not None
        try:
            connection.execute("SELECT count(*) FROM meta").fetchone()
        except sqlite3.Error as error:
            problem = classify_failure(error)
            if problem.code == INDEX_CORRUPT:
                self.damaged = problem
            return True
        return False

    def _check_files(self) -> None:
        """The index folder is a real folder and every file of this shard a regular file (or absent):
        SQLite follows symlinks and would write through them, and opens a FIFO blocking.

        Raises:
            IndexUnavailable: ``SEARCH_INDEX_UNSAFE_PATH`` naming the file (doctor reports it too).
        """
        assert self.path is not None
        base = str(self.path)
        checks = [(self.path.parent, "directory")]
        checks += [(Path(base + suffix), "regular") for suffix in ("", "-wal", "-shm", "-journal", ".lock")]
        for path, expected in checks:
            try:
                status = os.lstat(path)
            except FileNotFoundError:
                continue
            kind = kind_of(status.st_mode)
            if kind == "regular" and status.st_nlink > 1:
                kind = "a hard link to another file"  # writing it would change that file too
            if kind != expected:
                raise IndexUnavailable(
                    f"{path} is {describe(kind)}: the index never follows or opens it; remove it and the index "
                    "is rebuilt",
                    INDEX_UNSAFE,
                )

    def _try_lock(self) -> None:
        assert self.path is not None
        if self._lock_fd is not None:
            return
        # O_NOFOLLOW: a dangling symlink here would otherwise create its target, anywhere.
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(str(self.path) + ".lock", flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return
        self._lock_fd = fd

    def _try_become_writer(self) -> None:
        if self.path is None:
            return
        self._try_lock()
        if self._lock_fd is not None:
            self.drop_connections(keep_lock=True)
            self._open_writer()

    def _open_writer(self) -> None:
        try:
            connection = self._fresh_writer()
        except sqlite3.DatabaseError as error:
            if classify_failure(error).code != INDEX_CORRUPT:
                raise
            # A damaged file is rebuilt from the store: it was never the source of truth.
            self._remove_files()
            connection = self._fresh_writer()
        self.writer = connection
        self.reader = connection if self.path is None else self._connect()
        self._inode = self._file_inode()

    def _fresh_writer(self) -> sqlite3.Connection:
        connection = self._connect()
        try:
            if not self._compatible(connection):
                connection.close()
                self._remove_files()
                connection = self._connect()
            if self.path is not None:
                connection.execute("PRAGMA journal_mode=WAL")
            connection.executescript(SCHEMA)
            with transaction(connection):
                for key, value in fingerprint().items():
                    connection.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
                # A new file's vocabulary is current (empty); one from before it is made at the next sync.
                connection.execute(
                    "INSERT OR IGNORE INTO meta(key, value) SELECT 'vocabulary', 'fresh' "
                    "WHERE NOT EXISTS (SELECT 1 FROM postings)"
                )
            self.load_known(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def open_reader_only(self) -> None:
        assert self.path is not None
        if not self.path.exists():
            raise IndexUnavailable("another sessionref is creating the index", INDEX_READ_ONLY)
        connection = self._connect()
        try:
            if not self._compatible(connection):
                raise IndexUnavailable("the index is outdated and another sessionref owns it", INDEX_READ_ONLY)
            self.load_known(connection)
        except sqlite3.DatabaseError as error:
            connection.close()
            raise classify_failure(error) from error
        except IndexUnavailable:
            connection.close()
            raise
        self.reader = connection
        self._inode = self._file_inode()

    def load_known(self, connection: sqlite3.Connection) -> None:
        rows = connection.execute("SELECT key, id, revision, words FROM sessions").fetchall()
        self.known = {session_id: (key, revision) for key, session_id, revision, _words in rows}
        self.ids = {key: session_id for key, session_id, _revision, _words in rows}
        self.lengths = {key: words for key, _id, _revision, words in rows}
        self.next_key = max(self.ids, default=0) + 1

    def _compatible(self, connection: sqlite3.Connection) -> bool:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return True  # a new file
        if "meta" not in tables:
            return False
        stored = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        return all(stored.get(key) == value for key, value in fingerprint().items())

    def _file_inode(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return stat.st_dev, stat.st_ino

    def file_replaced(self) -> bool:
        return self.path is not None and self._file_inode() != self._inode

    def _remove_files(self) -> None:
        if self.path is None:
            return
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)

    def drop_connections(self, keep_lock: bool = False) -> None:
        # Closing a connection another thread is reading on, or interrupting, crashes the process.
        with self.reading, self.handle:
            for connection in {id(c): c for c in (self.writer, self.reader) if c is not None}.values():
                with contextlib.suppress(sqlite3.Error):
                    connection.close()
            self.writer = self.reader = None
        self.known, self.ids, self.lengths = {}, {}, {}
        if not keep_lock and self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def known_revision(self, session_id: str) -> str | None:
        known = self.known.get(session_id)
        return known[1] if known is not None else None

    def close(self) -> None:
        """Close the file and give up the writer lock."""
        with self.lock:
            self.closed = True
            self.drop_connections()
            self.set_status("closed", 0, 0)

    def release(self) -> None:
        """Close the file and give up the writer lock until the next ``open``."""
        with self.lock:
            self.drop_connections()


@contextlib.contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[None]:
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
