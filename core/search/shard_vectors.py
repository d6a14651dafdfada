"""One shard's message vectors (search by meaning): which chunks still want theirs, storing them,
and reading them back for a search.

- ``vectors``: a chunk's messages' packed vectors (``meaning.pack``), in parts of at most
  ``PART_VECTORS`` messages, row id ``chunk row id << PART_BITS | part``. Rows of about 900 bytes
  fill SQLite's 4 KiB pages (one 2 KiB vector row a page would waste half of it).
- ``embed_queue``: the chunks whose vectors are missing or stale. The writer queues every chunk it
  writes (``queue_chunk``, in the same transaction as its words) and drops its old vectors, so an
  append queues the session's last chunk only; embedding takes from the queue and never scans the
  index for work.
- ``session_vectors``: each session's mean vector (made again whenever its vectors change), which
  narrows a search by meaning alone to the likeliest sessions before their messages are scored.
- ``meta``: which embedder made the vectors and their dimensions. Another embedder's vectors are
  dropped and every chunk is queued again; an index written before vectors existed is queued whole.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from core.search.index_chunks import CHUNK_BITS, CHUNK_MASK, message_texts, starts_of, unpack
from core.search.meaning import pack as pack_vectors
from core.search.meaning import unpack as unpack_vectors
from core.search.shard_files import ShardFiles, classify_failure
from core.search.shard_reads import ShardReader

PENDING_BATCH = 64
"""Chunks read for embedding at a time."""
PART_VECTORS = 7
"""Messages' vectors in one row (the last part of a chunk takes what is left)."""
PART_BITS = 10
"""Vector row id = chunk row id << PART_BITS | part."""

COMPOUND = 100
"""Sessions read in one compound query (SQLite takes up to 500 terms)."""

PART_MASK = (1 << PART_BITS) - 1


def vector_rows(chunk_rowid: int) -> tuple[int, int]:
    """The row id range of one chunk's vector rows."""
    return chunk_rowid << PART_BITS, (chunk_rowid << PART_BITS) | PART_MASK


def queue_chunk(connection: sqlite3.Connection, chunk_rowid: int) -> None:
    """The writer wrote ``chunk_rowid``: its old vectors go, and it waits to be embedded."""
    connection.execute("DELETE FROM vectors WHERE rowid BETWEEN ? AND ?", vector_rows(chunk_rowid))
    connection.execute("INSERT OR IGNORE INTO embed_queue(rowid) VALUES (?)", (chunk_rowid,))


def forget_chunks(connection: sqlite3.Connection, low: int, high: int) -> None:
    """The writer removed the chunks ``low``..``high``: their vectors and queue entries go too, and
    the session's mean vector (made again from what stays: its first chunk is queued)."""
    connection.execute("DELETE FROM vectors WHERE rowid BETWEEN ? AND ?", (vector_rows(low)[0], vector_rows(high)[1]))
    connection.execute("DELETE FROM embed_queue WHERE rowid BETWEEN ? AND ?", (low, high))
    key = low >> CHUNK_BITS
    connection.execute("DELETE FROM session_vectors WHERE key = ?", (key,))
    if low & CHUNK_MASK:  # some chunks stay
        connection.execute("INSERT OR IGNORE INTO embed_queue(rowid) VALUES (?)", (key << CHUNK_BITS,))


@dataclass(frozen=True, slots=True)
class PendingChunk:
    """A chunk whose messages want vectors: its row id, digest and messages' texts."""

    rowid: int
    digest: bytes
    texts: list[str]


