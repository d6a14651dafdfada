"""Finding a session by what the user sees or remembers: titles, ids, cwds and message bodies.

``SessionReferenceService.list_candidates`` stays exactly the contract's (ids and cwds). This module
is the extended search the app's `@` picker uses:

- ``SessionSearch.search`` matches the title, the id and the cwd case-insensitively (from memory),
  then the message bodies, and orders the hits in the contract's groups (this cwd, no cwd,
  elsewhere); inside a group title/id/cwd matches come before body-only matches, each in listing
  order. Every hit says why it matched.
- ``BodyIndex`` is the body index: an SQLite FTS5 table (trigram tokenizer, so CJK text and any
  substring of three or more characters match) over the *projected* conversation of every session,
  i.e. what a reference would send, so tool output and baked snapshots are never indexed. It lives
  beside the store and is never the source of truth: ``sync`` brings it in line with the store's
  per-file revisions, and a missing, stale or corrupt file is rebuilt.

Layout of the index (one SQLite file, WAL journal):

- ``sessions``: one row per session: id, the revision it was indexed at, its title.
- ``chunks``: a session's projected messages in runs of at most ``CHUNK_BYTES``; each row keeps its
  messages zstd-compressed (``[[role, text], ...]`` as JSON) and a digest, so an append re-indexes
  only the last chunk.
- ``terms``: a contentless FTS5 table with ``detail=none`` (no positions: the index stays well under
  the size of the text). A match is only a candidate: every hit is verified against the stored text,
  which also yields the snippet.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import zstandard
from pydantic import BaseModel, ConfigDict, model_validator

from .abort import AbortSignal
from .errors import INVALID_CONFIG, INVALID_REFERENCE, SessionReferenceError
from .models import Candidate, ProjectedItem, SessionRecord, SurfaceSnapshot, TitleSnapshot
from .projection import project_conversation

INDEX_FILE_NAME = ".sessionref-index.sqlite3"
"""The index file, in the store root. A file, not a folder: store listings look at folders only."""
INDEX_SCHEMA = 1
"""Bumped whenever the tables or the indexed text change: an older file is rebuilt."""
MIN_BODY_QUERY = 3
"""Body search needs this many characters (the trigram tokenizer's unit)."""
CHUNK_BYTES = 64 * 1024
"""A chunk holds whole messages up to this many UTF-8 bytes of text (one message may be larger)."""
SNIPPET_CONTEXT = 24
"""Characters of a body snippet kept before the match."""
SNIPPET_LENGTH = 160
"""Characters a body snippet holds at most."""
VERIFY_BUDGET = 0.05
"""Seconds one search may spend verifying body candidates before it answers with what it has."""
COMMIT_INTERVAL = 0.25
"""Seconds of indexing between two commits (what another reader sees, and what a crash can lose)."""

INDEX_CORRUPT = "SEARCH_INDEX_CORRUPT"
INDEX_DISK_FULL = "SEARCH_INDEX_DISK_FULL"
INDEX_FAILED = "SEARCH_INDEX_FAILED"
INDEX_READ_ONLY = "SEARCH_INDEX_READ_ONLY"

MatchField = Literal["title", "id", "cwd", "body"]
BodyState = Literal["off", "short", "indexing", "ready", "unavailable"]
IndexState = Literal["empty", "building", "ready", "read-only", "failed", "closed"]


def index_path_beside(root: str | os.PathLike[str]) -> Path:
    """Where the body index of the store at ``root`` lives."""
    return Path(root) / INDEX_FILE_NAME


def revision_key(revision: object) -> str:
    """A store revision as the text the index keeps (``dev:ino:size:mtime`` for a file)."""
    if isinstance(revision, tuple):
        return ":".join(str(part) for part in revision)
    return str(revision)


# -- configuration ---------------------------------------------------------------------------------


class SearchConfig(BaseModel):
    """Settings of ``SessionSearch``: ``bodySearch`` (``body_search``) turns message search on or off.

    Raises:
        SessionReferenceError: ``SESSION_REFERENCE_INVALID_CONFIG`` naming the offending key.
    """

    model_config = ConfigDict(frozen=True)

    body_search: bool = True

    @model_validator(mode="before")
    @classmethod
    def _check(cls, raw: Any) -> Any:
        if not isinstance(raw, Mapping):
            raise SessionReferenceError("search: config must be a mapping", INVALID_CONFIG)
        values: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in ("body_search", "bodySearch"):
                raise SessionReferenceError(f"search: unknown config key {key!r}", INVALID_CONFIG)
            if value is None:
                continue
            if not isinstance(value, bool):
                raise SessionReferenceError("search: bodySearch must be true or false", INVALID_CONFIG)
            values["body_search"] = value
        return values


# -- results ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Snippet:
    """One line of the message a body match was found in.

    ``text`` is the message with runs of whitespace as single spaces, cut around the match
    (``…`` marks a cut); ``text[start:end]`` is the match. ``message`` is the message's position in
    the session's projected conversation, ``role`` ``"user"``, ``"assistant"`` or ``"summary"``.
    """

    text: str
    start: int
    end: int
    role: str
    message: int


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One session the picker lists and why.

    ``field`` is what matched (``None`` for an empty query); for ``"title"``, ``"id"`` and ``"cwd"``,
    ``span`` is the match inside that field's text; for ``"body"``, ``snippet`` shows it.
    """

    candidate: Candidate
    field: MatchField | None = None
    span: tuple[int, int] | None = None
    snippet: Snippet | None = None


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """Where the body index stands: ``indexed`` of ``total`` listed sessions are current."""

    state: IndexState
    indexed: int = 0
    total: int = 0
    code: str | None = None
    message: str | None = None

    @property
    def complete(self) -> bool:
        """Whether every listed session is indexed at its current revision."""
        return self.state in ("ready", "read-only") and self.indexed >= self.total


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What ``SessionSearch.search`` found.

    ``body`` says what the message search did: ``"off"`` (switched off or no index), ``"short"``
    (the query has fewer than ``MIN_BODY_QUERY`` characters), ``"indexing"`` (searched what is
    indexed so far), ``"ready"`` or ``"unavailable"`` (the index failed; ``status`` says why).
    """

    hits: list[SearchHit]
    body: BodyState
    status: IndexStatus | None = None


@dataclass(frozen=True, slots=True)
class IndexedSession:
    """What the index keeps of one session, read at ``revision``."""

    revision: str
    title: str | None
    messages: Sequence[ProjectedItem]


def indexed_session(revision: object, surface: SurfaceSnapshot, title: TitleSnapshot | None) -> IndexedSession:
    """The index's view of a session: its title and its projected conversation (CONTRACT §5)."""
    return IndexedSession(
        revision=revision_key(revision),
        title=title.title if title is not None else None,
        messages=project_conversation(surface),
    )


@dataclass(slots=True)
class SyncReport:
    """What one ``BodyIndex.sync`` did."""

    indexed: int = 0
    removed: int = 0
    unreadable: int = 0
    titles: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Session id -> (revision, title) of every session read during this sync."""
    finished: bool = False


class Reader(Protocol):
    """Reads one session for the index; ``None`` when it is gone. Any exception marks it unreadable."""

    def __call__(self, session_id: str) -> IndexedSession | None: ...


# -- case folding and snippets ----------------------------------------------------------------------


def fold(text: str) -> str:
    """The case-folded form searches compare (``str.lower``, as ``list_candidates`` does)."""
    return text.lower()


def find_folded(text: str, needle: str, *, last: bool = False) -> tuple[int, int] | None:
    """Where folded ``needle`` occurs in ``text`` (case-insensitively), as a span of ``text``.

    ``last`` finds the last occurrence. Characters whose lower case is longer (``İ``) are mapped
    back, so the span always covers the original characters.
    """
    if not needle:
        return None
    folded = text.lower()
    at = folded.rfind(needle) if last else folded.find(needle)
    if at < 0:
        return None
    if len(folded) == len(text):
        return at, at + len(needle)
    # Map folded offsets back to original characters.
    starts: list[int] = []
    for index, char in enumerate(text):
        starts.extend([index] * len(char.lower()))
    starts.append(len(text))
    end = at + len(needle)
    return starts[at], (starts[end] if starts[end] > starts[end - 1] else starts[end - 1] + 1)


_SPACES = re.compile(r"\s+")


def make_snippet(text: str, needle: str, role: str, message: int) -> Snippet | None:
    """A one-line snippet of ``text`` around the last match of folded ``needle``, or ``None``."""
    line = _SPACES.sub(" ", text).strip()
    span = find_folded(line, needle, last=True)
    if span is None:
        return None
    start, end = span
    # Cut the head only when the match would sit far into the line: a narrow row shows ~50 cells.
    cut = max(0, start - SNIPPET_CONTEXT) if start > 2 * SNIPPET_CONTEXT else 0
    if cut > 0:
        space = line.find(" ", cut, start)
        if space >= 0 and start - space > 8:
            cut = space + 1
    prefix = "…" if cut > 0 else ""
    stop = max(end, cut + SNIPPET_LENGTH - len(prefix))
    suffix = "…" if stop < len(line) else ""
    shown = prefix + line[cut:stop] + suffix
    offset = len(prefix) - cut
    return Snippet(text=shown, start=start + offset, end=end + offset, role=role, message=message)


def _role_of(item: ProjectedItem) -> str:
    return "summary" if item.checkpoint else item.role


def _sqlite_text(text: str) -> str:
    # SQLite takes valid UTF-8 only; a lone surrogate (a hostile log) becomes U+FFFD in the
    # pre-filter text. Verification reads the stored original, so matches stay exact.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8").replace("?", "\ufffd")
    return text


def _trigram_query(needle: str) -> str | None:
    """The FTS5 query for candidates containing ``needle``: every trigram of it, ANDed."""
    needle = _sqlite_text(needle)
    if len(needle) < MIN_BODY_QUERY:
        return None
    grams = dict.fromkeys(needle[i : i + 3] for i in range(len(needle) - 2))
    return " AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams)


# -- the index ---------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(
    key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, revision TEXT NOT NULL, title TEXT, messages INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks(
    rowid INTEGER PRIMARY KEY, session INTEGER NOT NULL, ordinal INTEGER NOT NULL,
    first_message INTEGER NOT NULL, digest BLOB NOT NULL, body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_session ON chunks(session, ordinal);
CREATE VIRTUAL TABLE IF NOT EXISTS terms USING fts5(text, tokenize="trigram case_sensitive 1", detail=none, content='');
"""


def _fingerprint() -> dict[str, str]:
    # What the indexed text depends on: a different Python (Unicode tables) folds differently, and
    # a contentless FTS table can only delete exactly the text it indexed.
    return {"schema": str(INDEX_SCHEMA), "unicode": unicodedata.unidata_version, "chunk": str(CHUNK_BYTES)}


@dataclass(slots=True)
class _Chunk:
    first_message: int
    messages: list[tuple[str, str]]
    body: bytes
    digest: bytes


def _chunks(items: Sequence[ProjectedItem], compress: Callable[[bytes], bytes]) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    current: list[tuple[str, str]] = []
    first = size = 0
    for position, item in enumerate(items):
        length = len(item.text.encode("utf-8", "surrogatepass"))
        if current and size + length > CHUNK_BYTES:
            chunks.append(_seal(first, current, compress))
            current, first, size = [], position, 0
        current.append((_role_of(item), item.text))
        size += length
    if current:
        chunks.append(_seal(first, current, compress))
    return chunks


def _seal(first: int, messages: list[tuple[str, str]], compress: Callable[[bytes], bytes]) -> _Chunk:
    raw = json.dumps(messages, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return _Chunk(first, messages, compress(raw), hashlib.blake2b(raw, digest_size=16).digest())


def _terms_text(messages: Iterable[tuple[str, str]]) -> str:
    return _sqlite_text("\n".join(fold(text) for _, text in messages))


def _messages_of(body: bytes) -> list[tuple[str, str]]:
    raw = zstandard.ZstdDecompressor().decompress(body)
    return [(role, text) for role, text in json.loads(raw.decode("utf-8", "surrogatepass"))]


class IndexUnavailable(Exception):
    """The index cannot be used right now; ``code`` is one of the ``SEARCH_INDEX_*`` codes."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _classify(error: BaseException) -> IndexUnavailable:
    if isinstance(error, sqlite3.OperationalError) and "full" in str(error):
        return IndexUnavailable(f"the disk is full: {error}", INDEX_DISK_FULL)
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return IndexUnavailable(f"the disk is full: {error}", INDEX_DISK_FULL)
    if isinstance(error, sqlite3.DatabaseError) and not isinstance(error, sqlite3.OperationalError):
        return IndexUnavailable(f"the index file is damaged: {error}", INDEX_CORRUPT)
    if isinstance(error, sqlite3.OperationalError) and ("malformed" in str(error) or "not a database" in str(error)):
        return IndexUnavailable(f"the index file is damaged: {error}", INDEX_CORRUPT)
    return IndexUnavailable(f"the index failed: {error}", INDEX_FAILED)


class BodyIndex:
    """The full-text index of every session's projected conversation, beside the store.

    Args:
        path: the index file (``index_path_beside(root)`` for a store); ``None`` keeps it in memory.

    One process writes at a time (an advisory lock on ``<path>.lock``); another instance on the same
    store searches the same file read-only and takes over writing when the first one exits. Every
    failure is contained: searching answers ``IndexUnavailable`` and the next ``sync`` recovers
    (a damaged, missing or outdated file is rebuilt from the store).
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.RLock()
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self._known: dict[str, tuple[int, str]] = {}
        self._compressor = zstandard.ZstdCompressor(level=3)
        self._status = IndexStatus("empty")
        self._closed = False
        self._damaged: IndexUnavailable | None = None

    # -- status -------------------------------------------------------------------------------------

    @property
    def status(self) -> IndexStatus:
        """The latest status (safe to read from any thread)."""
        return self._status

    def _set_status(self, state: IndexState, indexed: int, total: int, problem: IndexUnavailable | None = None) -> None:
        self._status = IndexStatus(
            state,
            indexed,
            total,
            problem.code if problem is not None else None,
            problem.message if problem is not None else None,
        )

    # -- opening ------------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        target = ":memory:" if self.path is None else str(self.path)
        connection = sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=5.0)
        if self.path is not None:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    def open(self) -> None:
        """Open the file now (``sync`` opens it too): a damaged or outdated one is rebuilt empty.

        Raises:
            IndexUnavailable: ``SEARCH_INDEX_READ_ONLY`` when another process is creating it,
                ``SEARCH_INDEX_DISK_FULL`` or ``SEARCH_INDEX_FAILED``.
        """
        with self._lock:
            if self._closed:
                raise IndexUnavailable("the index is closed", INDEX_FAILED)
            try:
                self._open()
            except (sqlite3.Error, OSError) as error:
                raise _classify(error) from error

    def _open(self) -> None:
        """Open (or re-open) the file, taking the writer lock when it is free.

        A file found damaged (here or by a search), replaced or deleted since it was opened is
        dropped; the writer then rebuilds it from nothing.
        """
        if self._writer is not None or self._reader is not None:
            damaged = self._damaged is not None or self._file_replaced() or self._probe_fails()
            if not damaged:
                if self._writer is None:
                    self._try_become_writer()
                return
            self._drop_connections(keep_lock=True)
            if self._lock_fd is not None and self._damaged is not None:
                self._remove_files()
        self._damaged = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
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

    def _try_lock(self) -> None:
        assert self.path is not None
        if self._lock_fd is not None:
            return
        fd = os.open(str(self.path) + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
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
            connection = self._connect()
            if not self._compatible(connection):
                connection.close()
                self._remove_files()
                connection = self._connect()
            connection.executescript(_SCHEMA)
            with _transaction(connection):
                for key, value in _fingerprint().items():
                    connection.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
            self._known = {
                session_id: (key, revision)
                for key, session_id, revision in connection.execute("SELECT key, id, revision FROM sessions")
            }
        except sqlite3.DatabaseError as error:
            problem = _classify(error)
            if problem.code != INDEX_CORRUPT:
                raise problem from error
            # A damaged file is rebuilt from the store: it was never the source of truth.
            with contextlib.suppress(NameError, sqlite3.Error):
                connection.close()
            self._remove_files()
            connection = self._connect()
            connection.executescript(_SCHEMA)
            for key, value in _fingerprint().items():
                connection.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
            self._known = {}
        self._writer = connection
        self._reader = connection if self.path is None else self._connect()
        self._inode = self._file_inode()

    def _open_reader_only(self) -> None:
        assert self.path is not None
        if not self.path.exists():
            raise IndexUnavailable("another sessionref is building the index", INDEX_READ_ONLY)
        connection = self._connect()
        try:
            if not self._compatible(connection):
                raise IndexUnavailable("the index is outdated and another sessionref owns it", INDEX_READ_ONLY)
            self._known = {
                session_id: (key, revision)
                for key, session_id, revision in connection.execute("SELECT key, id, revision FROM sessions")
            }
        except sqlite3.DatabaseError as error:
            connection.close()
            raise _classify(error) from error
        except IndexUnavailable:
            connection.close()
            raise
        self._reader = connection
        self._inode = self._file_inode()

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
        for connection in {id(c): c for c in (self._writer, self._reader) if c is not None}.values():
            with contextlib.suppress(sqlite3.Error):
                connection.close()
        self._writer = self._reader = None
        self._known = {}
        if not keep_lock and self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def close(self) -> None:
        """Close the file and give up the writer lock."""
        with self._lock:
            self._closed = True
            self._drop_connections()
            self._set_status("closed", 0, 0)

    # -- keeping it current ---------------------------------------------------------------------------

    def sync(
        self,
        sources: Sequence[tuple[str, str]],
        read: Reader,
        *,
        pause: Callable[[], None] | None = None,
        stop: threading.Event | None = None,
        progress: Callable[[IndexStatus], None] | None = None,
    ) -> SyncReport:
        """Bring the index in line with ``sources`` (session id, revision), in their order.

        Sessions that are gone are removed; sessions new or at another revision are read with
        ``read`` and (re)indexed, committing every ``COMMIT_INTERVAL`` seconds so progress shows
        and a crash loses little. ``pause`` runs between sessions (a host yields to its UI there);
        ``stop`` ends the sync early. Safe to run in a thread while others search.

        Raises:
            IndexUnavailable: the disk is full or the index cannot be written (the store is untouched;
                the next sync tries again).
        """
        report = SyncReport()
        with self._lock:
            if self._closed:
                return report
            try:
                try:
                    self._open()
                except (sqlite3.Error, OSError) as error:
                    raise _classify(error) from error
            except IndexUnavailable as problem:
                self._set_status("read-only" if problem.code == INDEX_READ_ONLY else "failed", 0, len(sources), problem)
                if problem.code == INDEX_READ_ONLY:
                    return report
                raise
            if self._writer is None:
                return self._refresh_read_only(sources, report)
            writer = self._writer
        wanted = dict(sources)
        todo = [
            (session_id, revision) for session_id, revision in sources if self._known_revision(session_id) != revision
        ]
        total = len(wanted)
        done = total - len(todo)
        self._set_status("building" if todo else "ready", done, total)
        # A file-backed index has its own reader connection, so searches never wait for a batch;
        # in memory the one connection is shared and the lock keeps a search out of a batch.
        shared = self._reader is writer
        batch = _Batch(writer, self._lock if shared else threading.RLock())
        try:
            gone = [session_id for session_id in list(self._known) if session_id not in wanted]
            if gone:
                batch.begin()
                for session_id in gone:
                    self._delete_session(writer, session_id)
                batch.commit()
                report.removed = len(gone)
            started = time.perf_counter()
            for session_id, revision in todo:
                if stop is not None and stop.is_set():
                    break
                if pause is not None:
                    if shared:
                        batch.commit()
                    pause()
                try:
                    session = read(session_id)
                except Exception:
                    session = IndexedSession(revision=revision, title=None, messages=())
                    report.unreadable += 1
                if session is not None:
                    batch.begin()
                    self._write_session(writer, session_id, session)
                    report.titles[session_id] = (session.revision, session.title)
                    report.indexed += 1
                done += 1
                if time.perf_counter() - started > COMMIT_INTERVAL:
                    batch.commit()
                    started = time.perf_counter()
                    self._set_status("building", done, total)
                    if progress is not None:
                        progress(self._status)
            batch.commit()
        except (sqlite3.Error, OSError) as error:
            batch.rollback()
            failure = self._after_failure(_classify(error), wanted)
            raise failure from error
        finally:
            batch.rollback()
        finished = stop is None or not stop.is_set()
        report.finished = finished
        self._set_status("ready" if finished else "building", self._count_current(wanted), total)
        if progress is not None:
            progress(self._status)
        return report

    def _after_failure(self, failure: IndexUnavailable, wanted: Mapping[str, str]) -> IndexUnavailable:
        with self._lock:
            # What was not committed is gone from the file: forget it here too.
            try:
                self._reload_known()
            except IndexUnavailable as reloading:
                if failure.code != INDEX_DISK_FULL:
                    failure = reloading
            if failure.code == INDEX_CORRUPT:
                self._damaged = failure
            self._set_status("failed", self._count_current(wanted), len(wanted), failure)
        return failure

    def _refresh_read_only(self, sources: Sequence[tuple[str, str]], report: SyncReport) -> SyncReport:
        # Another instance writes; take its progress, and its titles, from the file.
        try:
            self._reload_known()
            titles = self.titles()
        except IndexUnavailable as failure:
            self._set_status("failed", 0, len(sources), failure)
            return report
        wanted = dict(sources)
        report.titles = {session_id: titles[session_id] for session_id in wanted if session_id in titles}
        owned = IndexUnavailable("another sessionref keeps the index; searching its copy", INDEX_READ_ONLY)
        self._set_status("read-only", self._count_current(wanted), len(wanted), owned)
        return report

    def _known_revision(self, session_id: str) -> str | None:
        known = self._known.get(session_id)
        return known[1] if known is not None else None

    def _count_current(self, wanted: Mapping[str, str]) -> int:
        return sum(1 for session_id, revision in wanted.items() if self._known_revision(session_id) == revision)

    def _reload_known(self) -> None:
        connection = self._reader or self._writer
        if connection is None:
            self._known = {}
            return
        try:
            self._known = {
                session_id: (key, revision)
                for key, session_id, revision in connection.execute("SELECT key, id, revision FROM sessions")
            }
        except sqlite3.Error as error:
            self._known = {}
            raise _classify(error) from error

    def _delete_session(self, connection: sqlite3.Connection, session_id: str) -> None:
        known = self._known.pop(session_id, None)
        if known is None:
            return
        key = known[0]
        for rowid, body in connection.execute("SELECT rowid, body FROM chunks WHERE session = ?", (key,)).fetchall():
            _unindex(connection, rowid, body)
        connection.execute("DELETE FROM chunks WHERE session = ?", (key,))
        connection.execute("DELETE FROM sessions WHERE key = ?", (key,))

    def _write_session(self, connection: sqlite3.Connection, session_id: str, session: IndexedSession) -> None:
        chunks = _chunks(session.messages, self._compressor.compress)
        title = json.dumps(session.title) if session.title is not None else None
        known = self._known.get(session_id)
        if known is None:
            cursor = connection.execute(
                "INSERT INTO sessions(id, revision, title, messages) VALUES (?, ?, ?, ?)",
                (_sqlite_text(session_id), session.revision, title, len(session.messages)),
            )
            key = cursor.lastrowid
            assert key is not None
            old: list[tuple[int, bytes, bytes]] = []
        else:
            key = known[0]
            connection.execute(
                "UPDATE sessions SET revision = ?, title = ?, messages = ? WHERE key = ?",
                (session.revision, title, len(session.messages), key),
            )
            old = connection.execute(
                "SELECT rowid, digest, body FROM chunks WHERE session = ? ORDER BY ordinal", (key,)
            ).fetchall()
        for ordinal, chunk in enumerate(chunks):
            if ordinal < len(old):
                rowid, digest, body = old[ordinal]
                if digest == chunk.digest:
                    continue  # unchanged (an append re-indexes only the last chunk)
                _unindex(connection, rowid, body)
                connection.execute(
                    "UPDATE chunks SET first_message = ?, digest = ?, body = ? WHERE rowid = ?",
                    (chunk.first_message, chunk.digest, chunk.body, rowid),
                )
            else:
                cursor = connection.execute(
                    "INSERT INTO chunks(session, ordinal, first_message, digest, body) VALUES (?, ?, ?, ?, ?)",
                    (key, ordinal, chunk.first_message, chunk.digest, chunk.body),
                )
                assert cursor.lastrowid is not None
                rowid = cursor.lastrowid
            connection.execute("INSERT INTO terms(rowid, text) VALUES (?, ?)", (rowid, _terms_text(chunk.messages)))
        for rowid, _digest, body in old[len(chunks) :]:
            _unindex(connection, rowid, body)
            connection.execute("DELETE FROM chunks WHERE rowid = ?", (rowid,))
        self._known[session_id] = (key, session.revision)

    # -- reading ----------------------------------------------------------------------------------------

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any] | None:
        """Rows of a read on the reader connection (``None`` when the index is not open).

        A damaged file found here is remembered, so the next ``sync`` rebuilds it.
        """
        self._lock.acquire()
        locked = True
        try:
            connection = self._reader
            if connection is None:
                return None
            if connection is not self._writer:
                # Its own connection: reading never waits for the writer (WAL).
                self._lock.release()
                locked = False
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
        rows = self._query("SELECT id, revision, title FROM sessions") or []
        return {
            session_id: (revision, json.loads(title) if title is not None else None)
            for session_id, revision, title in rows
        }

    def candidates(self, needle: str) -> dict[str, list[int]]:
        """Sessions whose indexed text may contain folded ``needle``, with the chunks to check.

        A superset (the index keeps no positions): ``verify`` decides.

        Raises:
            IndexUnavailable: the index cannot be read (or ``interrupt`` stopped the search).
        """
        query = _trigram_query(needle)
        if query is None:
            return {}
        rows = self._query(
            "SELECT s.id, c.rowid FROM terms JOIN chunks AS c ON c.rowid = terms.rowid "
            "JOIN sessions AS s ON s.key = c.session WHERE terms MATCH ?",
            (query,),
        )
        found: dict[str, list[int]] = {}
        for session_id, rowid in rows or ():
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
            f"SELECT first_message, body FROM chunks WHERE rowid IN ({marks}) ORDER BY ordinal DESC", chunk_rowids
        )
        for first_message, body in rows or ():
            for position, (role, text) in reversed(list(enumerate(self._decode(body)))):
                if needle in text.lower():
                    snippet = make_snippet(text, needle, role, first_message + position)
                    if snippet is not None:
                        return snippet
        return None

    def _decode(self, body: bytes) -> list[tuple[str, str]]:
        try:
            return _messages_of(body)
        except (zstandard.ZstdError, ValueError, UnicodeDecodeError, TypeError) as error:
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
        rows = self._query("SELECT body FROM chunks WHERE session = ? ORDER BY ordinal", (known[0],)) or []
        return [message for (body,) in rows for message in self._decode(body)]

    def interrupt(self) -> None:
        """Abort a search running on another thread (it raises ``IndexUnavailable``)."""
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
        """Fold the write-ahead log into the file and compact the FTS segments (after a full build)."""
        with self._lock:
            if self._writer is None:
                return
            with contextlib.suppress(sqlite3.Error):
                self._writer.execute("INSERT INTO terms(terms) VALUES ('optimize')")
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _unindex(connection: sqlite3.Connection, rowid: int, body: bytes) -> None:
    # A contentless FTS table forgets a row only when given exactly the text it indexed.
    connection.execute(
        "INSERT INTO terms(terms, rowid, text) VALUES ('delete', ?, ?)", (rowid, _terms_text(_messages_of(body)))
    )


