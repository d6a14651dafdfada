"""Another tool's SQLite database, read without ever disturbing it (opencode's, Kilo CLI's, Hermes
Agent's): opened read-only and never created, never through a link, each read one transaction.

- While the tool's write-ahead log is there (it is while the tool runs, and stays after): a
  ``mode=ro`` connection, kept open; it reads the log too, and ``data_version`` says when the tool
  committed.
- A log without its ``-shm``: read from a private copy (``sqlite_snapshot``), since reading the log
  in place would make a ``-shm`` beside it.
- No log: the file is the whole state. It is opened ``immutable`` (no lock, nothing created), once
  per read; a database that keeps a rollback journal instead is read ``mode=ro`` under its lock, as
  its writer expects (else a read while it commits sees pages half written).
- Locked past ``BUSY_SECONDS``: ``SourceBusy``, a clear "busy, try again".
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from core.errors import SessionQueryError
from core.files import open_regular
from core.serialization import omission_notice
from core.sessions.sources.oversized import SLICE, STRING_KEEP, cut_json, drop_part_character
from core.sessions.sources.sqlite_snapshot import WalSnapshot, needs_snapshot, read_only

T = TypeVar("T")
LONG_VALUE_BYTES = 64 * 1024 * 1024
"""How much of one value too long to take at once is read (in slices)."""

BUSY_SECONDS = 2.0
"""How long a read waits for the tool's lock before it says the database is busy."""
SESSION_QUERY_BUSY = "SESSION_QUERY_SOURCE_BUSY"


class SourceBusy(SessionQueryError):
    """The database is locked by its writer for longer than ``BUSY_SECONDS``: try again."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name}'s database is busy (being written); try again", SESSION_QUERY_BUSY)


class ReadOnlyDatabase:
    """One tool's database file, read as the module docstring says. Not thread-safe: its owner
    serializes the reads.

    Args:
        path: the database file.
        name: the tool's name (what ``SourceBusy`` says).
    """

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name
        self._kept: tuple[sqlite3.Connection, int] | None = None
        self._snapshot = WalSnapshot()

    def wal(self) -> bool:
        return os.path.exists(str(self.path) + "-wal")

    def connection(self) -> sqlite3.Connection:
        """A read-only connection, never one that creates or changes a file of the tool's."""
        if os.path.islink(self.path) or not self.path.is_file():
            raise FileNotFoundError(str(self.path))
        if not self.wal():
            self.close()
            return read_only(self.path, "" if self.rollback_journal() else "&immutable=1", BUSY_SECONDS)
        if needs_snapshot(self.path):
            self.close(snapshot=False)
            return self._snapshot.connection(self.path, BUSY_SECONDS)
        inode = os.stat(self.path).st_ino
        if self._kept is None or self._kept[1] != inode:
            self.close()
            self._kept = (read_only(self.path, "", BUSY_SECONDS), inode)
        return self._kept[0]

    def rollback_journal(self) -> bool:
        """Whether the database keeps a rollback journal rather than a write-ahead log (the header's
        write version, byte 18: 1 rollback, 2 log)."""
        try:
            with os.fdopen(open_regular(self.path, follow=False), "rb") as handle:
                head = handle.read(20)
        except OSError:
            return False
        return len(head) == 20 and head.startswith(b"SQLite format 3\x00") and head[18] == 1

    def close(self, *, snapshot: bool = True) -> None:
        if self._kept is not None:
            self._kept[0].close()
            self._kept = None
        if snapshot:
            self._snapshot.close()

    def stamp(self) -> tuple[object, ...] | None:
        """What changes when the tool commits: ``data_version`` of the kept connection (with the
        log), the copy's identity (a log without its ``-shm``), else the file's identity, size and
        time; ``None`` when there is no file."""
        try:
            status = os.stat(self.path)
        except OSError:
            return None
        if not self.wal():
            return ("file", status.st_ino, status.st_size, status.st_mtime_ns)
        if needs_snapshot(self.path):
            try:
                return ("copy", *WalSnapshot.identity(self.path))
            except OSError:
                return None
        try:
            version = self.connection().execute("PRAGMA data_version").fetchone()[0]
        except (OSError, sqlite3.Error):
            self.close()
            return ("unreadable", status.st_mtime_ns)
        return ("log", status.st_ino, version)

    def query(self, sql: str, parameters: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read in one transaction (one snapshot of the database).

        Raises:
            SourceBusy: the tool holds its lock past ``BUSY_SECONDS``.
            OSError: the database cannot be opened or read.
        """
        return self._read(lambda connection: connection.execute(sql, parameters).fetchall())

    def long_json(self, value: str, where: str, parameters: tuple[object, ...]) -> str | None:
        """The JSON text of ``SELECT {value} {where}`` (its first row), too long to take at once: read
        in slices in one transaction, each long string cut to its head and the omission notice
        (``oversized``); ``None`` when there is none or it is too large even so. ``value`` and
        ``where`` are the reader's own SQL, never data.

        Raises:
            SourceBusy, OSError: as ``query``.
        """
        sql = (
            f"WITH value(v) AS MATERIALIZED (SELECT CAST({value} AS BLOB) {where} LIMIT 1),"
            f" at(n) AS (SELECT 1 UNION ALL SELECT n + {SLICE} FROM at WHERE n + {SLICE} <= {LONG_VALUE_BYTES})"
            f" SELECT substr(v, n, {SLICE}) FROM at, value"
        )

        def cut(connection: sqlite3.Connection) -> bytes | None:
            rows = connection.execute(sql, parameters)
            return cut_json(piece for (piece,) in itertools.takewhile(lambda row: row[0], rows))

        found = self._read(cut)
        return None if not found else found.decode("utf-8", "replace")

    def long_text(self, value: str, where: str, parameters: tuple[object, ...]) -> str | None:
        """The text of ``SELECT {value} {where}`` (its first row), too long to take at once: its head
        and the omission notice (the UTF-8 bytes left out); ``None`` when there is none.

        Raises:
            SourceBusy, OSError: as ``query``.
        """
        sql = f"SELECT substr(CAST({value} AS BLOB), 1, {STRING_KEEP}), length(CAST({value} AS BLOB)) {where} LIMIT 1"
        rows = self.query(sql, parameters)
        if not rows or type(rows[0][0]) is not bytes or type(rows[0][1]) is not int:
            return None
        kept = bytearray(rows[0][0])
        drop_part_character(kept)
        head = kept.decode("utf-8", "replace")
        return head + omission_notice(rows[0][1] - len(kept))

    def _read(self, read: Callable[[sqlite3.Connection], T]) -> T:
        try:
            connection = self.connection()
        except (OSError, sqlite3.Error) as error:
            raise OSError(f"cannot open {self.path}: {error}") from None
        kept = (self._kept is not None and connection is self._kept[0]) or self._snapshot.holds(connection)
        try:
            connection.execute("BEGIN")
            try:
                return read(connection)
            finally:
                connection.execute("COMMIT")
        except sqlite3.OperationalError as error:
            self.close()
            if "locked" in str(error) or "busy" in str(error):
                raise SourceBusy(self.name) from None
            raise OSError(f"cannot read {self.path}: {error}") from None
        except sqlite3.Error as error:
            self.close()
            raise OSError(f"cannot read {self.path}: {error}") from None
        finally:
            if not kept:
                connection.close()
