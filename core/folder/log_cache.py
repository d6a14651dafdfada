"""Reading a JSONL store's session logs: parsed logs kept while their file's revision holds, and
whole reads past the cache for bulk readers. Every read checks the folders on the way (no symlink
or special file is followed out of the store)."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from core.errors import SessionQueryError
from core.files import UNSAFE_PATH, Revision, UnsafeFile, check_folders, file_revision, read_regular
from core.folder.jsonl_codec import LoadedLog, load_log
from core.folder.jsonl_layout import Compression
from core.sessions.models import StoredSession, SurfaceSnapshot
from core.sessions.surface import events_at

LOG_CACHE_SIZE = 32
"""Parsed logs a store keeps for re-reads (most recently read first out last). A host that reads
every session once (a preview walk, a reader beside a writer) must not keep them all: the memory
grows with the store, and every full collection walks it."""


def unsafe(error: UnsafeFile) -> SessionQueryError:
    """The store's refusal of a symlink or special file (``SESSION_QUERY_UNSAFE_PATH``)."""
    return SessionQueryError(str(error.strerror), UNSAFE_PATH)


class LogCache:
    """The parsed logs of a store's files, least recently read out first past ``LOG_CACHE_SIZE``."""

    def __init__(self, root: Path, compression: Compression) -> None:
        self.root = root
        self.compression: Compression = compression
        self._logs: OrderedDict[Path, tuple[Revision, LoadedLog]] = OrderedDict()

    def load(self, path: Path) -> LoadedLog:
        """The parsed log at ``path``: the kept one while the file's revision is unchanged.

        Raises:
            FileNotFoundError: the file is gone.
            SessionQueryError: ``SESSION_QUERY_UNSAFE_PATH`` or ``SESSION_QUERY_CORRUPT_SESSION``.
        """
        try:
            check_folders(self.root, path.parent)
            revision = file_revision(path)
            kept = self._logs.get(path)
            if kept is not None:
                if kept[0] == revision:
                    self._logs.move_to_end(path)
                    return kept[1]
                # The file moved on: let go of the old parse before the new one is built, so one
                # session's log is never in memory twice.
                del self._logs[path]
                kept = None
            raw, _ = read_regular(path)
        except UnsafeFile as error:
            raise unsafe(error) from None
        log = load_log(raw, path, self.compression)
        self._logs[path] = (revision, log)
        self._logs.move_to_end(path)
        while len(self._logs) > LOG_CACHE_SIZE:
            self._logs.popitem(last=False)  # the least recently read
        return log

    def forget(self, path: Path) -> None:
        """Drop what is kept of ``path`` (its session was deleted)."""
        self._logs.pop(path, None)

    def read_stored(self, path: Path) -> StoredSession:
        """The log at ``path`` read whole, past the cache (nothing new stays in memory): a log the
        cache keeps at the file's revision is used as it is, else the file is read and parsed and
        let go. The revision is taken before reading, so it never claims more than what was read.

        Raises:
            FileNotFoundError: the file is gone.
            SessionQueryError: ``SESSION_QUERY_UNSAFE_PATH`` or ``SESSION_QUERY_CORRUPT_SESSION``.
        """
        try:
            check_folders(self.root, path.parent)
            kept = self._logs.get(path)
            if kept is not None and kept[0] == file_revision(path):
                return _stored(kept[0], kept[1])  # parsed already (the app just referenced it, say)
            raw, stat = read_regular(path)
        except UnsafeFile as error:
            raise unsafe(error) from None
        revision = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        return _stored(revision, load_log(raw, path, self.compression))


def _stored(revision: Revision, log: LoadedLog) -> StoredSession:
    surface = SurfaceSnapshot.model_construct(
        session=log.header,
        captured_through_seq=log.events[-1].seq if log.events else None,
        events=events_at(log.events, log.surface_seqs),
    )
    return StoredSession(revision=revision, surface=surface, title=log.title)
