"""One shard's message vectors (search by meaning): which chunks still want theirs, storing them,
and reading them back for a search.

A chunk's vectors are one row of ``vectors``, keyed by the chunk's row id, holding the chunk's
digest when it was embedded and its messages' packed vectors in order (``meaning.pack``). A chunk
whose text changed (an append rewrites the last one) has another digest and is embedded again; the
words are indexed first, so word search never waits for this. ``meta`` names the embedder and its
dimensions: vectors another embedder made are dropped and made again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from core.search.index_chunks import CHUNK_BITS, CHUNK_MASK, starts_of, unpack
from core.search.shard_files import ShardFiles, classify_failure
from core.search.shard_reads import ShardReader

PENDING_BATCH = 64
"""Chunks read for embedding at a time."""


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
        """Make ``model`` the embedder of this shard's vectors (dropping another one's); whether
        this process writes the shard (else it only reads what the writer embeds)."""
        with self._files.lock:
            writer = self._files.writer
            if writer is None:
                return False
            try:
                row = writer.execute("SELECT value FROM meta WHERE key = 'meaning'").fetchone()
                if row is None or row[0] != model:
                    writer.execute("BEGIN IMMEDIATE")
                    writer.execute("DELETE FROM vectors")
                    writer.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('meaning', ?)", (model,))
                    writer.execute("DELETE FROM meta WHERE key = 'meaning_dims'")
                    writer.execute("COMMIT")
            except sqlite3.Error as error:
                if writer.in_transaction:
                    writer.execute("ROLLBACK")
                raise classify_failure(error) from error
            return True

    def pending(self, after: int, limit: int = PENDING_BATCH) -> list[PendingChunk]:
        """Chunks past row id ``after`` whose vectors are missing or stale, in row id order."""
        with self._files.lock:
            writer = self._files.writer
            if writer is None:
                return []
            try:
                rows = writer.execute(
                    "SELECT c.rowid, c.digest, c.starts, c.body FROM chunks c LEFT JOIN vectors v ON v.rowid = c.rowid"
                    " WHERE c.rowid > ? AND v.digest IS NOT c.digest ORDER BY c.rowid LIMIT ?",
                    (after, limit),
                ).fetchall()
            except sqlite3.Error as error:
                raise classify_failure(error) from error
        chunks = []
        for rowid, digest, starts_blob, body in rows:
            text = unpack(body)
            starts = starts_of(starts_blob)
            ends = [*starts[1:], len(text) + 1]
            texts = [text[start : end - 1] for start, end in zip(starts, ends, strict=True)]
            chunks.append(PendingChunk(rowid, digest, texts))
        return chunks

    def store(self, rows: Sequence[tuple[int, bytes, bytes]], dims: int) -> None:
        """Write (chunk row id, digest, packed vectors) rows in one transaction."""
        with self._files.lock:
            writer = self._files.writer
            if writer is None:
                return
            try:
                writer.execute("BEGIN IMMEDIATE")
                writer.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('meaning_dims', ?)", (str(dims),))
                writer.executemany("INSERT OR REPLACE INTO vectors(rowid, digest, data) VALUES (?, ?, ?)", rows)
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

    def counts(self) -> tuple[int, int]:
        """(chunks with current vectors, chunks)."""
        rows = self._reads.query(
            "SELECT (SELECT count(*) FROM chunks c JOIN vectors v ON v.rowid = c.rowid AND v.digest = c.digest),"
            " (SELECT count(*) FROM chunks)"
        )
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def of_session(self, session_id: str) -> list[tuple[int, bytes]]:
        """(first message, packed vectors) of each embedded chunk of one session, in order."""
        known = self._files.known.get(session_id)
        if known is None:
            return []
        low = known[0] << CHUNK_BITS
        return self._reads.query(
            "SELECT c.first_message, v.data FROM vectors v JOIN chunks c ON c.rowid = v.rowid"
            " WHERE v.rowid BETWEEN ? AND ? ORDER BY v.rowid",
            (low, low | CHUNK_MASK),
        )

    def every(self, after: int, limit: int) -> list[tuple[int, bytes]]:
        """(chunk row id, packed vectors) of the embedded chunks past ``after``, in row id order."""
        return self._reads.query(
            "SELECT rowid, data FROM vectors WHERE rowid > ? ORDER BY rowid LIMIT ?", (after, limit)
        )

    def session_of(self, rowid: int) -> str | None:
        """The session a chunk row id belongs to."""
        return self._files.ids.get(rowid >> CHUNK_BITS)


def chunk_rows(vectors: ShardVectors, limit: int) -> Iterator[list[tuple[int, bytes]]]:
    """Every embedded chunk of a shard, ``limit`` rows at a time."""
    after = -1
    while True:
        rows = vectors.every(after, limit)
        if not rows:
            return
        yield rows
        after = rows[-1][0]
