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
import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from core.search.matching import Snippet, marked_snippet
from core.search.search_query import SearchQuery
from core.search.words import MAX_WORD, fold_text, stem, term_counts, word_spans
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
class RankedWords:
    """What a word search of an index found: session id -> BM25 score, the statistics it used, and
    the indexed words the word being typed was taken to mean."""

    scores: dict[str, float]
    stats: TermStats
    prefix_terms: tuple[str, ...] = ()
    covered: dict[str, int] = field(default_factory=dict)
    """Session id -> how many of the query's words it holds (the word being typed counts once)."""

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


Message = tuple[int, str, str]
"""A message of a session as search reads it: its position (as ``read_session`` counts), role, text."""


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


def best_messages(
    messages: Iterable[Message],
    query: SearchQuery,
    stats: TermStats,
    prefix_terms: Sequence[str] = (),
    count: int = PASSAGES,
) -> list[Passage]:
    """The ``count`` messages that match ``query`` best, best first (newest among equals)."""
    terms = set(query.terms)
    prefixed = set(prefix_terms)
    wanted = terms | prefixed
    counter = _TermCounter(wanted)
    needle_score = LITERAL_WEIGHT * idf(1, max(stats.total, 1))
    weights = {term: stats.weight(term) for term in wanted}
    asked = len(terms) + (1 if prefixed else 0)
    # A cheap upper bound first (which words' first letters a message holds), then the exact score
    # of the most promising messages only, until no other can beat the ones kept.
    quick = {term: term[:4] for term in terms}
    typed = [term[:4] for term in prefixed] + ([query.prefix[:4]] if query.prefix else [])
    typed_weight = max((weights[term] for term in prefixed), default=0.0) * (K1 + 1.0)
    promising: list[tuple[float, int, str, str, str]] = []
    for position, role, text in messages:
        folded = fold_text(text)
        present = [term for term, start in quick.items() if start in folded]
        typed_here = bool(typed) and any(start in folded for start in typed)
        needles = sum(1 for needle in query.needles if needle in folded) if query.needles else 0
        held = len(present) + (1 if typed_here else 0)
        if not held and not needles:
            continue
        # A word occurs at most as often as its first letters do: its score with that count is a
        # bound on its real one (the same length measure as the exact count's).
        length = folded.count(" ") + 1
        bound = sum(
            term_score(weights[term], folded.count(quick[term]), length, MESSAGE_WORDS, MESSAGE_B) for term in present
        ) + (typed_weight if typed_here else 0.0)
        if asked and MESSAGE_COVERAGE_POWER:
            bound *= (held / asked) ** MESSAGE_COVERAGE_POWER
        promising.append((bound + needle_score * needles, position, role, text, folded))
    promising.sort(key=lambda item: (item[0], item[1]), reverse=True)
    kept: list[tuple[float, int, Passage]] = []  # a heap of the best ``count``
    for bound, position, role, text, folded in promising:
        if len(kept) >= count and bound < kept[0][0]:
            break
        score = _message_score(counter.count(folded), terms, prefixed, weights, asked)
        if query.needles:
            lowered = text.lower()
            score += needle_score * sum(1 for needle in query.needles if needle in lowered)
        if score <= 0:
            continue
        entry = (score, position, Passage(score, position, role, text))
        if len(kept) < count:
            heapq.heappush(kept, entry)
        elif (score, position) > kept[0][:2]:
            heapq.heapreplace(kept, entry)
    return [passage for _score, _position, passage in sorted(kept, reverse=True)]


def _message_score(
    counted: tuple[Counter[str], int], terms: set[str], prefixed: set[str], weights: dict[str, float], asked: int
) -> float:
    """A message's BM25 over the query's words, scaled by the share of them it holds."""
    counts, length = counted
    score = 0.0
    held = 0
    for term in terms:
        found = counts.get(term, 0)
        if found:
            held += 1
            score += term_score(weights[term], found, length, MESSAGE_WORDS, MESSAGE_B)
    if prefixed:
        best = max(
            term_score(weights[term], counts.get(term, 0), length, MESSAGE_WORDS, MESSAGE_B) for term in prefixed
        )
        if best:
            held += 1
            score += best
    if asked and MESSAGE_COVERAGE_POWER:
        score *= (held / asked) ** MESSAGE_COVERAGE_POWER
    return score


class _TermCounter:
    """Counts the wanted terms in a message without splitting all of it into words: only the words
    that start as a wanted stem does are stemmed."""

    def __init__(self, wanted: set[str]) -> None:
        self.wanted = wanted
        plain = sorted({term[:3] for term in wanted if term.isascii() and term.isalnum()}, key=len, reverse=True)
        self.pattern = (
            re.compile(r"(?<![a-z0-9])(?:" + "|".join(map(re.escape, plain)) + r")[a-z0-9]*") if plain else None
        )
        self.others = any(not (term.isascii() and term.isalnum()) for term in wanted)

    def count(self, folded: str) -> tuple[Counter[str], int]:
        """Wanted term -> occurrences in ``folded``, and the message's length in words (about)."""
        length = folded.count(" ") + 1
        if self.others:
            counts = term_counts(folded)
            return Counter({term: counts[term] for term in self.wanted if term in counts}), length
        counts = Counter()
        if self.pattern is not None:
            for word in self.pattern.findall(folded):
                if len(word) <= MAX_WORD:
                    found = stem(word)
                    if found in self.wanted:
                        counts[found] += 1
        return counts, length


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
