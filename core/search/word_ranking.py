"""Reading the index for a ranked search: which sessions hold the query's words and how well
(BM25 from the postings, every shard together), and each session's best-matching messages.

A session's best messages are scored from its stored chunks (``message_scores``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from core.abort import AbortSignal
from core.search.index_chunks import trigram_query
from core.search.message_scores import best_messages, counted_starts
from core.search.ranking import K1, B, FoundWords, Passage, RankedWords, TermStats
from core.search.search_query import SearchQuery, typed_stem
from core.search.shard import Shard

COMMON_TERM = 2000
"""A word held by more sessions than this (and a quarter of them) is read only for the sessions the
query's rarer words found, when they found at most this many."""
WHOLE_SESSION_WORDS = 50_000
"""A session holding at most this many indexed words (a few hundred KB of text) is read whole for
its best messages; a longer one chunk by chunk, as the FTS table narrows it."""
RARE_SHARE = 0.1
"""A word held by at most this share of sessions is rare: a session's best message is looked for in
the chunks holding its rare words first."""
QUICK_EXPANSIONS = 3
"""What the word being typed may become, in a keystroke's first answer (the full answer follows)."""
QUICK_POSTINGS = 1000
"""Sessions a word is read for at most in a keystroke's first answer, the newest first."""
LOOKUPS_PER_ROW = 8
"""A session's posting looked up by its key costs about this many postings read in a row: a word
most sessions hold is read whole when it is wanted for many of them."""
EXPANSIONS = 8
"""Indexed words a word being typed is taken to mean at most (the most widespread)."""
EXPAND_SCAN = 5_000
"""Postings read (in word order) to choose them."""


