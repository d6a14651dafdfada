"""How the SQLite message index stores a session: its projected messages in chunks of at most
``CHUNK_BYTES`` of text (original text zstd-compressed, message starts, roles, a digest), the
folded words the FTS table indexes, and reading sessions ahead of the writer during a sync."""

from __future__ import annotations

import collections
import hashlib
import itertools
import re
import sqlite3
import threading
from array import array
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import zstandard

from core.search.index_values import (
    IndexedSession,
    Reader,
)
from core.search.matching import fold
from core.search.vocabulary import change as vocabulary_change
from core.search.words import fold_text, run_term_counts, term_counts
from core.sessions.models import ProjectedItem

CHUNK_BYTES = 8 * 1024
"""A chunk holds whole messages up to this many UTF-8 bytes of text (one message may be larger).
Small chunks keep a candidate cheap to verify and make the trigram pre-filter selective."""
CHUNK_BITS = 20
"""Chunk row id = session key << CHUNK_BITS | ordinal."""
READ_AHEAD = 8
"""Sessions read and prepared ahead of the writer during a sync (on a second thread)."""


CHUNK_MASK = (1 << CHUNK_BITS) - 1
_RUN = re.compile(r"\w+")
"""A run of word characters: what the substring pre-filter indexes (``terms_text``). No NUL, quote
or whitespace is one, so a run is safe in an FTS5 string and whole for SQLite's tokenizer."""


def sqlite_text(text: str) -> str:
    # SQLite takes valid UTF-8 only; a lone surrogate (a hostile log) becomes U+FFFD in the
    # pre-filter text. Verification reads the stored original, so matches stay exact.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)
    return text


def trigram_query(needle: str) -> str | None:
    """The FTS5 query for chunks that may contain folded ``needle``: its trigrams, ANDed.

    Only trigrams inside one run of word characters of the needle count (the index holds those runs,
    ``terms_text``); ``None`` when there is none, i.e. the needle cannot be pre-filtered.
    """
    needle = sqlite_text(needle)
    grams = dict.fromkeys(run[i : i + 3] for run in _RUN.findall(needle) for i in range(len(run) - 2))
    if not grams:
        return None
    return " AND ".join('"' + gram + '"' for gram in grams)


# -- chunks ---------------------------------------------------------------------------------------------

ROLE_CODES = {"user": "u", "assistant": "a", "summary": "s"}
ROLES = {code: role for role, code in ROLE_CODES.items()}


@dataclass(slots=True)
class Chunk:
    """A run of messages as stored: text joined by ``\\n``, start offsets, role codes."""

    first_message: int
    text: str
    starts: array[int]
    roles: str
    body: bytes = b""
    digest: bytes = b""
    terms: str = ""
    counts: Counter[str] = field(default_factory=Counter)
    """How often each word (its stem) occurs in the chunk: what BM25 counts."""


def chunks_of(items: Sequence[ProjectedItem]) -> list[Chunk]:
    chunks: list[Chunk] = []
    texts: list[str] = []
    roles: list[str] = []
    first = size = 0
    for position, item in enumerate(items):
        length = len(item.text) if item.text.isascii() else len(item.text.encode("utf-8", "surrogatepass"))
        if texts and size + length > CHUNK_BYTES:
            chunks.append(_chunk(first, texts, roles))
            texts, roles, first, size = [], [], position, 0
        texts.append(item.text)
        roles.append(ROLE_CODES["summary" if item.checkpoint else item.role])
        size += length
    if texts:
        chunks.append(_chunk(first, texts, roles))
    return chunks


def _chunk(first: int, texts: list[str], roles: list[str]) -> Chunk:
    starts = array("I")
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 1
    return Chunk(first, "\n".join(texts), starts, "".join(roles))


def seal(chunk: Chunk, compressor: zstandard.ZstdCompressor) -> None:
    raw = chunk.text.encode("utf-8", "surrogatepass")
    chunk.body = compressor.compress(raw)
    chunk.digest = hashlib.blake2b(raw + chunk.roles.encode() + chunk.starts.tobytes(), digest_size=16).digest()
    chunk.terms, chunk.counts = analysed(chunk.text)


def unpack(body: bytes) -> str:
    decompressor: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if decompressor is None:  # (one a thread: making one costs as much as a small chunk's reading)
        decompressor = _local.decompressor = zstandard.ZstdDecompressor()
    return decompressor.decompress(body).decode("utf-8", "surrogatepass")


_local = threading.local()


def terms_text(text: str) -> str:
    """What the FTS table indexes for a chunk: its distinct runs of word characters, folded.

    A needle's run of word characters lies inside one run of the text that holds it, so the trigrams
    inside the needle's runs (``trigram_query``) are all among those of the chunk's distinct runs:
    indexing each run once loses no match. Splitting at punctuation as well as at whitespace (code's
    ``self.assertEqual(x,`` is three runs, each said again and again) halves the trigrams the
    tokenizer walks against whitespace-separated words. Text that is not ASCII adds the runs of its
    words as ranking folds them (accents dropped, ``ﬁ`` as ``fi``): the chunks that may hold a
    ranked word are found by its start too (``word_ranking``).
    """
    runs = dict.fromkeys(_RUN.findall(fold(text)))
    if not text.isascii():
        runs.update(dict.fromkeys(_RUN.findall(fold_text(text))))
    return sqlite_text(" ".join(runs))


