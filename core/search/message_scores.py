"""Which messages of a session match a ranked query best: each message's BM25 over the query's
words (against a fixed message length, ``ranking.MESSAGE_WORDS``), scaled by the share of the words
it holds. What a result shows, what re-ranks the best sessions, and where ``read_session`` goes next.

A session is read as its stored chunks (runs of messages joined by ``\\n``). A chunk is folded and
searched once, not message by message: one pass finds every word that starts as a wanted stem does,
and each is counted in the message it lies in. Only the messages holding a word are scored.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from core.search.index_chunks import ROLES, Chunk, message_text, message_texts
from core.search.ranking import (
    K1,
    LITERAL_WEIGHT,
    MESSAGE_B,
    MESSAGE_COVERAGE_POWER,
    MESSAGE_WORDS,
    PASSAGES,
    Passage,
    TermStats,
    idf,
    term_score,
)
from core.search.search_query import SearchQuery
from core.search.words import MAX_WORD, fold_text, stem, term_counts

Counted = dict[int, Counter[str]]
"""Message index in its chunk -> how often it says each wanted term."""


RARE_WEIGHT = 0.5
"""A query word weighing at least this share of its heaviest word's weight is looked for first."""


def best_messages(
    chunks: Iterable[Chunk],
    query: SearchQuery,
    stats: TermStats,
    prefix_terms: Sequence[str] = (),
    count: int = PASSAGES,
) -> list[Passage]:
    """The ``count`` messages of ``chunks`` that match ``query`` best, best first (newest among equals).

    The messages holding the query's heavier words are scored first. When the best of them score
    more than any message without those words could (a word's BM25 saturates at its weight times
    ``K1 + 1``), the others are never counted: the same result, without stemming every mention of
    a word most messages say.
    """
    scoring = _Scoring(query, stats, prefix_terms, count)
    read = [_Read(chunk, *_folded(chunk), query.needles) for chunk in chunks]
    heavy = scoring.heavy()
    if heavy is None:
        return scoring.passages(scoring.best(read, [scoring.counter.count(one.folded, one.starts) for one in read]))
    wanted, bound = heavy
    heavier, lighter = _TermCounter(wanted), _TermCounter(scoring.counter.wanted - wanted)
    counted = [heavier.count(one.folded, one.starts) for one in read]
    # The messages holding a heavier word (or an identifier), their lighter words counted too.
    first = []
    for one, found in zip(read, counted, strict=True):
        among = found.keys() | one.holding
        first.append(_merged(dict(found), lighter.count(one.folded, one.starts, among)))
    best = scoring.best(read, first)
    if len(best) >= count and best[0][0] > bound:
        return scoring.passages(best)
    # Another message may still win: the lighter words counted everywhere (the heavier ones were).
    every = [_merged(found, lighter.count(one.folded, one.starts)) for one, found in zip(read, counted, strict=True)]
    return scoring.passages(scoring.best(read, every))


def counted_starts(words: Iterable[str]) -> list[str] | None:
    """What scoring looks for in a text to count ``words`` (indexed terms): the start each of their
    words begins with; ``None`` when one is not found by its start (CJK pairs, ...)."""
    counter = _TermCounter(set(words))
    return None if counter.others else list(counter.starts)


@dataclass(slots=True)
class _Read:
    """A chunk as scoring reads it: folded, where each message starts, the messages holding an
    identifier of the query."""

    chunk: Chunk
    folded: str
    starts: Sequence[int]
    holding: set[int]

    def __init__(self, chunk: Chunk, folded: str, starts: Sequence[int], needles: Sequence[str]) -> None:
        self.chunk, self.folded, self.starts = chunk, folded, starts
        self.holding = _holding(folded, starts, needles) if needles else set()


def _merged(into: Counted, more: Counted) -> Counted:
    """``into`` with ``more``'s counts added (``into`` is changed)."""
    for index, counts in more.items():
        if index in into:
            into[index] = into[index] + counts
        else:
            into[index] = counts
    return into


