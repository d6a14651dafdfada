"""Searching one SQLite file of the message index: titles, candidate chunks for a needle,
verifying them against the stored text, and a session's messages."""

from __future__ import annotations

import bisect
import contextlib
import os
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import zstandard

from core.search.index_chunks import (
    CHUNK_BITS,
    CHUNK_MASK,
    ROLES,
    Chunk,
    message_texts,
    read_title,
    starts_of,
    trigram_query,
    unpack,
)
from core.search.index_values import (
    INDEX_CORRUPT,
    IndexUnavailable,
)
from core.search.matching import Snippet, make_snippet
from core.search.shard_files import ShardFiles, classify_failure


class ShardReader:
    """Reading a shard: titles, candidate chunks, verifying them, a session's messages.

    Args:
        files: the shard's file and the state its reader and writer share.
    """

    def __init__(self, files: ShardFiles) -> None:
        self._files = files

    # -- reading --------------------------------------------------------------------------------------

    def query(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """Rows of a read on the reader connection (none when the index is not open).

        A damaged file found here is remembered, so the next ``sync`` rebuilds it.
        """
        self._files.lock.acquire()
        locked = True
        try:
            connection = self._files.reader
            if connection is None:
                return []
            if connection is not self._files.writer:
                # Its own connection: reading never waits for the writer (WAL), and closing the
                # connection waits for this read.
                with self._files.reading:
                    self._files.lock.release()
                    locked = False
                    return connection.execute(sql, tuple(parameters)).fetchall()
            return connection.execute(sql, tuple(parameters)).fetchall()
        except sqlite3.Error as error:
            problem = classify_failure(error)
            if problem.code == INDEX_CORRUPT:
                self._files.damaged = problem
                status = self._files.status
                self._files.set_status("failed", status.indexed, status.total, problem)
            raise problem from error
        finally:
            if locked:
                self._files.lock.release()

    def titles(self) -> dict[str, tuple[str, str | None]]:
        """Session id -> (revision, title) of every indexed session.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        rows = self.query("SELECT id, revision, title FROM sessions")
        return {session_id: (revision, read_title(title)) for session_id, revision, title in rows}

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
        rows = self.query("SELECT rowid FROM terms WHERE terms MATCH ? LIMIT ?", (query, cap + 1))
        if len(rows) > cap:
            return None
        found: dict[str, list[int]] = {}
        ids = self._files.ids
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
        rows = self.query(
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
        known = self._files.known.get(session_id)
        if known is None or not needle:
            return None
        low = known[0] << CHUNK_BITS
        rows = self.query(
            "SELECT first_message, roles, starts, body FROM chunks WHERE rowid BETWEEN ? AND ? ORDER BY rowid DESC",
            (low, low | CHUNK_MASK),
        )
        return self._first_match(rows, needle)

    def _first_match(self, rows: Iterable[tuple[int, str, bytes, bytes]], needle: str) -> Snippet | None:
        for first_message, roles, starts, body in rows:
            found = self._find(self._decode(body), starts_of(starts), needle)
            if found is not None:
                position, text = found
                snippet = make_snippet(
                    text, needle, ROLES.get(roles[position : position + 1], "user"), first_message + position
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
            return unpack(body)
        except (zstandard.ZstdError, UnicodeDecodeError, TypeError) as error:
            problem = IndexUnavailable(f"the index file is damaged: {error}", INDEX_CORRUPT)
            self._files.damaged = problem
            raise problem from error

    def messages(self, session_id: str) -> list[tuple[str, str]]:
        """The indexed projected conversation of a session as ``(role, text)`` pairs (empty if unknown).

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        return [(role, text) for _position, role, text in reversed(self.session_messages(session_id, None))]

    # -- words ------------------------------------------------------------------------------------------

    def sessions_with(self, words: Sequence[str]) -> dict[str, int]:
        """Word -> how many sessions of this shard hold it (absent: none).

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        found: dict[str, int] = {}
        if self._vocabulary():
            for start in range(0, len(words), 500):
                part = list(words[start : start + 500])
                marks = ",".join("?" * len(part))
                found.update(self.query(f"SELECT word, sessions FROM words WHERE word IN ({marks})", part))
            return found
        for word in words:
            rows = self.query("SELECT count(*) FROM postings WHERE word = ?", (word,))  # none: not open
            if rows and rows[0][0]:
                found[word] = rows[0][0]
        return found

    def words_from(self, prefix: str, count: int, scan: int) -> dict[str, int]:
        """The ``count`` most widespread words starting with ``prefix`` and how many sessions hold
        each (without a current vocabulary: among the first ``scan`` postings in word order, so a
        short prefix never reads the whole table).

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        if self._vocabulary():
            rows = self.query(
                "SELECT word, sessions FROM words WHERE word >= ? AND word < ? ORDER BY sessions DESC LIMIT ?",
                (prefix, prefix + "\U0010ffff", count),
            )
            return dict(rows)
        rows = self.query(
            "SELECT word, count(*) FROM (SELECT word FROM postings WHERE word >= ? AND word < ? LIMIT ?) GROUP BY word",
            (prefix, prefix + "\U0010ffff", scan),
        )
        return dict(rows)

    def _vocabulary(self) -> bool:
        """Whether the shard's vocabulary is current (``vocabulary``)."""
        rows = self.query("SELECT value FROM meta WHERE key = 'vocabulary'")
        return bool(rows) and rows[0][0] == "fresh"

    def posting_arrays(
        self, word: str, keys: Any = None, *, newest: int | None = None, span: tuple[int, int] | None = None
    ) -> tuple[Any, Any]:
        """(session keys, counts) of the sessions of this shard holding ``word``, as numpy arrays
        (only those of the array ``keys`` when given; only the ``newest`` most recently indexed
        when given; only those whose key is within ``span``, both ends included, when given).

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        import numpy as np

        # One row of two comma-separated lists, parsed by numpy: a common word's thousands of
        # postings cost a third of reading them as rows. (Both lists see the rows in one order.)
        lists = "SELECT group_concat(key), group_concat(count) FROM "
        if keys is None and newest is not None:
            found = self.query(
                lists + "(SELECT key, count FROM postings WHERE word = ? ORDER BY key DESC LIMIT ?)", (word, newest)
            )
        elif keys is None and span is not None:
            found = self.query(lists + "postings WHERE word = ? AND key BETWEEN ? AND ?", (word, *span))
        elif keys is None:
            found = self.query(lists + "postings WHERE word = ?", (word,))
        else:
            found = []
            wanted = keys.tolist()
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                marks = ",".join("?" * len(part))
                found += self.query(lists + f"postings WHERE word = ? AND key IN ({marks})", (word, *part))
        key_lists = [row[0] for row in found if row[0]]
        count_lists = [row[1] for row in found if row[0]]
        if not key_lists:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        return (
            np.fromstring(",".join(key_lists), np.int64, sep=","),
            np.fromstring(",".join(count_lists), np.float64, sep=","),
        )

    def length_array(self) -> tuple[dict[int, str], int, Any]:
        """The session ids by key, the version of both (it changes whenever they do), and every
        session's length in words as a numpy array by key (made again only after the lengths changed)."""
        import numpy as np

        files = self._files
        cached = files.length_cache
        if cached is not None and cached[0] == files.length_version and cached[1] is files.lengths:
            return files.ids, cached[0], cached[2]
        with files.lock:
            version, lengths, ids = files.length_version, files.lengths, files.ids
            array = np.zeros(max(lengths, default=0) + 1)
            if lengths:
                array[np.fromiter(lengths.keys(), np.int64, len(lengths))] = np.fromiter(
                    lengths.values(), np.float64, len(lengths)
                )
        files.length_cache = (version, lengths, array)
        return ids, version, array

    def words_of(self, session_id: str) -> int:
        """How many indexed words a session holds (0: not indexed)."""
        known = self._files.known.get(session_id)
        return self._files.lengths.get(known[0], 0) if known is not None else 0

    def sizes(self) -> tuple[int, int]:
        """How many sessions this shard holds and how many words they hold together."""
        with self._files.lock:
            lengths = list(self._files.lengths.values())
        return len(lengths), sum(lengths)

    def session_messages(self, session_id: str, grams: str | None) -> list[tuple[int, str, str]]:
        """The messages of ``session_chunks`` as (position, role, text), newest first.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        messages: list[tuple[int, str, str]] = []
        for chunk in self.session_chunks(session_id, grams):
            texts = message_texts(chunk.text, chunk.starts)
            for position in range(len(texts) - 1, -1, -1):
                role = ROLES.get(chunk.roles[position : position + 1], "user")
                messages.append((chunk.first_message + position, role, texts[position]))
        return messages

    def session_chunks(self, session_id: str, grams: str | None) -> list[Chunk]:
        """The chunks of ``session_id`` whose text may hold one of the trigram queries ``grams``
        (every chunk when ``None``), newest first.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        known = self._files.known.get(session_id)
        if known is None:
            return []
        low = known[0] << CHUNK_BITS
        high = low | CHUNK_MASK
        if grams is None:
            sql = (
                "SELECT first_message, roles, starts, body FROM chunks WHERE rowid BETWEEN ? AND ? ORDER BY rowid DESC"
            )
            rows = self.query(sql, (low, high))
        else:
            rows = self.query(
                "SELECT first_message, roles, starts, body FROM chunks WHERE rowid IN "
                "(SELECT rowid FROM terms WHERE terms MATCH ? AND rowid BETWEEN ? AND ?) ORDER BY rowid DESC",
                (grams, low, high),
            )
        return [Chunk(first, self._decode(body), starts_of(starts), roles) for first, roles, starts, body in rows]

    def interrupt(self) -> None:
        """Abort a search running on another thread (it raises ``IndexUnavailable``)."""
        with self._files.handle:
            connection = self._files.reader
            if connection is not None and connection is not self._files.writer:
                with contextlib.suppress(sqlite3.Error):
                    connection.interrupt()

    def size_bytes(self) -> int:
        """Bytes on disk (file and write-ahead log)."""
        if self._files.path is None:
            return 0
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                total += os.path.getsize(str(self._files.path) + suffix)
        return total