@contextlib.contextmanager
def _transaction(connection: sqlite3.Connection) -> Any:
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


class _Batch:
    """An ``IMMEDIATE`` transaction opened on the first write and committed on demand."""

    def __init__(self, connection: sqlite3.Connection, lock: threading.RLock) -> None:
        self.connection = connection
        self.lock = lock
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


# -- the search --------------------------------------------------------------------------------------


class _MetaIndex:
    """Every record's folded ``title NUL id NUL cwd`` in one text, searched with ``str.find``."""

    def __init__(self, records: Sequence[SessionRecord], titles: Mapping[str, str | None]) -> None:
        self.titles = titles
        lines: list[str] = []
        self.starts: list[int] = []
        position = 0
        self.text: str | None = None
        for record in records:
            header = record.header
            title = titles.get(header.id)
            line = "\x00".join((fold(title or ""), fold(header.id), fold(header.cwd or "")))
            if "\n" in line or line.count("\x00") != 2:
                return  # separators inside a field: search record by record
            self.starts.append(position)
            lines.append(line)
            position += len(line) + 1
        self.text = "\n".join(lines)

    def matching(self, records: Sequence[SessionRecord], needle: str) -> Iterable[int]:
        """Positions of the records whose title, id or cwd contains ``needle``, in listing order."""
        text = self.text
        if text is None or "\n" in needle or "\x00" in needle:
            for position, record in enumerate(records):
                if _field_match(record, self.titles.get(record.header.id), needle) is not None:
                    yield position
            return
        starts = self.starts
        import bisect

        at = text.find(needle)
        while at >= 0:
            line = bisect.bisect_right(starts, at) - 1
            yield line
            following = line + 1
            if following >= len(starts):
                return
            at = text.find(needle, starts[following])