class ShardVectors:
    """The vectors of one shard (see the module docstring).

    Args:
        files: the shard's file and the state its reader and writer share.
        reads: the shard's reader (reads go through its connection and locks).
    """

    def __init__(self, files: ShardFiles, reads: ShardReader) -> None:
        self._files = files
        self._reads = reads

    # -- writing ---------------------------------------------------------------------------------------

    def adopt(self, model: str) -> bool:
        """Make ``model`` the embedder of this shard's vectors (another one's are dropped, every
        chunk queued); whether this process writes the shard (else it only reads what the writer
        embeds)."""
        with self._files.write_lock, self._files.lock:
            writer = self._files.writer
            if writer is None:
                return False
            try:
                row = writer.execute("SELECT value FROM meta WHERE key = 'meaning'").fetchone()
                if row is None or row[0] != model:
                    writer.execute("BEGIN IMMEDIATE")
                    writer.execute("DELETE FROM vectors")
                    writer.execute("DELETE FROM session_vectors")
                    writer.execute("INSERT OR IGNORE INTO embed_queue(rowid) SELECT rowid FROM chunks")
                    writer.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('meaning', ?)", (model,))
                    writer.execute("DELETE FROM meta WHERE key = 'meaning_dims'")
                    writer.execute("COMMIT")
            except sqlite3.Error as error:
                if writer.in_transaction:
                    writer.execute("ROLLBACK")
                raise classify_failure(error) from error
            return True

    def pending(self, limit: int = PENDING_BATCH) -> list[PendingChunk]:
        """The first ``limit`` queued chunks, with their messages' texts."""
        with self._files.write_lock, self._files.lock:
            writer = self._files.writer
            if writer is None:
                return []
            try:
                rows = writer.execute(
                    "SELECT c.rowid, c.digest, c.starts, c.body FROM embed_queue q JOIN chunks c ON c.rowid = q.rowid "
                    "ORDER BY q.rowid LIMIT ?",
                    (limit,),
                ).fetchall()
            except sqlite3.Error as error:
                raise classify_failure(error) from error
        return [
            PendingChunk(rowid, digest, message_texts(unpack(body), starts_of(starts)))
            for rowid, digest, starts, body in rows
        ]

    def store(self, chunks: Sequence[tuple[PendingChunk, bytes]], dims: int, width: int) -> None:
        """Write each chunk's packed vectors (``width`` bytes each) in parts and take it off the
        queue, in one transaction; a chunk rewritten since it was read stays queued."""
        with self._files.write_lock, self._files.lock:
            writer = self._files.writer
            if writer is None:
                return
            try:
                writer.execute("BEGIN IMMEDIATE")
                writer.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('meaning_dims', ?)", (str(dims),))
                touched: set[int] = set()
                for chunk, packed in chunks:
                    current = writer.execute("SELECT digest FROM chunks WHERE rowid = ?", (chunk.rowid,)).fetchone()
                    if current is None or current[0] != chunk.digest:
                        continue
                    writer.execute("DELETE FROM vectors WHERE rowid BETWEEN ? AND ?", vector_rows(chunk.rowid))
                    writer.executemany(
                        "INSERT INTO vectors(rowid, data) VALUES (?, ?)", _parts(chunk.rowid, packed, width)
                    )
                    writer.execute("DELETE FROM embed_queue WHERE rowid = ?", (chunk.rowid,))
                    touched.add(chunk.rowid >> CHUNK_BITS)
                for key in touched:
                    _remake_mean(writer, key, dims)
                writer.execute("COMMIT")
            except sqlite3.Error as error:
                if writer.in_transaction:
                    writer.execute("ROLLBACK")
                raise classify_failure(error) from error

    # -- reading ---------------------------------------------------------------------------------------

    def made_by(self) -> tuple[str, int] | None:
        """The embedder and dimensions of the vectors this shard holds (``None``: none yet)."""
        rows = dict(self._reads.query("SELECT key, value FROM meta WHERE key IN ('meaning', 'meaning_dims')"))
        model, dims = rows.get("meaning"), rows.get("meaning_dims")
        if model is None or dims is None or not dims.isdigit():
            return None
        return model, int(dims)

    def queued(self) -> int:
        """Chunks waiting for their vectors (every chunk when no embedder adopted the shard yet)."""
        table = "embed_queue" if self._reads.query("SELECT 1 FROM meta WHERE key = 'meaning'") else "chunks"
        rows = self._reads.query(f"SELECT count(*) FROM {table}")
        return int(rows[0][0]) if rows else 0  # (none: the index is not open here)

    def of_sessions(self, session_ids: Sequence[str]) -> list[tuple[str, int, bytes]]:
        """(session id, first message, packed vectors) of every vector row of these sessions, in
        message order (one query for all of them)."""
        ranges: list[tuple[str, int, int]] = []
        for session_id in session_ids:
            known = self._files.known.get(session_id)
            if known is not None:
                low = known[0] << CHUNK_BITS
                ranges.append((session_id, low << PART_BITS, ((low | CHUNK_MASK) << PART_BITS) | PART_MASK))
        if not ranges:
            return []
        # One range read a session (a compound SELECT: an OR of ranges would scan the table).
        one = (
            f"SELECT v.rowid, c.first_message, v.data FROM vectors v JOIN chunks c ON c.rowid = v.rowid >> {PART_BITS} "
            "WHERE v.rowid BETWEEN ? AND ?"
        )
        rows = []
        for start in range(0, len(ranges), COMPOUND):
            part = ranges[start : start + COMPOUND]
            rows += self._reads.query(
                " UNION ALL ".join([one] * len(part)), [bound for _sid, low, high in part for bound in (low, high)]
            )
        found: list[tuple[str, int, bytes]] = []
        for rowid, first_message, data in rows:
            owner = self._files.ids.get(rowid >> (PART_BITS + CHUNK_BITS))
            if owner is not None:
                found.append((owner, first_message + (rowid & PART_MASK) * PART_VECTORS, data))
        return found

    def means(self) -> list[tuple[str, bytes]]:
        """(session id, packed mean vector) of every embedded session: what a search by meaning
        alone narrows the sessions with."""
        rows = self._reads.query("SELECT key, data FROM session_vectors")
        ids = self._files.ids
        return [(ids[key], data) for key, data in rows if key in ids]


def _remake_mean(connection: sqlite3.Connection, key: int, dims: int) -> None:
    """The session's mean vector, made again from all its messages' vectors."""
    import numpy as np

    low = key << CHUNK_BITS
    rows = connection.execute(
        "SELECT data FROM vectors WHERE rowid BETWEEN ? AND ?", (vector_rows(low)[0], vector_rows(low | CHUNK_MASK)[1])
    ).fetchall()
    blob = b"".join(data for (data,) in rows)
    if not blob:
        connection.execute("DELETE FROM session_vectors WHERE key = ?", (key,))
        return
    mean = unpack_vectors(blob, dims).mean(axis=0, keepdims=True)
    norm = float(np.linalg.norm(mean))
    connection.execute(
        "INSERT OR REPLACE INTO session_vectors(key, data) VALUES (?, ?)",
        (key, pack_vectors(mean / norm if norm > 0 else mean)),
    )


def _parts(chunk_rowid: int, packed: bytes, width: int) -> list[tuple[int, bytes]]:
    """A chunk's packed vectors as rows of ``PART_VECTORS`` (the last part takes what is left)."""
    count = len(packed) // width if width else 0
    rows: list[tuple[int, bytes]] = []
    base = chunk_rowid << PART_BITS
    for part, start in enumerate(range(0, count, PART_VECTORS)):
        if part == PART_MASK:
            rows.append((base | part, packed[start * width :]))
            break
        rows.append((base | part, packed[start * width : (start + PART_VECTORS) * width]))
    return rows