def analysed(text: str) -> tuple[str, Counter[str]]:
    """A chunk's ``terms_text`` and ``term_counts``: in one pass over ASCII text (most of what is
    said), whose runs of word characters, counted, give both."""
    if not text.isascii():
        return terms_text(text), term_counts(text)
    runs = Counter(_RUN.findall(text.lower()))
    return " ".join(runs), run_term_counts(runs)


@dataclass(slots=True)
class Prepared:
    """A session read and chunked on the helper thread, ready to write."""

    session_id: str
    revision: str
    session: IndexedSession | None
    chunks: list[Chunk]
    unreadable: bool = False


def stored_title(title: str | None) -> str | None:
    return None if title is None else "t" + sqlite_text(title)


def read_title(stored: str | None) -> str | None:
    return None if stored is None else stored[1:]


def starts_of(blob: bytes) -> array[int]:
    starts = array("I")
    starts.frombytes(blob)
    return starts


def message_texts(text: str, starts: Sequence[int]) -> list[str]:
    """The messages of a chunk's ``text``, in order (``starts``: where each begins; a ``\n`` ends
    each but the last)."""
    ends = [*(start - 1 for start in starts[1:]), len(text)]
    return [text[start:end] for start, end in zip(starts, ends, strict=True)]


def message_text(text: str, starts: Sequence[int], index: int) -> str:
    """One message of a chunk's ``text`` (see ``message_texts``)."""
    end = starts[index + 1] - 1 if index + 1 < len(starts) else len(text)
    return text[starts[index] : end]


def unindex(connection: sqlite3.Connection, rowid: int, body: bytes) -> Counter[str]:
    """Forget a chunk's text in the FTS table; the word counts it held (for the postings)."""
    text = unpack(body)
    # A contentless FTS table forgets a row only when given exactly the text it indexed.
    terms, counts = analysed(text)
    connection.execute("INSERT INTO terms(terms, rowid, text) VALUES ('delete', ?, ?)", (rowid, terms))
    return counts


def write_counts(connection: sqlite3.Connection, key: int, change: Mapping[str, int], vocabulary: bool = False) -> int:
    """Apply ``change`` (word -> count added or, negative, taken away) to the postings of a session
    already indexed (a new one's are written in a batch, ``ShardWriter``). Returns how many words the
    session's length changed by. ``vocabulary``: keep the shard's vocabulary too (``vocabulary``)."""
    changed = {sqlite_text(word): delta for word, delta in change.items() if delta}
    if not changed:
        return 0
    current: dict[str, int] = {}
    words = list(changed)
    for start in range(0, len(words), 500):
        part = words[start : start + 500]
        marks = ",".join("?" * len(part))
        rows = connection.execute(
            f"SELECT word, count FROM postings WHERE key = ? AND word IN ({marks})", (key, *part)
        ).fetchall()
        current.update(rows)
    inserted: list[tuple[str, int, int]] = []
    updated: list[tuple[int, str, int]] = []
    deleted: list[tuple[str, int]] = []
    for word, delta in changed.items():
        before = current.get(word, 0)
        after = before + delta
        if before <= 0 < after:
            inserted.append((word, key, after))
        elif after <= 0 < before:
            deleted.append((word, key))
        elif after > 0:
            updated.append((after, word, key))
    if inserted:
        inserted.sort()  # in word order: the B-tree's pages are visited once each, in order
        connection.executemany("INSERT OR REPLACE INTO postings(word, key, count) VALUES (?, ?, ?)", inserted)
    if updated:
        connection.executemany("UPDATE postings SET count = ? WHERE word = ? AND key = ?", updated)
    if deleted:
        connection.executemany("DELETE FROM postings WHERE word = ? AND key = ?", deleted)
    if vocabulary and (inserted or deleted):
        held = {word: 1 for word, _key, _count in inserted}
        held.update({word: -1 for word, _key in deleted})
        vocabulary_change(connection, held)
    return sum(changed.values())


def prepare_session(session_id: str, revision: str, read: Reader, compressor: zstandard.ZstdCompressor) -> Prepared:
    try:
        session = read(session_id)
    except Exception:
        return Prepared(session_id, revision, IndexedSession(revision, None, ()), [], unreadable=True)
    if session is None:
        return Prepared(session_id, revision, None, [])
    chunks = chunks_of(session.messages)
    for chunk in chunks:
        seal(chunk, compressor)
    return Prepared(session_id, revision, session, chunks)


def prepared_ahead(todo: Sequence[tuple[str, str]], read: Reader, stop: threading.Event | None) -> Iterator[Prepared]:
    """Read and chunk the sessions of ``todo`` on a helper thread, ``READ_AHEAD`` ahead of the caller."""
    if len(todo) <= 1:
        compressor = zstandard.ZstdCompressor(level=3)
        for session_id, revision in todo:
            if stop is not None and stop.is_set():
                return
            yield prepare_session(session_id, revision, read, compressor)
        return
    local = threading.local()

    def prepare(session_id: str, revision: str) -> Prepared:
        if not hasattr(local, "compressor"):
            local.compressor = zstandard.ZstdCompressor(level=3)
        return prepare_session(session_id, revision, read, local.compressor)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-read") as helper:
        pending: collections.deque[Future[Prepared]] = collections.deque()
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
