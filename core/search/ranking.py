"""How well a session matches a query: BM25 over its projected conversation, its title counting
more, and the messages that match best (what a result shows and ``read_session`` reads next).

BM25 (Robertson and Zaragoza's Okapi form): a term counts by how rare it is among sessions (its
inverse document frequency), how often the session says it (saturating: the tenth mention adds
little), and against the session's length (a long session is not favoured for being long). A
session holding only some of the words still scores, lower. The title is a field of its own,
scored the same way over every title and weighted ``TITLE_WEIGHT``; a query found as a whole in a
title, id or folder adds ``META_BONUS``. Ties keep listing order, newest first.

The constants were chosen on the tuning half of ``bench/retrieval.py`` only; its held-back half
says how well they carry over.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.search.matching import Snippet, marked_snippet
from core.search.search_query import SearchQuery
from core.search.words import term_counts, word_spans
from core.spans import merged_spans

K1 = 1.2
"""How fast repeated mentions of a term saturate."""
B = 0.75
"""How much a session's length discounts its counts."""
TITLE_WEIGHT = 1.5
"""A title's BM25 score counts this many times a body's."""
META_BONUS = 32.0
"""Added when the whole query is found in a title, id or folder as typed."""
LITERAL_WEIGHT = 1.5
"""An identifier found as typed counts like a rare term this many times over."""
MESSAGE_B = 0.75
"""Length normalisation between the messages of one session (a long answer is not penalised much)."""
MESSAGE_WORDS = 40.0
"""The message length at which a message's counts are taken as they are (shorter ones count a
little more, longer ones less). A fixed pivot: on the tuning half it beat the store's own average
(0.672 against 0.575 hit@1), which long pasted messages pull far from a typical one."""
PASSAGES = 3
"""Best-matching messages a result carries at most."""
PASSAGE_WEIGHT = 16.0
"""The best-matching message's own score counts this many times into its session's (words said
together in one message are a better match than the same words scattered over a session)."""
COVERAGE_POWER = 2.0
"""A session's score is scaled by the share of the query's words it holds, to this power."""
ALL_WORDS_FIRST = True
"""Whether sessions holding every word of the query come before all others (in each group)."""
MESSAGE_COVERAGE_POWER = 2.0
"""A message's score is scaled by the share of the query's words it holds, to this power."""
SNIPPETS_OF_ONE_WORD = 10
"""For a query of one word (a picker's keystroke, mostly), the sessions whose best message is read
for its snippet: no re-ranking, and a page of rows, not twenty."""
RERANKED = 20
"""Sessions, best first, whose best message is read to re-rank them."""


def idf(df: int, total: int) -> float:
    """The inverse document frequency of a term held by ``df`` of ``total`` documents (never negative)."""
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def term_score(weight: float, tf: float, length: float, average: float, b: float = B) -> float:
    """One term's BM25 contribution: ``weight`` (its idf) times the saturated, length-normalised ``tf``."""
    if tf <= 0:
        return 0.0
    norm = 1.0 - b + b * (length / average if average > 0 else 1.0)
    return weight * tf * (K1 + 1.0) / (tf + K1 * norm)


@dataclass(frozen=True, slots=True)
class TermStats:
    """What scoring needs of a corpus: how many documents, their average length, each term's df."""

    total: int
    average: float
    df: Mapping[str, int]

    def weight(self, term: str) -> float:
        return idf(self.df.get(term, 0), max(self.total, 1))


@dataclass(frozen=True, slots=True)
class FoundWords:
    """The sessions of one part of an index (a shard) holding a word of a query, as parallel arrays
    by the part's session key: their BM25 scores and how many of the query's words each holds."""

    ids: Mapping[int, str]
    """The part's session ids by key (a key missing from it was forgotten since)."""
    version: int | None
    """Changes whenever ``ids`` does (``None``: not to be kept from one search to the next)."""
    keys: Any
    scores: Any
    covered: Any

    @classmethod
    def of(cls, scores: Mapping[str, float], covered: Mapping[str, int]) -> FoundWords:
        """Scores and words held by session id, as found words (a store that ranks in its database)."""
        import numpy as np

        ids = dict(enumerate(scores))
        return cls(
            ids,
            None,
            np.arange(len(ids)),
            np.fromiter(scores.values(), np.float64, len(ids)),
            np.fromiter((covered.get(session_id, 0) for session_id in scores), np.int64, len(ids)),
        )