class _Scoring:
    """What scoring a session's messages for one query needs: the words' weights and counters."""

    def __init__(self, query: SearchQuery, stats: TermStats, prefix_terms: Sequence[str], count: int) -> None:
        self.query, self.count = query, count
        self.terms = set(query.terms)
        self.prefixed = set(prefix_terms)
        self.counter = _TermCounter(self.terms | self.prefixed)
        self.weights = {term: stats.weight(term) for term in self.terms | self.prefixed}
        self.asked = len(self.terms) + (1 if self.prefixed else 0)
        self.needle_score = LITERAL_WEIGHT * idf(1, max(stats.total, 1))

    def heavy(self) -> tuple[set[str], float] | None:
        """The heavier words, and the best score a message holding none of them (nor an
        identifier) can have; ``None`` when every word is about as heavy."""
        slots = [(self.weights[term], {term}) for term in self.terms]
        if self.prefixed:  # (the word being typed counts once, as its heaviest reading)
            slots.append((max(self.weights[term] for term in self.prefixed), self.prefixed))
        if not slots:
            return None
        top = max(weight for weight, _words in slots)
        light = [weight for weight, _words in slots if weight < RARE_WEIGHT * top]
        if not light:
            return None
        wanted = {word for weight, words in slots if weight >= RARE_WEIGHT * top for word in words}
        bound = sum(weight * (K1 + 1.0) for weight in light)
        if self.asked and MESSAGE_COVERAGE_POWER:
            bound *= (len(light) / self.asked) ** MESSAGE_COVERAGE_POWER
        return wanted, bound

    def best(self, read: Sequence[_Read], counted: Sequence[Counted]) -> list[Scored]:
        """The best ``count`` messages as a heap, of those counted (or holding an identifier)."""
        query, count = self.query, self.count
        best: list[Scored] = []
        for one, found in zip(read, counted, strict=True):
            chunk, folded, starts, holding = one.chunk, one.folded, one.starts, one.holding
            if not found and not holding:
                continue
            for index in sorted(found.keys() | holding):
                end = starts[index + 1] - 1 if index + 1 < len(starts) else len(folded)
                length = folded.count(" ", starts[index], end) + 1
                score = _score(found.get(index), length, self.terms, self.prefixed, self.weights, self.asked)
                if index in holding:
                    lowered = message_text(chunk.text, chunk.starts, index).lower()
                    score += self.needle_score * sum(1 for needle in query.needles if needle in lowered)
                if score <= 0:
                    continue
                position = chunk.first_message + index
                if len(best) >= count and (score, position) <= best[0][:2]:
                    continue
                role = ROLES.get(chunk.roles[index : index + 1], "user")
                text = message_text(chunk.text, chunk.starts, index)
                entry = (score, position, Passage(score, position, role, text))
                if len(best) < count:
                    heapq.heappush(best, entry)
                else:
                    heapq.heapreplace(best, entry)
        return best

    @staticmethod
    def passages(best: list[Scored]) -> list[Passage]:
        return [passage for _score, _position, passage in sorted(best, reverse=True)]


Scored = tuple[float, int, Passage]


def _folded(chunk: Chunk) -> tuple[str, Sequence[int]]:
    """The chunk's text folded, and where each message starts in it."""
    if chunk.text.isascii():
        return chunk.text.lower(), chunk.starts
    # Folding may change lengths (ligatures, decomposed letters): message by message (most of
    # them are ASCII, only lower-cased), each one's start counted again.
    pieces = [fold_text(text) for text in message_texts(chunk.text, chunk.starts)]
    starts: list[int] = []
    offset = 0
    for piece in pieces:
        starts.append(offset)
        offset += len(piece) + 1
    return "\n".join(pieces), starts


