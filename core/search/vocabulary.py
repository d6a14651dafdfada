"""The index's vocabulary: every indexed word of a shard and how many of its sessions hold it.

It answers the two questions a ranked search asks of words before reading any posting: how rare
each word of the query is (its document frequency, for BM25's weight) and what the word being typed
may become (the most widespread indexed words it starts). Both used to be counted from the postings
on every search: thousands of rows for a common word, and an alphabetical slice of them for a prefix.

A table ``words(word, sessions)`` kept in the same transactions as the postings. A big batch of
writes (a first build, a catch-up) does not keep it row by row, which would cost as much as writing
the postings again: the vocabulary is marked stale first and made again from the postings at the
end, in one pass (under a second a shard at 10,000 sessions). While it is stale, or in a file
written before it existed, a search counts from the postings as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

STALE_AFTER = 200
"""A batch of more sessions than this marks the vocabulary stale and makes it again at its end."""
_KEY = "vocabulary"


def is_fresh(connection: sqlite3.Connection) -> bool:
    """Whether the vocabulary is current (a file without it, or mid-build, is not)."""
    row = connection.execute("SELECT value FROM meta WHERE key = ?", (_KEY,)).fetchone()
    return row is not None and row[0] == "fresh"


def mark_stale(connection: sqlite3.Connection) -> None:
    """Stop keeping the vocabulary row by row (inside the caller's transaction)."""
    connection.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, 'stale')", (_KEY,))


def remake(connection: sqlite3.Connection) -> None:
    """Count the vocabulary again from the postings and mark it fresh (inside the caller's transaction)."""
    connection.execute("DELETE FROM words")
    connection.execute("INSERT INTO words(word, sessions) SELECT word, count(*) FROM postings GROUP BY word")
    connection.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, 'fresh')", (_KEY,))


def change(connection: sqlite3.Connection, sessions: Mapping[str, int]) -> None:
    """Add (or, negative, take away) sessions holding each word, as stored (already SQLite-safe text)."""
    added = sorted((word, count) for word, count in sessions.items() if count > 0)
    taken = sorted((-count, word) for word, count in sessions.items() if count < 0)
    if added:
        connection.executemany(
            "INSERT INTO words(word, sessions) VALUES (?, ?) "
            "ON CONFLICT(word) DO UPDATE SET sessions = sessions + excluded.sessions",
            added,
        )
    if taken:
        connection.executemany("UPDATE words SET sessions = sessions - ? WHERE word = ?", taken)
        connection.executemany("DELETE FROM words WHERE word = ? AND sessions <= 0", [(word,) for _c, word in taken])
