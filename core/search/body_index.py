"""The message-body index beside a store: SQLite FTS5 with a trigram tokenizer, never the truth.

It holds the *projected* conversation of every session (CONTRACT §5: what a reference would send,
so tool output and baked snapshots are never indexed) and answers "which sessions contain this
text, and where". ``sync`` brings it in line with the store's per-file revisions; a missing,
replaced, outdated or damaged file is rebuilt from the store.

One SQLite file (WAL journal), three tables:

- ``sessions``: one row per session: key, id, the revision it was indexed at, its title.
- ``chunks``: a session's projected messages in runs of at most ``CHUNK_BYTES`` of text. Each row
  keeps the run's original text (messages joined by ``\\n``, zstd-compressed), where each message
  starts, their roles, and a digest, so an append re-indexes only the last chunk. The row id is
  ``session key << CHUNK_BITS | ordinal``: a session's chunks are one id range.
- ``terms``: a contentless FTS5 table (``detail=none``: no positions, so the index stays well under
  the size of the text) over the case-folded chunk text. A match is a *candidate*: every hit is
  verified against the stored text, which also gives the snippet.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import errno
import fcntl
import hashlib
import itertools
import multiprocessing
import os
import queue
import sqlite3
import threading
import time
import unicodedata
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from core.files import describe, kind_of
from core.search.index_values import (
    INDEX_CORRUPT,
    INDEX_DISK_FULL,
    INDEX_FAILED,
    INDEX_READ_ONLY,
    INDEX_UNSAFE,
    IndexedSession,
    IndexState,
    IndexStatus,
    IndexUnavailable,
    Reader,
    SyncReport,
)
from core.search.matching import Snippet, fold, make_snippet
from core.sessions.jsonl_writer import PRIVATE_FILE, make_private_dirs
from core.sessions.models import ProjectedItem

INDEX_FILE_NAME = ".sessionref-index"
"""The index folder, in the store root (its files are never taken for sessions by a listing)."""
SHARDS = 2
"""SQLite files the index is spread over (written in parallel by a first build)."""
INDEX_SCHEMA = 4
"""Bumped whenever the tables or the indexed text change: an older file is rebuilt."""
CHUNK_BYTES = 8 * 1024
"""A chunk holds whole messages up to this many UTF-8 bytes of text (one message may be larger).
Small chunks keep a candidate cheap to verify and make the trigram pre-filter selective."""
CHUNK_BITS = 20
"""Chunk row id = session key << CHUNK_BITS | ordinal."""
DENSE_CANDIDATES = 4096
"""Above this many candidate chunks a query is "dense": sessions are scanned one by one, in order."""
COMMIT_INTERVAL = 0.25
"""Seconds of indexing between two commits (what another reader sees, and what a crash can lose)."""
READ_AHEAD = 8
"""Sessions read and prepared ahead of the writer during a sync (on a second thread)."""


def index_path_beside(root: str | os.PathLike[str]) -> Path:
    """Where the body index of the store at ``root`` lives."""
    return Path(root) / INDEX_FILE_NAME


# -- values ------------------------------------------------------------------------------------------


def _classify(error: BaseException) -> IndexUnavailable:
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


def _sqlite_text(text: str) -> str:
    # SQLite takes valid UTF-8 only; a lone surrogate (a hostile log) becomes U+FFFD in the
    # pre-filter text. Verification reads the stored original, so matches stay exact.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)
    return text


def trigram_query(needle: str) -> str | None:
    """The FTS5 query for chunks that may contain folded ``needle``: its trigrams, ANDed.

    Only trigrams inside one word of the needle count (the index holds words, ``_terms_text``);
    ``None`` when there is none, i.e. the needle cannot be pre-filtered.
    """
    needle = _sqlite_text(needle)
    grams = dict.fromkeys(word[i : i + 3] for word in needle.split() for i in range(len(word) - 2))
    if not grams:
        return None
    return " AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams)


# -- chunks ---------------------------------------------------------------------------------------------

_ROLE_CODES = {"user": "u", "assistant": "a", "summary": "s"}
_ROLES = {code: role for role, code in _ROLE_CODES.items()}


@dataclass(slots=True)
class _Chunk:
    """A run of messages as stored: text joined by ``\\n``, start offsets, role codes."""

    first_message: int
    text: str
    starts: array[int]
    roles: str
    body: bytes = b""
    digest: bytes = b""
    terms: str = ""


def _chunks(items: Sequence[ProjectedItem]) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    texts: list[str] = []
    roles: list[str] = []
    first = size = 0
    for position, item in enumerate(items):
        length = len(item.text) if item.text.isascii() else len(item.text.encode("utf-8", "surrogatepass"))
        if texts and size + length > CHUNK_BYTES:
            chunks.append(_chunk(first, texts, roles))
            texts, roles, first, size = [], [], position, 0
        texts.append(item.text)
        roles.append(_ROLE_CODES["summary" if item.checkpoint else item.role])
        size += length
    if texts:
        chunks.append(_chunk(first, texts, roles))
    return chunks


def _chunk(first: int, texts: list[str], roles: list[str]) -> _Chunk:
    starts = array("I")
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 1
    return _Chunk(first, "\n".join(texts), starts, "".join(roles))


def _seal(chunk: _Chunk, compressor: zstandard.ZstdCompressor) -> None:
    raw = chunk.text.encode("utf-8", "surrogatepass")
    chunk.body = compressor.compress(raw)
    chunk.digest = hashlib.blake2b(raw + chunk.roles.encode() + chunk.starts.tobytes(), digest_size=16).digest()
    chunk.terms = _terms_text(chunk.text)


def _unpack(body: bytes) -> str:
    return zstandard.ZstdDecompressor().decompress(body).decode("utf-8", "surrogatepass")


def _terms_text(text: str) -> str:
    """What the FTS table indexes for a chunk: its distinct whitespace-separated words, folded.

    Whitespace never occurs inside a picker query, so every trigram a query can contain lies inside
    one word: indexing each distinct word once loses no match and halves the text the tokenizer
    walks. (A query with whitespace filters on its trigrams without whitespace; see ``trigram_query``.)
    """
    # A NUL ends the text for SQLite's tokenizer: split there too (no query can hold one), so the
    # words after it are indexed.
    return _sqlite_text(" ".join(dict.fromkeys(fold(text).replace("\x00", " ").split())))


@dataclass(slots=True)
class _Prepared:
    """A session read and chunked on the helper thread, ready to write."""

    session_id: str
    revision: str
    session: IndexedSession | None
    chunks: list[_Chunk]
    unreadable: bool = False


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(
    key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, revision TEXT NOT NULL, title TEXT, messages INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks(
    rowid INTEGER PRIMARY KEY, first_message INTEGER NOT NULL, roles TEXT NOT NULL, starts BLOB NOT NULL,
    digest BLOB NOT NULL, body BLOB NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS terms USING fts5(
    text, tokenize="trigram case_sensitive 1", detail=none, content='', columnsize=0
);
INSERT INTO terms(terms, rank) VALUES ('automerge', 8);
"""
_CHUNK_MASK = (1 << CHUNK_BITS) - 1