def _field_match(record: SessionRecord, title: str | None, needle: str) -> tuple[MatchField, tuple[int, int]] | None:
    header = record.header
    fields: list[tuple[MatchField, str | None]] = [("title", title), ("id", header.id), ("cwd", header.cwd)]
    for name, value in fields:
        if value:
            span = find_folded(value, needle)
            if span is not None:
                return name, span
    return None


def _group(cwd: str | None, target_cwd: str | None) -> int:
    if cwd is None:
        return 1
    return 0 if cwd == target_cwd else 2


class SessionSearch:
    """The `@` picker's search: titles, ids and cwds from memory, then message bodies.

    Args:
        index: the body index (``None``: titles, ids and cwds only).
        config: a ``SearchConfig`` or a mapping of its keys.

    Raises:
        SessionReferenceError: ``SESSION_REFERENCE_INVALID_CONFIG`` for a bad config.
    """

    def __init__(self, index: BodyIndex | None = None, config: SearchConfig | Mapping[str, Any] | None = None) -> None:
        self.index = index
        if config is None:
            config = SearchConfig()
        elif not isinstance(config, SearchConfig):
            config = SearchConfig.model_validate(config)
        self.config = config
        self._meta: tuple[Sequence[SessionRecord], Mapping[str, str | None], _MetaIndex] | None = None
        self._positions: tuple[Sequence[SessionRecord], dict[str, int]] | None = None

    def search(
        self,
        target: Any,
        query: str,
        *,
        records: Sequence[SessionRecord],
        titles: Mapping[str, str | None],
        limit: int,
        signal: AbortSignal | None = None,
    ) -> SearchResult:
        """Sessions other than ``target`` matching ``query``, at most ``limit``, in picker order.

        ``records`` is the listing (newest first, as ``list_sessions`` returns it) and ``titles``
        the known title of each session (a session missing from it is labelled with its id and
        matched by id and cwd only). Hosts that pass the same two objects again get the in-memory
        search index built for them. Only sessions in ``records`` are ever returned, whatever the
        body index still holds.

        Raises:
            SessionReferenceError: ``INVALID_REFERENCE`` for a bad limit, ``CANCELLED`` when
                ``signal`` aborts (checked between the steps of a body search).
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise SessionReferenceError("candidate limit must be a positive safe integer", INVALID_REFERENCE)
        needle = fold(query or "")
        target_id, target_cwd = target.id, target.cwd
        groups: tuple[list[SearchHit], list[SearchHit], list[SearchHit]] = ([], [], [])
        matched: set[str] = {target_id}  # never offered as a body match either
        positions: Iterable[int] = (
            range(len(records)) if not needle else self._meta_index(records, titles).matching(records, needle)
        )
        for position in positions:
            record = records[position]
            header = record.header
            if header.id == target_id:
                continue
            title = titles.get(header.id)
            group = _group(header.cwd, target_cwd)
            if needle:
                found = _field_match(record, title, needle)
                if found is None:
                    continue  # a match across the separators of the search text
                hit = SearchHit(_candidate(header, title), found[0], found[1])
            else:
                hit = SearchHit(_candidate(header, title))
            groups[group].append(hit)
            matched.add(header.id)
            if len(groups[0]) >= limit:
                break
        body, status = self._body_state(needle)
        bodies: dict[str, list[int]] = {}
        if body in ("indexing", "ready") and len(groups[0]) < limit:
            assert self.index is not None
            try:
                bodies = self.index.candidates(needle)
            except IndexUnavailable as problem:
                if signal is not None:
                    signal.throw_if_aborted()  # interrupted by a newer search, not broken
                body, status = "unavailable", IndexStatus("failed", code=problem.code, message=problem.message)
        hits: list[SearchHit] = []
        if bodies:
            try:
                hits = self._with_bodies(groups, bodies, matched, records, target_cwd, titles, needle, limit, signal)
            except IndexUnavailable as problem:
                body, status = "unavailable", IndexStatus("failed", code=problem.code, message=problem.message)
                hits = [hit for meta_hits in groups for hit in meta_hits]
        else:
            for meta_hits in groups:
                hits.extend(meta_hits)
        return SearchResult(hits=hits[:limit], body=body, status=status)

    def _body_state(self, needle: str) -> tuple[BodyState, IndexStatus | None]:
        if not self.config.body_search or self.index is None:
            return "off", None
        status = self.index.status
        if status.state == "failed" and status.code != INDEX_DISK_FULL:
            return "unavailable", status
        if len(needle) < MIN_BODY_QUERY or not needle:
            return "short", status
        return ("ready" if status.complete else "indexing"), status

    def _with_bodies(
        self,
        groups: tuple[list[SearchHit], list[SearchHit], list[SearchHit]],
        bodies: dict[str, list[int]],
        matched: set[str],
        records: Sequence[SessionRecord],
        target_cwd: str | None,
        titles: Mapping[str, str | None],
        needle: str,
        limit: int,
        signal: AbortSignal | None,
    ) -> list[SearchHit]:
        assert self.index is not None
        position_of = self._position_map(records)
        body_groups: tuple[list[int], list[int], list[int]] = ([], [], [])
        for session_id in bodies:
            position = position_of.get(session_id)
            if position is None or session_id in matched:
                continue  # indexed but no longer listed (never offered), the target, or matched already
            body_groups[_group(records[position].header.cwd, target_cwd)].append(position)
        hits: list[SearchHit] = []
        deadline = time.perf_counter() + VERIFY_BUDGET
        for group, meta_hits in enumerate(groups):
            hits.extend(meta_hits)
            for position in sorted(body_groups[group]):
                if len(hits) >= limit or time.perf_counter() > deadline:
                    break
                if signal is not None:
                    signal.throw_if_aborted()
                header = records[position].header
                snippet = self.index.verify(bodies[header.id], needle)
                if snippet is not None:
                    hits.append(SearchHit(_candidate(header, titles.get(header.id)), "body", None, snippet))
            if len(hits) >= limit:
                break
        return hits

    def _meta_index(self, records: Sequence[SessionRecord], titles: Mapping[str, str | None]) -> _MetaIndex:
        cached = self._meta
        if cached is None or cached[0] is not records or cached[1] is not titles:
            cached = self._meta = (records, titles, _MetaIndex(records, titles))
        return cached[2]

    def _position_map(self, records: Sequence[SessionRecord]) -> dict[str, int]:
        cached = self._positions
        if cached is None or cached[0] is not records:
            cached = self._positions = (records, {record.header.id: i for i, record in enumerate(records)})
        return cached[1]


def _candidate(header: Any, title: str | None) -> Candidate:
    return Candidate.model_construct(
        session_id=header.id,
        label=title if title is not None else header.id,
        cwd=header.cwd,
        created_at=header.created_at,
    )