def _holding(folded: str, starts: Sequence[int], needles: Sequence[str]) -> set[int]:
    """The messages (by index in the chunk) in which one of ``needles`` occurs."""
    holding: set[int] = set()
    for needle in needles:
        at = folded.find(needle)
        while at >= 0:
            index = bisect.bisect_right(starts, at) - 1
            end = starts[index + 1] - 1 if index + 1 < len(starts) else len(folded)
            if at + len(needle) <= end:
                holding.add(index)
                if index + 1 >= len(starts):
                    break
                at = folded.find(needle, starts[index + 1])  # (this message is known to hold one)
            else:
                at = folded.find(needle, at + 1)  # it crossed into the next message
    return holding


def _score(
    counts: Counter[str] | None,
    length: int,
    terms: set[str],
    prefixed: set[str],
    weights: dict[str, float],
    asked: int,
) -> float:
    """A message's BM25 over the query's words, scaled by the share of them it holds."""
    if not counts:
        return 0.0
    score = 0.0
    held = 0
    for term in terms:
        found = counts.get(term, 0)
        if found:
            held += 1
            score += term_score(weights[term], found, length, MESSAGE_WORDS, MESSAGE_B)
    if prefixed:
        top = max(term_score(weights[term], counts.get(term, 0), length, MESSAGE_WORDS, MESSAGE_B) for term in prefixed)
        if top:
            held += 1
            score += top
    if asked and MESSAGE_COVERAGE_POWER:
        score *= (held / asked) ** MESSAGE_COVERAGE_POWER
    return score


class _TermCounter:
    """Counts the wanted terms in each message of a folded chunk, without splitting all of it into
    words: only the words that start as a wanted stem does are found (by plain substring search,
    far faster than a pattern over the whole text) and stemmed."""

    def __init__(self, wanted: set[str]) -> None:
        self.wanted = wanted
        # A word begins with its stem but for the stem's last letter ("happy" -> "happi"): the
        # longer the start looked for, the fewer other words are found and stemmed for nothing.
        starts = sorted({term[: max(3, min(len(term) - 1, 6))] for term in wanted if term.isascii() and term.isalnum()})
        # A start that begins with another is left out: the shorter one finds its words, once.
        self.starts: list[str] = []
        for start in starts:  # (sorted: a start comes after those it begins with)
            if not any(start.startswith(shorter) for shorter in self.starts):
                self.starts.append(start)
        self.others = any(not (term.isascii() and term.isalnum()) for term in wanted)

    def count(self, folded: str, starts: Sequence[int], within: Collection[int] | None = None) -> Counted:
        """Message index -> wanted term -> occurrences, for the messages holding any (of those
        ``within``, when given)."""
        found: Counted = {}
        if within is not None:
            for index in within:
                end = starts[index + 1] - 1 if index + 1 < len(starts) else len(folded)
                counted = self.count(folded[starts[index] : end], (0,))
                if counted:
                    found[index] = counted[0]
            return found
        if self.others:  # (CJK pairs and other words the quick search cannot see: every word)
            for index, text in enumerate(message_texts(folded, starts)):
                counts = term_counts(text)
                held = Counter({term: counts[term] for term in self.wanted if term in counts})
                if held:
                    found[index] = held
            return found
        wanted = self.wanted
        for start in self.starts:
            at = folded.find(start)
            while at >= 0:
                if at and folded[at - 1] in _WORD_CHARS:
                    at = folded.find(start, at + 1)  # inside a word: not one starting here
                    continue
                rest = _WORD_REST.match(folded, at + len(start))  # (always: it may match nothing)
                end = rest.end() if rest is not None else at + len(start)
                word = folded[at:end]
                if len(word) <= MAX_WORD:
                    term = stem(word)
                    if term in wanted:
                        index = bisect.bisect_right(starts, at) - 1
                        if index not in found:
                            found[index] = Counter()
                        found[index][term] += 1
                at = folded.find(start, end)
        return found


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_WORD_REST = re.compile("[a-z0-9]*")
