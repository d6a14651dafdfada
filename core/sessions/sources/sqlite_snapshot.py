"""A private copy of another tool's SQLite database whose write-ahead log lies beside it without
its shared-memory file (``-wal`` without ``-shm``: the tool is not running, and the log was not
folded in). Reading the log needs that file, and SQLite would make it beside the database; the
copy is read instead, in a folder of ours, so nothing is ever made beside the tool's files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import weakref
from pathlib import Path

from core.files import open_regular

SNAPSHOT_BYTES = 512 * 1024 * 1024
"""The largest database (with its log) copied; a larger one cannot be read (the listing says why)."""
_PIECE = 1024 * 1024


def read_only(path: Path, options: str, timeout: float) -> sqlite3.Connection:
    """A connection that never writes: ``file:<path>?mode=ro<options>`` (``&immutable=1``...)."""
    uri = path.as_posix().replace("?", "%3f").replace("#", "%23")
    connection = sqlite3.connect(f"file:{uri}?mode=ro{options}", uri=True, timeout=timeout, check_same_thread=False)
    connection.execute("PRAGMA query_only = ON")
    return connection


def needs_snapshot(database: Path) -> bool:
    """Whether ``database`` has a write-ahead log and no shared-memory file beside it."""
    return os.path.exists(f"{database}-wal") and not os.path.lexists(f"{database}-shm")


class WalSnapshot:
    """The kept copy of one database and its log (made again when either changes)."""

    def __init__(self) -> None:
        self._kept: tuple[tuple[int, ...], sqlite3.Connection, str] | None = None
        self._cleanup: weakref.finalize[..., object] | None = None

    @staticmethod
    def identity(database: Path) -> tuple[int, ...]:
        """What changes when the database or its log does: each one's inode, size and time."""
        found: list[int] = []
        for path in (str(database), f"{database}-wal"):
            status = os.stat(path, follow_symlinks=False)
            found += [status.st_ino, status.st_size, status.st_mtime_ns]
        return tuple(found)

    def connection(self, database: Path, timeout: float) -> sqlite3.Connection:
        """A read-only connection to a copy of ``database`` and its log as they are now.

        Raises:
            OSError: a file cannot be read, or they are larger than ``SNAPSHOT_BYTES``.
        """
        identity = self.identity(database)
        if self._kept is not None and self._kept[0] == identity:
            return self._kept[1]
        self.close()
        if sum(identity[1::3]) > SNAPSHOT_BYTES:
            raise OSError(f"its write-ahead log cannot be read without a -shm file beside {database}")
        folder = tempfile.mkdtemp(prefix="sessionref-sqlite-")
        try:
            copy = Path(folder) / "snapshot.db"
            for source, target in ((database, copy), (Path(f"{database}-wal"), Path(f"{copy}-wal"))):
                with os.fdopen(open_regular(source, follow=False), "rb") as reader, open(target, "wb") as writer:
                    shutil.copyfileobj(reader, writer, _PIECE)
            connection = read_only(copy, "", timeout)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        self._kept = (identity, connection, folder)
        self._cleanup = weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)  # (also at exit)
        return connection

    def holds(self, connection: sqlite3.Connection) -> bool:
        return self._kept is not None and self._kept[1] is connection

    def close(self) -> None:
        if self._kept is not None:
            _identity, connection, folder = self._kept
            self._kept = None
            with contextlib.suppress(sqlite3.Error):
                connection.close()
            shutil.rmtree(folder, ignore_errors=True)
            if self._cleanup is not None:
                self._cleanup.detach()
                self._cleanup = None
