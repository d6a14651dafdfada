"""``JsonlSessionStore``: durable sessions in the DeepSeek Harness JSONL layout (STORE.md)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import zstandard

from core.collector import collector_paused
from core.errors import SessionQueryError
from core.files import Revision, UnsafeFile, check_folders
from core.folder import jsonl_writer as writer
from core.folder.jsonl_codec import LoadedLog, load_log
from core.folder.jsonl_header import header_line
from core.folder.jsonl_layout import (
    FILE_NAMES,
    Compression,
)
from core.folder.jsonl_listing import SessionFiles
from core.folder.jsonl_writer import SESSION_QUERY_LOCKED
from core.folder.log_cache import LogCache, unsafe
from core.folder.store_layout import StoreLayout
from core.folder.store_listing import StoreListing
from core.folder.watch import ChangeCallback, StoreWatcher
from core.serialization import js_json_stringify
from core.sessions.chunk_rows import pack_chunk_runs
from core.sessions.models import (
    SessionEvent,
    SessionHeader,
    SessionRecord,
    StoredSession,
    StoreProblem,
    SurfaceSnapshot,
    TitleSnapshot,
)
from core.sessions.query import ReadsAsQuery
from core.sessions.session import (
    Clock,
    Session,
    already_exists,
    check_cwd,
    mint_session_id,
    not_found,
    system_clock,
)
from core.sessions.surface import events_at

SESSION_QUERY_READ_FAILED = "SESSION_QUERY_READ_FAILED"
"""A session file exists but cannot be opened (permissions, or a folder where the file belongs)."""


@dataclass
class _Owned:
    """A session this store instance writes: its open, locked file (``None`` until materialised)."""

    session: Session
    path: Path
    fd: int | None = None


class JsonlSessionStore(ReadsAsQuery):
    """Durable, dsh-compatible sessions on disk (STORE.md), with the ``MemorySessionStore`` surface.

    Args:
        root: the store folder (created when missing).
        compression: ``"zstd"`` (default, multi-frame with checksums) or ``"none"`` (plain JSONL).
        clock: epoch-milliseconds clock for new events and headers.
        pack_chunks: write runs of three or more streamed deltas as one packed chunk row, as dsh does
            (default); ``False`` writes one line per event. Reading accepts both.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        compression: Compression = "zstd",
        clock: Clock = system_clock,
        pack_chunks: bool = True,
        keep_listing: bool = True,
    ) -> None:
        if compression not in FILE_NAMES:
            raise ValueError(f"compression must be 'zstd' or 'none', not {compression!r}")
        self.root = Path(root)
        self.compression: Compression = compression
        self.layout = StoreLayout(self.root, compression)
        """Where each session's file is, and its header read back."""
        self._clock = clock
        self.pack_chunks = pack_chunks
        self._compressor = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)
        self._owned: dict[str, _Owned] = {}
        self._logs = LogCache(self.root, compression)
        layout = self.layout
        files = SessionFiles(self.root, layout.file_name, layout.other_name, layout.wrong_encoding_text)
        self._listing = StoreListing(files, self.root, compression, layout.read_record)
        self._listing.saving = keep_listing  # (off for a reader that must change nothing: doctor)
        self.problems: list[StoreProblem] = []
        writer.make_private_dirs(self.root)

    # -- paths (the layout's) -----------------------------------------------------------------------

    def session_path(self, session_id: str, cwd: str | None) -> Path:
        """Where a session's file lives."""
        return self.layout.session_path(session_id, cwd)

    def path_of(self, session_id: str) -> Path | None:
        """Where the session's file of this store's encoding is (``StoreLayout.path_of``)."""
        return self.layout.path_of(session_id)

    # -- listing (the listing's) ------------------------------------------------------------------

    @property
    def watched(self) -> bool:
        """Set by a host that reports every change under the root through ``note_changes``."""
        return self._listing.watched

    @watched.setter
    def watched(self, value: bool) -> None:
        self._listing.watched = value

    def watcher(self, on_change: ChangeCallback) -> StoreWatcher:
        """A watcher of the root's file-system events (inotify), reporting to ``on_change``."""
        return StoreWatcher(self.root, on_change)

    def note_changes(self, paths: Iterable[str] | None) -> None:
        """Say what changed under the root (paths a file-system watcher reported), or ``None`` when
        anything may have (the watcher lost events or just started): the next listing looks at
        those paths only, or at everything. Safe to call from any thread.

        Only a store whose ``watched`` is set relies on it; others look at everything each time.
        """
        self._listing.note_changes(paths)

    def changes_pending(self) -> bool:
        """Whether ``note_changes`` reported anything the last listing has not looked at."""
        return self._listing.changes_pending()

    def listing(self) -> list[SessionRecord]:
        """Every readable session, newest first; unreadable files are reported in ``self.problems``.

        Only header frames are read, and only for files whose revision changed since the last call
        (or, in a new process, since the listing cache was written); with a watcher reporting
        changes (``note_changes``), only the reported folders are looked at.
        """
        owned = {session_id: owned.session.header for session_id, owned in self._owned.items()}
        with collector_paused():
            records, self.problems = self._listing.list(owned)
        return records

    def remembered_sessions(self) -> list[SessionRecord] | None:
        """The listing as the listing cache remembers it, without looking at any file: what a host
        shows first, before ``list_sessions`` (which then answers what is there now). ``None`` when
        there is no cache or a listing was already made."""
        owned = {session_id: owned.session.header for session_id, owned in self._owned.items()}
        with collector_paused():
            remembered = self._listing.remembered(owned)
        if remembered is None:
            return None
        records, self.problems = remembered
        return records

    def listed_revisions(self) -> Mapping[str, Revision]:
        """Session id -> file revision, as the last ``list_sessions`` saw them.

        The same object until a listing sees any file change, so hosts can tell "nothing changed"
        by identity.
        """
        return self._listing.revisions()

    def listed_revision(self, header: SessionHeader) -> Revision | None:
        """The file revision (device, inode, size, mtime) the last ``list_sessions`` saw for a session.

        Hosts use it to keep per-session caches (titles) fresh without reading logs again.
        """
        return self._listing.revisions().get(header.id)

    # -- writing ----------------------------------------------------------------------------------

    def create(
        self, session_id: str | None = None, *, cwd: str | None = None, created_at: int | None = None
    ) -> Session:
        """Create a session; nothing is written until its first append.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_EXISTS``, ``SESSION_QUERY_INVALID_ID``, or
                ``SESSION_QUERY_INVALID_EVENT`` for a non-absolute cwd.
        """
        if session_id is None:
            session_id = mint_session_id()
        path = self.session_path(session_id, check_cwd(cwd))
        if session_id in self._owned or self.layout.find(session_id) is not None:
            raise already_exists(session_id)
        header = SessionHeader(id=session_id, cwd=cwd, created_at=self._clock() if created_at is None else created_at)
        session = Session(header, clock=self._clock, sink=self)
        self._owned[session_id] = _Owned(session=session, path=path)
        return session

    def get(self, session_id: str) -> Session | None:
        """The session with this id, opened for writing (locked) by this store; ``None`` when absent.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_LOCKED`` when another writer holds it,
                ``SESSION_QUERY_CORRUPT_SESSION`` when its file is damaged.
        """
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned.session
        path = self.layout.find(session_id)
        if path is None:
            return None
        try:
            check_folders(self.root, path.parent)
            fd, log = writer.open_for_append(
                path, session_id, lambda raw: load_log(raw, path, self.compression), self._encode
            )
        except UnsafeFile as error:
            raise unsafe(error) from None
        except OSError as error:
            raise SessionQueryError(
                f"cannot open session {js_json_stringify(session_id)} at {path}: {error.strerror or error}",
                SESSION_QUERY_READ_FAILED,
            ) from None
        session = Session(log.header, log.events, clock=self._clock, sink=self)
        self._owned[session_id] = _Owned(session=session, path=path, fd=fd)
        return session

    def close(self) -> None:
        """Release every session this store writes (their locks and files), and write the listing
        cache if the last listing read headers it does not hold yet."""
        if self._listing.dirty:
            self._listing.save()
        for owned in self._owned.values():
            if owned.fd is not None:
                os.close(owned.fd)
                owned.fd = None
        self._owned.clear()

    def release(self, session_id: str) -> None:
        """Stop writing one session (its lock is released; the data stays)."""
        owned = self._owned.pop(session_id, None)
        if owned is not None and owned.fd is not None:
            os.close(owned.fd)

    def delete(self, session_id: str) -> None:
        """Delete a session and its folder (a missing id is not an error)."""
        owned = self._owned.pop(session_id, None)
        path = owned.path if owned is not None else self.layout.find(session_id)
        if owned is not None and owned.fd is not None:
            os.close(owned.fd)
        if path is not None:
            try:
                check_folders(self.root, path.parent)
            except UnsafeFile as error:
                raise unsafe(error) from None
        if path is not None and path.parent.exists():
            shutil.rmtree(path.parent)
            self._logs.forget(path)
            writer.fsync_dir(path.parent.parent)

    def _encode(self, text: str) -> bytes:
        data = text.encode("utf-8")
        return self._compressor.compress(data) if self.compression == "zstd" else data

    def write(self, session: Session, events: Sequence[SessionEvent]) -> None:
        """Persist one append batch durably (the ``EventSink`` of owned sessions).

        Raises:
            SessionQueryError: ``SESSION_QUERY_WRITE_FAILED`` after truncating back to the old length.
        """
        owned = self._owned.get(session.id)
        if owned is None or owned.session is not session:
            raise SessionQueryError(
                f"session {js_json_stringify(session.id)} is not open for writing here", SESSION_QUERY_LOCKED
            )
        rows = pack_chunk_runs(events) if self.pack_chunks else [event.to_wire() for event in events]
        batch = "".join(js_json_stringify(row) + "\n" for row in rows)
        if owned.fd is None:
            self._materialise(owned, batch)
            return
        writer.append(owned.fd, self._encode(batch), session.id)

    def _materialise(self, owned: _Owned, batch: str) -> None:
        try:
            check_folders(self.root, owned.path.parent)
        except UnsafeFile as error:
            raise unsafe(error) from None
        header = header_line(owned.session.header)
        if self.compression == "zstd":
            payload = self._encode(header) + self._encode(batch)  # the header is a frame of its own
        else:
            payload = self._encode(header + batch)
        owned.fd = writer.create(owned.path, payload, owned.session.id, self.root)

    # -- reading ----------------------------------------------------------------------------------

    def written_revision(self, session_id: str) -> Revision | None:
        """The file revision of a session this store writes, as of its last append (``None`` when it
        is not written here or has no file yet).

        Every append reaches the file before it returns, so this is the revision another process
        listing the store sees for the same events.
        """
        owned = self._owned.get(session_id)
        if owned is None or owned.fd is None:
            return None
        stat = os.fstat(owned.fd)
        return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _load(self, session_id: str) -> LoadedLog:
        path = self.layout.find(session_id)
        if path is None:
            raise not_found(session_id)
        return self._logs.load(path)

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """The folded current surface, from memory for sessions this store writes, else from disk.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` or ``SESSION_QUERY_CORRUPT_SESSION``.
        """
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned.session.snapshot()
        log = self._load(session_id)
        return SurfaceSnapshot.model_construct(
            session=log.header,
            captured_through_seq=log.events[-1].seq if log.events else None,
            events=events_at(log.events, log.surface_seqs),
        )

    def title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` of the raw log, or ``None``."""
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned.session.title
        return self._load(session_id).title

    def read_log(self, session_id: str) -> tuple[SessionHeader, list[SessionEvent]]:
        """Every event of a session's raw log (shadowed and log-only ones too), read-only: no write
        lock is taken, so a session another process writes can be read (a consistent prefix).

        A session this store writes comes from memory; others from disk (cached by file revision).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``, ``SESSION_QUERY_CORRUPT_SESSION``
                or ``SESSION_QUERY_UNSAFE_PATH``.
        """
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned.session.header, list(owned.session.events)
        log = self._load(session_id)
        return log.header, list(log.events)

    def read_stored(self, header: SessionHeader) -> StoredSession:
        """One listed session read straight from its file, bypassing the log cache.

        For bulk readers (the search index reads every session once): nothing stays in memory.
        The revision is taken before reading, so it never claims more than what was read.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` when the file is gone,
                ``SESSION_QUERY_CORRUPT_SESSION`` when it cannot be read.
        """
        try:
            return self._logs.read_stored(self.session_path(header.id, header.cwd))
        except FileNotFoundError:
            raise not_found(header.id) from None