class WordRanking:
    """The ranked reads of an index's shards (see the module docstring).

    Args:
        shards: the index's shards.
        shard_of: the shard holding a session.
    """

    def __init__(self, shards: Sequence[Shard], shard_of: Callable[[str], Shard]) -> None:
        self.shards = shards
        self.shard_of = shard_of

    def rank(self, query: SearchQuery, *, quick: bool = False, signal: AbortSignal | None = None) -> RankedWords:
        """Every indexed session holding a word of ``query``, with its BM25 score (see ``ranking``).

        Raises:
            IndexUnavailable: the index cannot be read (or ``interrupt`` stopped the search).
        """
        sizes = [shard.reads.sizes() for shard in self.shards]
        total = sum(count for count, _ in sizes)
        average = sum(length for _, length in sizes) / total if total else 0.0
        prefix_terms = self._expand(query.prefix, QUICK_EXPANSIONS if quick else EXPANSIONS) if query.prefix else []
        wanted = list(dict.fromkeys((*query.terms, *prefix_terms)))
        df: dict[str, int] = {}
        for shard in self.shards:
            for word, count in shard.reads.sessions_with(wanted).items():
                df[word] = df.get(word, 0) + count
        stats = TermStats(total, average, df)
        sums = [_Sums(shard, average) for shard in self.shards]
        for term in sorted((term for term in query.terms if df.get(term)), key=lambda term: df[term]):
            if signal is not None:
                signal.throw_if_aborted()  # a newer keystroke: stop between words
            self._add(term, df[term], total, stats.weight(term), sums, quick, best=False)
        for term in prefix_terms:
            if signal is not None:
                signal.throw_if_aborted()
            self._add(term, df.get(term, 0), total, stats.weight(term), sums, quick, best=True)
        return RankedWords(tuple(shard_sums.found_words() for shard_sums in sums), stats, tuple(prefix_terms))

    def _expand(self, prefix: str, expansions: int) -> list[str]:
        """The indexed words the word being typed may become: the most widespread first."""
        found: dict[str, int] = {}
        for shard in self.shards:
            for word, count in shard.reads.words_from(prefix, 4 * expansions, EXPAND_SCAN).items():
                found[word] = found.get(word, 0) + count
        chosen = sorted(found, key=lambda word: -found[word])[:expansions]
        stemmed = typed_stem(prefix)
        if stemmed is not None and stemmed not in chosen:
            chosen.append(stemmed)  # the word may be complete ("corrupting" -> "corrupt")
        return chosen

    def _add(
        self, term: str, df: int, total: int, weight: float, sums: Sequence[_Sums], quick: bool, *, best: bool
    ) -> None:
        """Add ``term``'s BM25 to the sessions holding it (``best``: a reading of the word being
        typed, of which each session keeps its best)."""
        # A word most sessions hold adds little: once rarer words have chosen the sessions, read it
        # only for those (what makes "how do we avoid ... logs" cost the rare words' lookups).
        # When it is the rarest word there is (every word of the query is common), the newest
        # sessions holding it are read: its weight is next to nothing, recency breaks such ties.
        found = sum(shard_sums.found() for shard_sums in sums)
        common = df > max(COMMON_TERM, total // 4)
        restrict = common and 0 < found <= COMMON_TERM
        newest = COMMON_TERM // len(self.shards) if common and not restrict else None
        if quick and not restrict and df > QUICK_POSTINGS:
            newest = QUICK_POSTINGS // len(self.shards)  # a keystroke's first answer: the newest
        for shard_sums in sums:
            shard_sums.add(term, weight, restrict=restrict, newest=newest, best=best, held=df / len(self.shards))

    def passages(self, session_id: str, query: SearchQuery, ranked: RankedWords, count: int) -> list[Passage]:
        """The ``count`` messages of ``session_id`` that match ``query`` best, best first.

        Raises:
            IndexUnavailable: the index cannot be read.
        """
        reads = self.shard_of(session_id).reads
        if reads.words_of(session_id) <= WHOLE_SESSION_WORDS:
            # A session of ordinary size is read whole: cheaper than asking the FTS table which
            # of its few chunks may hold the words.
            return best_messages(
                reads.session_chunks(session_id, None), query, ranked.stats, ranked.prefix_terms, count
            )
        # A long one: the chunks holding the query's rarer words first (a message that matches best
        # holds them, and a word most sessions say would make every chunk a candidate).
        df, total = ranked.stats.df, max(ranked.stats.total, 1)
        rare = [term for term in query.terms if df.get(term, 0) <= total * RARE_SHARE]
        common = [term for term in query.terms if term not in rare]
        typed = (*ranked.prefix_terms, *((query.prefix,) if query.prefix else ()))
        for words, needles in (((*rare, *typed), query.needles), (common, ())):
            if not words and not needles:
                continue
            # A word is looked for by its start (a stem need not be in the text: "retry" -> "retri").
            starts = counted_starts(words)
            grams = _any_of([*starts, *needles]) if starts is not None else None
            chunks = reads.session_chunks(session_id, grams)
            found = best_messages(chunks, query, ranked.stats, ranked.prefix_terms, count)
            if found or grams is None:
                return found
        return []


def _any_of(needles: Sequence[str]) -> str | None:
    """The FTS query for chunks that may hold any of ``needles``; ``None`` when one cannot be
    pre-filtered (every chunk may hold it)."""
    grams: list[str] = []
    for needle in needles:
        gram = trigram_query(needle)
        if gram is None:
            return None
        grams.append(f"({gram})")
    return " OR ".join(grams)


class _Sums:
    """One shard's running BM25 sums for a ranked search, by session key (numpy arrays: a common
    word's thousands of postings are scored at once)."""

    def __init__(self, shard: Shard, average: float) -> None:
        import numpy as np

        self.reads = shard.reads
        self.ids, self.version, self.lengths = self.reads.length_array()
        self.average = average
        self.scores = np.zeros(len(self.lengths))
        self.covered = np.zeros(len(self.lengths), np.int32)
        self.best: Any = None

    def found(self) -> int:
        """How many sessions of the shard hold one of the query's whole words so far."""
        return int(self.covered.astype(bool).sum())  # (the word being typed is added last)

    def add(self, term: str, weight: float, *, restrict: bool, newest: int | None, best: bool, held: float) -> None:
        """Add ``term``'s BM25 to the shard's sessions holding it (``restrict``: only to those holding
        an earlier word; ``held``: about how many of the shard's sessions hold it)."""
        import numpy as np

        among = np.flatnonzero(self.covered) if restrict else None
        if among is not None and not len(among):
            return
        span = None
        if among is not None:
            # The postings between the first and the last key wanted (a word's postings are kept in
            # key order), as many as that share of the shard's sessions, read in a row and the others
            # dropped, when cheaper than looking each one up (the newest sessions an earlier common
            # word chose are a short run of keys).
            low, high = int(among[0]), int(among[-1])
            if len(among) * LOOKUPS_PER_ROW >= held * (high - low + 1) / max(len(self.lengths), 1):
                among, span = None, (low, high)
        keys, counts = self.reads.posting_arrays(term, among, newest=newest, span=span)
        inside = keys < len(self.lengths)  # (a session indexed since the search began is left out)
        if restrict:
            inside[inside] = self.covered[keys[inside]] > 0
        keys, counts = keys[inside], counts[inside]
        norm = 1.0 - B + B * (self.lengths[keys] / self.average if self.average > 0 else 1.0)
        scores = weight * counts * (K1 + 1.0) / (counts + K1 * norm)
        if best:
            if self.best is None:
                self.best = np.zeros(len(self.lengths))
            self.best[keys] = np.maximum(self.best[keys], scores)
        else:
            self.scores[keys] += scores
            self.covered[keys] += 1

    def found_words(self) -> FoundWords:
        """The shard's sessions holding a word of the query, their scores and words held."""
        import numpy as np

        totals, held = self.scores, self.covered
        if self.best is not None:
            totals = totals + self.best
            held = held + (self.best > 0)
        keys = np.flatnonzero(held)
        return FoundWords(self.ids, self.version, keys, totals[keys], held[keys])
