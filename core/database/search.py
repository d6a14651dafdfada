"""Message search in the database: the projected conversation of every session in
``sessionref.sessionref_messages``, kept by the append's own transaction, searched with a ``pg_trgm`` index.

What is kept is what a reference would send (CONTRACT §5 projection: prompts, answers, compaction
summaries; never tool output or baked snapshots), one row per projected message, its text as is
and case-folded as the picker folds (``matching.fold``). A needle matches where ``LIKE`` finds it
in the folded text (the trigram index makes that fast, CJK and substrings included); the snippet is
made from the stored text, exactly as the SQLite index makes it. Row-level security decides what a
role may find: a session it may not see never yields a row, a count or a snippet.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from core.abort import AbortSignal
from core.database.connect import connect
from core.database.errors import server_words
from core.database.meaning import PgMeaning
from core.reference.projection import project_conversation
from core.search.finder import QUICK_BUDGET
from core.search.index_values import INDEX_FAILED, IndexStatus
from core.search.matching import Snippet, fold, make_snippet
from core.search.meaning import Embedder
from core.search.ranking import MESSAGE_COVERAGE_POWER, PASSAGES, FoundWords, Passage, RankedWords, TermStats
from core.search.search_query import SearchQuery
from core.sessions.models import SurfaceSnapshot

DENSE_MESSAGES = 4096
"""Above this many matching messages a query is "dense": the finder scans sessions in listing order."""
QUERY_TIMEOUT_MS = 3000
"""The longest a search query may run (a pathological needle must not hold the picker's thread)."""
KEYSTROKE_LOOKUP_MS = 25
"""The longest a keystroke's candidate lookup may run before the needle is treated as dense."""
BODY_CHARS = 65_536
"""A message is read whole for its snippet up to this long; a longer one (a teammate can write any
row) only around its last match, so a search never pulls megabytes per hit."""
_BODY = (
    f"CASE WHEN char_length(body) <= {BODY_CHARS} THEN body ELSE substr(body, greatest(1, char_length(folded) "
    "- strpos(reverse(folded), reverse(%(needle)s)) - char_length(%(needle)s) - 1998), "
    "4000 + char_length(%(needle)s)) END"
)
RANKED_MESSAGES = 5000
"""The best matching messages a ranked search reads at most (a word most messages hold must not
pull the whole table)."""
QUICK_MESSAGES = 300
"""The matching messages a keystroke's first ranked answer reads at most, the newest (``rank``)."""
KEYSTROKE_RANK_MS = 25
"""The longest a keystroke's ranked query may run."""

Message = tuple[str, str]
"""One searchable message: its role (``user``, ``assistant``, ``summary``) and its text."""


def searchable(snapshot: SurfaceSnapshot) -> list[Message]:
    """What search keeps of a session: its projected conversation."""
    return [("summary" if item.checkpoint else item.role, item.text) for item in project_conversation(snapshot)]


def storable(text: str) -> str:
    """``text`` as PostgreSQL text can hold it: NUL and lone surrogates (a hostile log) become
    U+FFFD. No picker query can contain either, so no match is lost."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)
    return text


@dataclass(frozen=True, slots=True)
class SearchDelta:
    """What one batch changes in a session's searchable messages: the first ``keep`` stay, those
    after are replaced by ``added`` (positions ``keep``, ``keep + 1``...)."""

    keep: int
    added: list[Message]


def search_delta(previous: Sequence[Message] | None, current: list[Message]) -> SearchDelta | None:
    """The change from ``previous`` (what the database holds; ``None``: unknown) to ``current``,
    or ``None`` when there is none. An append adds at the end; anything else (a compaction's
    replacement) rewrites the session's messages."""
    if previous is None:
        return SearchDelta(0, current)
    keep = len(previous) if len(previous) <= len(current) and list(current[: len(previous)]) == list(previous) else 0
    if keep == len(previous) == len(current):
        return None
    return SearchDelta(keep, current[keep:])


def write_search_delta(connection: psycopg.Connection[Any], session_id: str, delta: SearchDelta) -> None:
    """Apply ``delta`` inside the caller's transaction."""
    connection.execute(
        "DELETE FROM sessionref.sessionref_messages WHERE session_id = %s AND position >= %s", (session_id, delta.keep)
    )
    if delta.added:
        connection.execute(
            "INSERT INTO sessionref.sessionref_messages (session_id, position, role, body, folded) "
            "SELECT %s, %s + ordinality - 1, role, body, folded "
            "FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS t(role, body, folded, ordinality)",
            (
                session_id,
                delta.keep,
                [role for role, _ in delta.added],
                [storable(text) for _, text in delta.added],
                [storable(fold(text)) for _, text in delta.added],
            ),
        )


def like_pattern(needle: str) -> str:
    """The ``LIKE`` pattern for text containing ``needle`` (``%``, ``_`` and ``\\`` taken literally)."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class PgMessageIndex:
    """The ``MessageIndex`` of a PostgreSQL store (see the module docstring): always complete,
    since every append keeps it current. One connection of its own, so a newer keystroke can
    cancel the query of an older one (``interrupt``)."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self.meaning: PgMeaning | None = None
        """The messages' vectors, for search by meaning (``use_meaning``; ``None``: words only)."""
        self._connection: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self._first: dict[str, tuple[int, str, str]] = {}
        """Session id -> its newest matching message (position, role, text), from the last ``candidates``."""
        self._needle = ""
        self._failure: str | None = None
        self._timeout: int | None = None
        self._passages: tuple[SearchQuery, dict[str, list[Passage]]] | None = None
        """The last ranked query and the best messages of each session it found."""

    @property
    def status(self) -> IndexStatus:
        if self._failure is not None:
            return IndexStatus("failed", code=INDEX_FAILED, message=self._failure)
        return IndexStatus("ready")

    def _query(
        self, statement: str, parameters: dict[str, Any], timeout_ms: int = QUERY_TIMEOUT_MS
    ) -> list[tuple[Any, ...]] | None:
        """The rows, or ``None`` when the query was cancelled (too slow, or a newer keystroke)."""
        with self._lock:
            try:
                if self._connection is None or self._connection.closed or self._connection.broken:
                    self._connection = connect(self._conninfo, autocommit=True, connect_timeout=5)
                    # A plan for each query's own words: a plan made once for any words would walk
                    # a rare word's sessions one by one, or rank every message of a common one. And
                    # no JIT: compiling a costly plan takes a third of a second, which no timeout stops.
                    self._connection.execute("SET plan_cache_mode = force_custom_plan")
                    self._connection.execute("SET jit = off")
                    self._timeout = None
                if timeout_ms != self._timeout:
                    self._connection.execute(f"SET statement_timeout = {int(timeout_ms)}")
                    self._timeout = timeout_ms
                rows = self._connection.execute(statement, parameters).fetchall()
            except psycopg.errors.QueryCanceled:
                return None
            except psycopg.Error as error:
                self._failure = f"message search failed ({server_words(error)})"
                return []
        self._failure = None
        return rows

    def candidates(
        self, needle: str, cap: int | None = None, budget: float | None = None
    ) -> dict[str, list[int]] | None:
        limit = DENSE_MESSAGES if cap is None else cap
        if "\x00" in needle:
            return {}
        if budget is not None and budget <= 0:
            return None  # what ran before used the search's time up: no lookup can answer in time
        # Matching messages, not sessions: the query stops after ``limit`` rows, so a common needle
        # (most sessions match) costs the first rows only and is answered as "dense". A keystroke's
        # search (a small budget) gives the lookup KEYSTROKE_LOOKUP_MS: a needle whose trigrams are
        # too common to look up that fast is answered as dense too, and scanned in listing order.
        quick = budget is not None and budget < QUICK_BUDGET
        folded = storable(fold(needle))
        rows = self._query(
            f"SELECT session_id, position, role, {_BODY} FROM sessionref.sessionref_messages "
            "WHERE folded LIKE %(pattern)s LIMIT %(limit)s",
            {"needle": folded, "pattern": like_pattern(storable(needle)), "limit": limit + 1},
            timeout_ms=KEYSTROKE_LOOKUP_MS if quick else QUERY_TIMEOUT_MS,
        )
        if rows is None or len(rows) > limit:
            return None
        newest: dict[str, tuple[int, str, str]] = {}
        for session_id, position, role, body in rows:
            known = newest.get(session_id)
            if known is None or position > known[0]:
                newest[session_id] = (int(position), role, body)
        self._needle, self._first = needle, newest
        return {session_id: [found[0]] for session_id, found in newest.items()}

    def verify(self, session_id: str, places: Sequence[int], needle: str) -> Snippet | None:
        first = self._first.get(session_id) if needle == self._needle else None
        if first is not None and first[0] in places:
            return make_snippet(first[2], needle, first[1], first[0])
        return self.scan(session_id, needle)

    def scan(self, session_id: str, needle: str) -> Snippet | None:
        if "\x00" in needle or "\x00" in session_id:
            return None
        rows = self._query(
            f"SELECT position, role, {_BODY} FROM sessionref.sessionref_messages WHERE session_id = %(session)s "
            "AND folded LIKE %(pattern)s ORDER BY position DESC LIMIT 1",
            {"needle": storable(fold(needle)), "session": session_id, "pattern": like_pattern(storable(needle))},
        )
        if not rows:
            return None
        return make_snippet(rows[0][2], needle, rows[0][1], rows[0][0])

    def rank(self, query: SearchQuery, *, quick: bool = False, signal: AbortSignal | None = None) -> RankedWords:
        """Every session the role may see holding a word of ``query``, scored with PostgreSQL's own
        full text (``ts_rank_cd`` of each message's ``tsvector``, English Snowball stems, the same
        stems the folder store's index keeps), and its best messages kept for ``passages``.

        A session's score is the sum of its matching messages' ranks; each message's own score is
        its rank scaled by the share of the query's words it holds (as the folder store's best
        messages are). The ``RANKED_MESSAGES`` best matching messages are read at most.

        ``quick`` (a keystroke's first answer; the full one follows when typing pauses) reads the
        ``QUICK_MESSAGES`` newest matching messages instead, those of the sessions changed last, as
        the folder store's quick answer reads a common word's newest sessions: a word most
        messages hold is found by walking the sessions newest first (``sessionref_sessions_revision``)
        rather than by ranking every message that holds it, and a rare one straight from its index,
        as the planner judges from the words' statistics. It gets ``KEYSTROKE_RANK_MS``; past that
        (a short prefix that many words start with) the first answer has no hits by words.
        """
        terms = [term for term in query.terms if "\x00" not in term]
        prefix = query.prefix if query.prefix and "\x00" not in query.prefix else None
        operands = [_operand(term) for term in terms] + ([_operand(prefix) + ":*"] if prefix else [])
        if not operands:
            return RankedWords((), TermStats(0, 0.0, {}))
        rows = self._query(
            _ranked_statement(quick=quick, prefix=prefix is not None),
            {
                "query": " | ".join(operands),
                "terms": [storable(term) for term in terms],
                "typed": (_operand(prefix) + ":*") if prefix else "",
                "limit": QUICK_MESSAGES if quick else RANKED_MESSAGES,
            },
            timeout_ms=KEYSTROKE_RANK_MS if quick else QUERY_TIMEOUT_MS,
        )
        asked = len(terms) + (1 if prefix else 0)
        scores: dict[str, float] = {}
        held_by: dict[str, set[str]] = {}
        best: dict[str, list[Passage]] = {}
        for session_id, position, role, body, rank, held, typed in rows or []:
            scores[session_id] = scores.get(session_id, 0.0) + float(rank)
            words = set(held) | ({"\x00typed"} if typed else set())
            held_by.setdefault(session_id, set()).update(words)
            share = len(words) / asked if asked else 1.0
            score = float(rank) * share**MESSAGE_COVERAGE_POWER
            best.setdefault(session_id, []).append(Passage(score, int(position), role, body))
        for passages in best.values():
            passages.sort(key=lambda passage: (passage.score, passage.message), reverse=True)
            del passages[PASSAGES:]
        self._passages = (query, best)
        covered = {session_id: len(words) for session_id, words in held_by.items()}
        return RankedWords((FoundWords.of(scores, covered),), TermStats(len(scores), 0.0, {}))

    def passages(self, session_id: str, query: SearchQuery, ranked: RankedWords, count: int) -> list[Passage]:
        """The best messages of one session the last ``rank`` of ``query`` read."""
        kept = self._passages
        if kept is None or kept[0] != query:
            self.rank(query)
            kept = self._passages
        assert kept is not None
        return kept[1].get(session_id, [])[:count]

    def interrupt(self) -> None:
        connection = self._connection
        if connection is not None and not connection.closed:
            connection.cancel_safe(timeout=1.0)

    def use_meaning(self, embedder: Embedder | None) -> None:
        """Search by meaning too, with ``embedder`` (``None``: words only); the host calls
        ``meaning.start()`` when sessions may have changed, to embed what this role owns."""
        if self.meaning is not None:
            self.meaning.close()
        self.meaning = PgMeaning(self._conninfo, embedder) if embedder is not None else None

    def close(self) -> None:
        if self.meaning is not None:
            self.meaning.close()
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


_TSQUERY = "pg_catalog.to_tsquery('pg_catalog.simple'::regconfig, {})"


def _ranked_statement(*, quick: bool, prefix: bool) -> str:
    """``rank``'s query: each matching message with its rank, the query's terms it holds and
    whether it holds the word being typed. The query is written out where it is used (not in a
    ``WITH``), so the planner sees the words and, from their statistics, how many messages hold them."""
    query = _TSQUERY.format("%(query)s")
    typed = f"h.words @@ {_TSQUERY.format('%(typed)s')}" if prefix else "false"
    held = _TSQUERY.format("pg_catalog.quote_literal(t)")
    columns = (
        f"SELECT h.session_id, h.position, h.role, h.body, pg_catalog.ts_rank_cd(h.words, {query}, 32) AS rank, "
        f"ARRAY(SELECT t FROM pg_catalog.unnest(%(terms)s::text[]) t WHERE h.words @@ {held}) AS held, "
        f"{typed} AS typed FROM "
    )
    if quick:
        return columns + (
            "(SELECT m.session_id, m.position, m.role, m.body, m.words FROM sessionref.sessionref_messages m "
            f"JOIN sessionref.sessionref_sessions s ON s.id = m.session_id WHERE m.words @@ {query} "
            "ORDER BY s.revision DESC, m.position DESC LIMIT %(limit)s) h"
        )
    return columns + f"sessionref.sessionref_messages h WHERE h.words @@ {query} ORDER BY rank DESC LIMIT %(limit)s"


def _operand(word: str) -> str:
    """``word`` as one quoted ``tsquery`` operand (its quotes and backslashes escaped)."""
    return "'" + storable(word).replace("\\", "\\\\").replace("'", "''") + "'"