def _fingerprint() -> dict[str, str]:
    # What the indexed text depends on: a different Python (Unicode tables) folds differently, and
    # a contentless FTS table can only delete exactly the text it indexed.
    return {"schema": str(INDEX_SCHEMA), "unicode": unicodedata.unidata_version, "chunk": str(CHUNK_BYTES)}


# -- the index ------------------------------------------------------------------------------------------


class _Shard:
    """One SQLite file of the index: its sessions, chunks and FTS table, and its writer lock.

    One process writes a shard at a time (an advisory lock on ``<file>.lock``); another process
    searches it read-only and takes over writing once the first one exits.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.RLock()
        # A search reads on its own connection without ``_lock`` (so it never waits for a batch);
        # ``_reading`` is held for such a read, and closing waits for it. ``_handle`` guards the
        # connections' lifetime for ``interrupt``, which must not wait for the read it stops.
        # Order: ``_lock``, then ``_reading``, then ``_handle``.
        self._reading = threading.Lock()
        self._handle = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self._known: dict[str, tuple[int, str]] = {}
        self._ids: dict[int, str] = {}
        self._next_key = 1
        self._status = IndexStatus("empty")
        self._closed = False
        self._damaged: IndexUnavailable | None = None
        self._wanted: dict[str, str] = {}
        self.removed = 0

    # -- status ---------------------------------------------------------------------------------------

    @property
    def status(self) -> IndexStatus:
        """The latest status (safe to read from any thread)."""
        return self._status

    def _set_status(self, state: IndexState, indexed: int, total: int, problem: IndexUnavailable | None = None) -> None:
        code = problem.code if problem is not None else None
        self._status = IndexStatus(state, indexed, total, code, problem.message if problem is not None else None)

    @property
    def writable(self) -> bool:
        """Whether this instance holds the writer lock (else another process keeps the index)."""
        return self._writer is not None

    def pending(self, sources: Sequence[tuple[str, str]]) -> int:
        """How many of ``sources`` are not indexed at their revision (as this instance last saw)."""
        return sum(1 for session_id, revision in sources if self._known_revision(session_id) != revision)

    # -- opening --------------------------------------------------------------------------------------

    def open(self) -> None:
        """Open the file now (``sync`` opens it too); a damaged or outdated one is rebuilt empty.

        Raises:
            IndexUnavailable: ``SEARCH_INDEX_READ_ONLY`` while another process creates it,
                ``SEARCH_INDEX_DISK_FULL`` or ``SEARCH_INDEX_FAILED``.
        """
        with self._lock:
            if self._closed:
                raise IndexUnavailable("the index is closed", INDEX_FAILED)
            try:
                self._open()
            except (sqlite3.Error, OSError) as error:
                raise _classify(error) from error

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

    def _open(self) -> None:
        """Open (or re-open) the file, taking the writer lock when it is free.

        A file found damaged (here or by a search), replaced or deleted since it was opened is
        dropped; the writer then rebuilds it from nothing.
        """
        if self._writer is not None or self._reader is not None:
            if self._damaged is None and not self._file_replaced() and not self._probe_fails():
                if self._writer is None:
                    self._try_become_writer()
                return
            self._drop_connections(keep_lock=True)
            if self._lock_fd is not None and self._damaged is not None:
                self._remove_files()
        self._damaged = None
        if self.path is not None:
            self._check_files()
            make_private_dirs(self.path.parent)
            self._try_lock()
        if self._lock_fd is not None or self.path is None:
            self._open_writer()
        else:
            self._open_reader_only()

    def _probe_fails(self) -> bool:
        # A cheap read of the first pages: an overwritten file shows here, not only in a search.
        connection = self._reader or self._writer
        assert connection is not None
        try:
            connection.execute("SELECT count(*) FROM meta").fetchone()
        except sqlite3.Error as error:
            problem = _classify(error)
            if problem.code == INDEX_CORRUPT:
                self._damaged = problem
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
            self._drop_connections(keep_lock=True)
            self._open_writer()

    def _open_writer(self) -> None:
        try:
            connection = self._fresh_writer()
        except sqlite3.DatabaseError as error:
            if _classify(error).code != INDEX_CORRUPT:
                raise
            # A damaged file is rebuilt from the store: it was never the source of truth.
            self._remove_files()
            connection = self._fresh_writer()
        self._writer = connection
        self._reader = connection if self.path is None else self._connect()
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
            connection.executescript(_SCHEMA)
            with _transaction(connection):
                for key, value in _fingerprint().items():
                    connection.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
            self._load_known(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def _open_reader_only(self) -> None:
        assert self.path is not None
        if not self.path.exists():
            raise IndexUnavailable("another sessionref is creating the index", INDEX_READ_ONLY)
        connection = self._connect()
        try:
            if not self._compatible(connection):
                raise IndexUnavailable("the index is outdated and another sessionref owns it", INDEX_READ_ONLY)
            self._load_known(connection)
        except sqlite3.DatabaseError as error:
            connection.close()
            raise _classify(error) from error
        except IndexUnavailable:
            connection.close()
            raise
        self._reader = connection
        self._inode = self._file_inode()

    def _load_known(self, connection: sqlite3.Connection) -> None:
        rows = connection.execute("SELECT key, id, revision FROM sessions").fetchall()
        self._known = {session_id: (key, revision) for key, session_id, revision in rows}
        self._ids = {key: session_id for key, session_id, _revision in rows}
        self._next_key = max(self._ids, default=0) + 1

    def _compatible(self, connection: sqlite3.Connection) -> bool:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return True  # a new file
        if "meta" not in tables:
            return False
        stored = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        return all(stored.get(key) == value for key, value in _fingerprint().items())

    def _file_inode(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return stat.st_dev, stat.st_ino

    def _file_replaced(self) -> bool:
        return self.path is not None and self._file_inode() != self._inode

    def _remove_files(self) -> None:
        if self.path is None:
            return
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)

    def _drop_connections(self, keep_lock: bool = False) -> None:
        # Closing a connection another thread is reading on, or interrupting, crashes the process.
        with self._reading, self._handle:
            for connection in {id(c): c for c in (self._writer, self._reader) if c is not None}.values():
                with contextlib.suppress(sqlite3.Error):
                    connection.close()
            self._writer = self._reader = None
        self._known, self._ids = {}, {}
        if not keep_lock and self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def close(self) -> None:
        """Close the file and give up the writer lock."""
        with self._lock:
            self._closed = True
            self._drop_connections()
            self._set_status("closed", 0, 0)

    def release(self) -> None:
        """Close the file and give up the writer lock until the next ``open``."""
        with self._lock:
            self._drop_connections()

    def refresh(self, sources: Sequence[tuple[str, str]]) -> None:
        """Read another process's progress from the file, never taking the writer lock."""
        with self._lock:
            if self._closed:
                return
            if self._reader is not None and self._file_replaced():
                self._drop_connections()
            if self._reader is None:
                try:
                    self._open_reader_only()
                except (IndexUnavailable, sqlite3.Error, OSError):
                    self._set_status("building", 0, len(sources))
                    return
            self._refresh_read_only(sources)

    # -- keeping it current ---------------------------------------------------------------------------

    def plan(self, sources: Sequence[tuple[str, str]]) -> list[tuple[str, str]] | None:
        """Open the shard, drop sessions no longer in ``sources``, and say which to (re)index.

        ``None`` when another process keeps this shard (its progress and titles are read instead).

        Raises:
            IndexUnavailable: the shard cannot be opened or written.
        """
        self._wanted = wanted = dict(sources)
        with self._lock:
            if self._closed:
                return []
            try:
                try:
                    self._open()
                except (sqlite3.Error, OSError) as error:
                    raise _classify(error) from error
            except IndexUnavailable as problem:
                state: IndexState = "read-only" if problem.code == INDEX_READ_ONLY else "failed"
                self._set_status(state, 0, len(sources), problem)
                if problem.code == INDEX_READ_ONLY:
                    return None
                raise
            if self._writer is None:
                self._refresh_read_only(sources)
                return None
            writer = self._writer
        todo = [(sid, revision) for sid, revision in sources if self._known_revision(sid) != revision]
        self._set_status("building" if todo else "ready", len(wanted) - len(todo), len(wanted))
        gone = [session_id for session_id in list(self._known) if session_id not in wanted]
        if gone:
            batch = self._batch()
            try:
                batch.begin()
                for session_id in gone:
                    self._delete_session(writer, session_id)
                batch.commit()
            except (sqlite3.Error, OSError) as error:
                batch.rollback()
                raise self._after_failure(_classify(error), wanted) from error
            self.removed = len(gone)
        return todo

    def _batch(self) -> _Batch:
        # A file-backed shard has its own reader connection, so searches never wait for a batch;
        # in memory the one connection is shared and the lock keeps a search out of a batch.
        assert self._writer is not None
        shared = self._reader is self._writer
        return _Batch(self._writer, self._lock if shared else threading.RLock(), shared)

    def apply(
        self,
        todo: Sequence[tuple[str, str]],
        prepared: Iterable[_Prepared],
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
        wanted = self._wanted
        writer = self._writer
        assert writer is not None
        total = len(wanted)
        done = total - len(todo)
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
                    self._set_status("building", done, total)
                    if progress is not None:
                        progress()
            batch.commit()
        except (sqlite3.Error, OSError) as error:
            batch.rollback()
            raise self._after_failure(_classify(error), wanted) from error
        finally:
            batch.rollback()
        current = self._count_current(wanted)
        self._set_status("ready" if current >= total else "building", current, total)

    def _after_failure(self, failure: IndexUnavailable, wanted: Mapping[str, str]) -> IndexUnavailable:
        with self._lock:
            # What was not committed is gone from the file: forget it here too.
            connection = self._reader or self._writer
            try:
                if connection is not None:
                    self._load_known(connection)
            except sqlite3.Error as error:
                self._known, self._ids = {}, {}
                if failure.code != INDEX_DISK_FULL:
                    failure = _classify(error)
            if failure.code == INDEX_CORRUPT:
                self._damaged = failure
            self._set_status("failed", self._count_current(wanted), len(wanted), failure)
        return failure

    def _refresh_read_only(self, sources: Sequence[tuple[str, str]]) -> None:
        # Another process writes; take its progress from the file.
        wanted = dict(sources)
        try:
            assert self._reader is not None
            self._load_known(self._reader)
        except sqlite3.Error as error:
            self._set_status("failed", 0, len(wanted), _classify(error))
            return
        owned = IndexUnavailable("another sessionref keeps the index; searching its copy", INDEX_READ_ONLY)
        self._set_status("read-only", self._count_current(wanted), len(wanted), owned)

    def _known_revision(self, session_id: str) -> str | None:
        known = self._known.get(session_id)
        return known[1] if known is not None else None

    def _count_current(self, wanted: Mapping[str, str]) -> int:
        return sum(1 for session_id, revision in wanted.items() if self._known_revision(session_id) == revision)

    def _delete_session(self, connection: sqlite3.Connection, session_id: str) -> None:
        known = self._known.pop(session_id, None)
        if known is None:
            return
        key = known[0]
        self._ids.pop(key, None)
        low, high = key << CHUNK_BITS, (key << CHUNK_BITS) | _CHUNK_MASK
        for rowid, body in connection.execute(
            "SELECT rowid, body FROM chunks WHERE rowid BETWEEN ? AND ?", (low, high)
        ).fetchall():
            _unindex(connection, rowid, body)
        connection.execute("DELETE FROM chunks WHERE rowid BETWEEN ? AND ?", (low, high))
        connection.execute("DELETE FROM sessions WHERE key = ?", (key,))

    def _write_session(self, connection: sqlite3.Connection, prepared: _Prepared) -> None:
        session = prepared.session
        assert session is not None
        session_id, chunks = prepared.session_id, prepared.chunks
        title = session.title
        known = self._known.get(session_id)
        if known is None:
            key = self._next_key
            self._next_key += 1
            connection.execute(
                "INSERT INTO sessions(key, id, revision, title, messages) VALUES (?, ?, ?, ?, ?)",
                (key, _sqlite_text(session_id), session.revision, _stored_title(title), len(session.messages)),
            )
            old: list[tuple[int, bytes, bytes]] = []
        else:
            key = known[0]
            connection.execute(
                "UPDATE sessions SET revision = ?, title = ?, messages = ? WHERE key = ?",
                (session.revision, _stored_title(title), len(session.messages), key),
            )
            old = connection.execute(
                "SELECT rowid, digest, body FROM chunks WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
                (key << CHUNK_BITS, (key << CHUNK_BITS) | _CHUNK_MASK),
            ).fetchall()
        base = key << CHUNK_BITS
        for ordinal, chunk in enumerate(chunks[: _CHUNK_MASK + 1]):
            rowid = base | ordinal
            row = (chunk.first_message, chunk.roles, chunk.starts.tobytes(), chunk.digest, chunk.body, rowid)
            if ordinal < len(old):
                if old[ordinal][1] == chunk.digest:
                    continue  # unchanged: an append re-indexes only the last chunk
                _unindex(connection, rowid, old[ordinal][2])
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
        for rowid, _digest, body in old[len(chunks) :]:
            _unindex(connection, rowid, body)
            connection.execute("DELETE FROM chunks WHERE rowid = ?", (rowid,))
        self._known[session_id] = (key, session.revision)
        self._ids[key] = session_id

    # -- reading --------------------------------------------------------------------------------------

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """Rows of a read on the reader connection (none when the index is not open).

        A damaged file found here is remembered, so the next ``sync`` rebuilds it.
        """
        self._lock.acquire()
        locked = True
        try:
            connection = self._reader
            if connection is None:
                return []
            if connection is not self._writer:
                # Its own connection: reading never waits for the writer (WAL), and closing the
                # connection waits for this read.
                with self._reading:
                    self._lock.release()
                    locked = False
                    return connection.execute(sql, tuple(parameters)).fetchall()
            return connection.execute(sql, tuple(parameters)).fetchall()
        except sqlite3.Error as error:
            problem = _classify(error)
            if problem.code == INDEX_CORRUPT:
                self._damaged = problem
                status = self._status
                self._set_status("failed", status.indexed, status.total, problem)
            raise problem from error
        finally:
            if locked:
                self._lock.release()

    def titles(self) -> dict[str, tuple[str, str | None]]:
        """Session id -> (revision, title) of every indexed session.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        rows = self._query("SELECT id, revision, title FROM sessions")
        return {session_id: (revision, _read_title(title)) for session_id, revision, title in rows}

    def candidates(self, needle: str, cap: int) -> dict[str, list[int]] | None:
        """Sessions whose chunks may contain folded ``needle``, newest chunk first; ``None`` when
        more than ``cap`` chunks may (a dense query: ``scan`` the sessions wanted instead).

        A superset (the index keeps no positions): ``verify`` decides.

        Raises:
            IndexUnavailable: the index cannot be read (or ``interrupt`` stopped the search).
        """
        query = trigram_query(needle)
        if query is None:
            return None if needle else {}  # nothing to pre-filter on: every chunk is a candidate
        rows = self._query("SELECT rowid FROM terms WHERE terms MATCH ? LIMIT ?", (query, cap + 1))
        if len(rows) > cap:
            return None
        found: dict[str, list[int]] = {}
        ids = self._ids
        for (rowid,) in sorted(rows, reverse=True):
            session_id = ids.get(rowid >> CHUNK_BITS)
            if session_id is not None:
                found.setdefault(session_id, []).append(rowid)
        return found

    def verify(self, chunk_rowids: Sequence[int], needle: str) -> Snippet | None:
        """The newest message among these chunks that really contains ``needle``, as a snippet.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        if not chunk_rowids:
            return None
        marks = ",".join("?" * len(chunk_rowids))
        rows = self._query(
            f"SELECT first_message, roles, starts, body FROM chunks WHERE rowid IN ({marks}) ORDER BY rowid DESC",
            chunk_rowids,
        )
        return self._first_match(rows, needle)

    def scan(self, session_id: str, needle: str) -> Snippet | None:
        """Like ``verify`` over every chunk of ``session_id`` (no pre-filter: for dense queries,
        where nearly every chunk is a candidate anyway and reading them is cheaper than asking).

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        known = self._known.get(session_id)
        if known is None or not needle:
            return None
        low = known[0] << CHUNK_BITS
        rows = self._query(
            "SELECT first_message, roles, starts, body FROM chunks WHERE rowid BETWEEN ? AND ? ORDER BY rowid DESC",
            (low, low | _CHUNK_MASK),
        )
        return self._first_match(rows, needle)

    def _first_match(self, rows: Iterable[tuple[int, str, bytes, bytes]], needle: str) -> Snippet | None:
        for first_message, roles, starts, body in rows:
            found = self._find(self._decode(body), _starts(starts), needle)
            if found is not None:
                position, text = found
                snippet = make_snippet(
                    text, needle, _ROLES.get(roles[position : position + 1], "user"), first_message + position
                )
                if snippet is not None:
                    return snippet
        return None

    @staticmethod
    def _find(text: str, starts: Sequence[int], needle: str) -> tuple[int, str] | None:
        """The last message of a chunk containing ``needle``: (position in the chunk, its text)."""
        folded = text.lower()
        if len(folded) != len(text):
            # Lower-casing changed lengths (rare letters): compare message by message.
            pieces = text.split("\n") if len(starts) == text.count("\n") + 1 else None
            messages = pieces or [
                text[start : (starts[i + 1] - 1 if i + 1 < len(starts) else len(text))]
                for i, start in enumerate(starts)
            ]
            for position in range(len(messages) - 1, -1, -1):
                if needle in messages[position].lower():
                    return position, messages[position]
            return None
        at = folded.rfind(needle)
        while at >= 0:
            position = bisect.bisect_right(starts, at) - 1
            end = starts[position + 1] - 1 if position + 1 < len(starts) else len(text)
            if at + len(needle) <= end:
                return position, text[starts[position] : end]
            at = folded.rfind(needle, 0, at + len(needle) - 1)  # it crossed into the next message
        return None

    def _decode(self, body: bytes) -> str:
        try:
            return _unpack(body)
        except (zstandard.ZstdError, UnicodeDecodeError, TypeError) as error:
            problem = IndexUnavailable(f"the index file is damaged: {error}", INDEX_CORRUPT)
            self._damaged = problem
            raise problem from error

    def messages(self, session_id: str) -> list[tuple[str, str]]:
        """The indexed projected conversation of a session as ``(role, text)`` pairs (empty if unknown).

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        known = self._known.get(session_id)
        if known is None:
            return []
        low = known[0] << CHUNK_BITS
        rows = self._query(
            "SELECT roles, starts, body FROM chunks WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
            (low, low | _CHUNK_MASK),
        )
        messages: list[tuple[str, str]] = []
        for roles, starts, body in rows:
            text = self._decode(body)
            offsets = _starts(starts)
            for position, start in enumerate(offsets):
                end = offsets[position + 1] - 1 if position + 1 < len(offsets) else len(text)
                messages.append((_ROLES.get(roles[position : position + 1], "user"), text[start:end]))
        return messages

    def interrupt(self) -> None:
        """Abort a search running on another thread (it raises ``IndexUnavailable``)."""
        with self._handle:
            connection = self._reader
            if connection is not None and connection is not self._writer:
                with contextlib.suppress(sqlite3.Error):
                    connection.interrupt()

    def size_bytes(self) -> int:
        """Bytes on disk (file and write-ahead log)."""
        if self.path is None:
            return 0
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                total += os.path.getsize(str(self.path) + suffix)
        return total

    def checkpoint(self) -> None:
        """Merge the FTS segments and fold the write-ahead log into the file (after a big build)."""
        with self._lock:
            if self._writer is None:
                return
            with contextlib.suppress(sqlite3.Error):
                self._writer.execute("INSERT INTO terms(terms) VALUES ('optimize')")
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class BodyIndex:
    """The full-text index of every session's projected conversation, beside the store.

    Args:
        path: the index folder (``index_path_beside(root)`` for a store); ``None`` keeps it in memory.
        shards: how many SQLite files the sessions are spread over (by a hash of the id). A first
            build writes the shards in parallel, one thread each (SQLite works without the
            interpreter lock), so it uses every core the machine has.

    Every failure is contained: a search raises ``IndexUnavailable`` and the next ``sync`` recovers
    (a damaged, deleted, replaced or outdated file is rebuilt from the store). Another process
    building the index (``python -m core.search.builder``, or a second app) makes this instance a
    reader of its files until it exits.
    """

    def __init__(self, path: str | os.PathLike[str] | None, shards: int = SHARDS) -> None:
        self.path = Path(path) if path is not None else None
        self.shards = [
            _Shard(self.path / f"shard-{number}.sqlite3" if self.path is not None else None) for number in range(shards)
        ]

    def shard_of(self, session_id: str) -> _Shard:
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
        statuses = [shard.status for shard in self.shards]
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
        return all(shard.writable for shard in self.shards)

    def pending(self, sources: Sequence[tuple[str, str]]) -> int:
        """How many of ``sources`` are not indexed at their revision (as this instance last saw)."""
        return sum(shard.pending(part) for shard, part in zip(self.shards, self._partition(sources), strict=True))

    # -- opening and closing --------------------------------------------------------------------------

    def open(self) -> None:
        """Open the files now (``sync`` opens them too); damaged or outdated ones are rebuilt empty.

        Raises:
            IndexUnavailable: ``SEARCH_INDEX_READ_ONLY`` while another process creates them,
                ``SEARCH_INDEX_DISK_FULL`` or ``SEARCH_INDEX_FAILED``.
        """
        for shard in self.shards:
            shard.open()

    def close(self) -> None:
        """Close the files and give up the writer locks."""
        for shard in self.shards:
            shard.close()

    def release(self) -> None:
        """Close the files and give up the writer locks for now (another process is to write);
        the next ``open`` or ``sync`` opens them again."""
        for shard in self.shards:
            shard.release()

    def refresh(self, sources: Sequence[tuple[str, str]]) -> None:
        """Take the progress of another process that writes the index (a builder), read-only."""
        for shard, part in zip(self.shards, self._partition(sources), strict=True):
            shard.refresh(part)

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
            shard.removed = 0
            plans.append(shard.plan(part))
            report.removed += shard.removed
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
            feed: Iterator[_Prepared] = pool.imap(_prepare_forked, todo, chunksize=4)
        else:
            feed = _prepared(todo, read, stop)
        queues: list[queue.Queue[_Prepared | None]] = [queue.Queue(maxsize=2 * READ_AHEAD) for _ in self.shards]
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
            titles.update(shard.titles())
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
            part = shard.candidates(needle, cap)
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
        return self.shard_of(session_id).scan(session_id, needle)

    def verify(self, session_id: str, chunk_rowids: Sequence[int], needle: str) -> Snippet | None:
        """The newest message among these chunks of ``session_id`` that really contains ``needle``.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        return self.shard_of(session_id).verify(chunk_rowids, needle)

    def messages(self, session_id: str) -> list[tuple[str, str]]:
        """The indexed projected conversation of a session as ``(role, text)`` pairs (empty if unknown).

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        return self.shard_of(session_id).messages(session_id)

    def interrupt(self) -> None:
        """Abort a search running on another thread (it raises ``IndexUnavailable``)."""
        for shard in self.shards:
            shard.interrupt()

    def size_bytes(self) -> int:
        """Bytes on disk (files and write-ahead logs)."""
        return sum(shard.size_bytes() for shard in self.shards)

    def checkpoint(self) -> None:
        """Merge the FTS segments and fold the write-ahead logs into the files (after a big build)."""
        for shard in self.shards:
            shard.checkpoint()


def _apply(
    shard: _Shard,
    plan: list[tuple[str, str]],
    items: queue.Queue[_Prepared | None],
    report: SyncReport,
    changed: Callable[[], None],
    failures: list[BaseException],
) -> None:
    ended = False

    def drain() -> Iterator[_Prepared]:
        nonlocal ended
        while not ended:
            item = items.get()
            if item is None:
                ended = True
                return
            yield item

    try:
        shard.apply(plan, drain(), report, progress=changed)
    except BaseException as error:  # handed to the coordinating thread, which raises it
        failures.append(error)
        # Keep the coordinator from blocking on a full queue, up to its end mark (which the
        # apply may already have taken: the last commit comes after it, and can fail too).
        for _ in drain():
            pass


def _stored_title(title: str | None) -> str | None:
    return None if title is None else "t" + _sqlite_text(title)


def _read_title(stored: str | None) -> str | None:
    return None if stored is None else stored[1:]


def _starts(blob: bytes) -> array[int]:
    starts = array("I")
    starts.frombytes(blob)
    return starts


def _unindex(connection: sqlite3.Connection, rowid: int, body: bytes) -> None:
    # A contentless FTS table forgets a row only when given exactly the text it indexed.
    connection.execute(
        "INSERT INTO terms(terms, rowid, text) VALUES ('delete', ?, ?)", (rowid, _terms_text(_unpack(body)))
    )


def _prepare(session_id: str, revision: str, read: Reader, compressor: zstandard.ZstdCompressor) -> _Prepared:
    try:
        session = read(session_id)
    except Exception:
        return _Prepared(session_id, revision, IndexedSession(revision, None, ()), [], unreadable=True)
    if session is None:
        return _Prepared(session_id, revision, None, [])
    chunks = _chunks(session.messages)
    for chunk in chunks:
        _seal(chunk, compressor)
    return _Prepared(session_id, revision, session, chunks)


_FORKED: tuple[Reader, zstandard.ZstdCompressor] | None = None
"""The reader a forked helper process inherited (see ``_prepared``)."""


def _prepare_forked(item: tuple[str, str]) -> _Prepared:
    assert _FORKED is not None
    return _prepare(item[0], item[1], *_FORKED)


def _prepared(todo: Sequence[tuple[str, str]], read: Reader, stop: threading.Event | None) -> Iterator[_Prepared]:
    """Read and chunk the sessions of ``todo`` on a helper thread, ``READ_AHEAD`` ahead of the caller."""
    if len(todo) <= 1:
        compressor = zstandard.ZstdCompressor(level=3)
        for session_id, revision in todo:
            if stop is not None and stop.is_set():
                return
            yield _prepare(session_id, revision, read, compressor)
        return
    local = threading.local()

    def prepare(session_id: str, revision: str) -> _Prepared:
        if not hasattr(local, "compressor"):
            local.compressor = zstandard.ZstdCompressor(level=3)
        return _prepare(session_id, revision, read, local.compressor)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-read") as helper:
        pending: collections.deque[Future[_Prepared]] = collections.deque()
        work = iter(todo)
        try:
            for session_id, revision in itertools.islice(work, READ_AHEAD):
                pending.append(helper.submit(prepare, session_id, revision))
            while pending:
                if stop is not None and stop.is_set():
                    return
                prepared = pending.popleft().result()
                following = next(work, None)
                if following is not None:
                    pending.append(helper.submit(prepare, *following))
                yield prepared
        finally:
            for future in pending:
                future.cancel()


@contextlib.contextmanager
def _transaction(connection: sqlite3.Connection) -> Iterator[None]:
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


class _Batch:
    """An ``IMMEDIATE`` transaction opened on the first write and committed on demand."""

    def __init__(self, connection: sqlite3.Connection, lock: threading.RLock, shared: bool) -> None:
        self.connection = connection
        self.lock = lock
        self.shared = shared
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
            try:
                with contextlib.suppress(sqlite3.Error):
                    self.connection.execute("ROLLBACK")
            finally:
                self.active = False
                self.lock.release()