@dataclass(frozen=True, slots=True)
class RankedWords:
    """What a word search of an index found: the sessions holding its words (by part, see
    ``FoundWords``), the statistics it used, and the indexed words the word being typed was taken
    to mean."""

    found: tuple[FoundWords, ...]
    stats: TermStats
    prefix_terms: tuple[str, ...] = ()

    @property
    def scores(self) -> dict[str, float]:
        """Session id -> BM25 score (built on each call: a search reads ``found``)."""
        return {session_id: score for session_id, score, _held in self._rows()}

    @property
    def covered(self) -> dict[str, int]:
        """Session id -> how many of the query's words it holds (the word being typed counts once)."""
        return {session_id: held for session_id, _score, held in self._rows()}

    def _rows(self) -> Iterator[tuple[str, float, int]]:
        for part in self.found:
            for key, score, held in zip(part.keys.tolist(), part.scores.tolist(), part.covered.tolist(), strict=True):
                session_id = part.ids.get(key)
                if session_id is not None:
                    yield session_id, score, held

    def wanted(self, query: SearchQuery) -> int:
        """How many words a session holding all of ``query``'s holds."""
        return len(query.terms) + (1 if self.prefix_terms else 0)


class TitleIndex:
    """Every listed session's title as words, in memory: term -> {listing position: count}."""

    def __init__(self, labels: Sequence[str | None]) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        self.lengths: list[int] = []
        for position, label in enumerate(labels):
            counts = term_counts(label) if label else Counter()
            self.lengths.append(sum(counts.values()))
            for term, count in counts.items():
                self.postings.setdefault(term, {})[position] = count
        self.average = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        self._sorted: list[str] | None = None

    def expand(self, prefix: str, limit: int = 16) -> list[str]:
        """Terms starting with ``prefix`` (the most widespread first)."""
        if self._sorted is None:
            self._sorted = sorted(self.postings)
        at = bisect.bisect_left(self._sorted, prefix)
        found: list[str] = []
        while at < len(self._sorted) and self._sorted[at].startswith(prefix) and len(found) < 512:
            found.append(self._sorted[at])
            at += 1
        found.sort(key=lambda term: -len(self.postings[term]))
        return found[:limit]

    def _scored(self, term: str) -> Iterator[tuple[int, float]]:
        """(listing position, BM25 of ``term`` in its title) of every title holding it."""
        postings = self.postings.get(term)
        if postings:
            weight = idf(len(postings), max(len(self.lengths), 1))
            for position, count in postings.items():
                yield position, term_score(weight, count, self.lengths[position], self.average)

    def scores(self, terms: Iterable[str], prefix_terms: Sequence[str] = ()) -> dict[int, float]:
        """Listing position -> BM25 of its title for ``terms`` (and the best of ``prefix_terms``)."""
        found: dict[int, float] = {}
        for term in terms:
            for position, score in self._scored(term):
                found[position] = found.get(position, 0.0) + score
        best: dict[int, float] = {}
        for term in prefix_terms:
            for position, score in self._scored(term):
                if score > best.get(position, 0.0):
                    best[position] = score
        for position, score in best.items():
            found[position] = found.get(position, 0.0) + score
        return found


@dataclass(frozen=True, slots=True)
class Passage:
    """A message that matched a ranked search: its score (BM25 of its words, scaled by the share of
    the query's words it holds), its position as ``read_session`` counts, its role and text."""

    score: float
    message: int
    role: str
    text: str

    def snippet(self, query: SearchQuery, prefix_terms: Sequence[str] = ()) -> Snippet | None:
        """The message as a one-line snippet with every matching word marked."""
        return snippet_of(self.text, query, self.role, self.message, prefix_terms, self.score)


def _spans(text: str, terms: set[str], prefixed: set[str], query: SearchQuery) -> list[tuple[int, int]]:
    spans = word_spans(text, terms | prefixed, query.prefix)
    lowered = text.lower()
    if len(lowered) == len(text):
        for needle in query.needles:
            at = lowered.find(needle)
            while at >= 0 and len(spans) < 400:
                spans.append((at, at + len(needle)))
                at = lowered.find(needle, at + len(needle))
    return merged_spans(spans)


def snippet_of(
    text: str,
    query: SearchQuery,
    role: str,
    position: int,
    prefix_terms: Sequence[str] = (),
    score: float = 0.0,
) -> Snippet | None:
    """A marked snippet of one message for ``query`` (``None`` when nothing of it is in ``text``)."""
    spans = _spans(text, set(query.terms), set(prefix_terms), query)
    return marked_snippet(text, spans, role, position, score)
