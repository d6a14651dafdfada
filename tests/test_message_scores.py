"""A session's best messages (``message_scores``) against a plain scorer that tokenizes every
message whole: the chunk-by-chunk counting and the heavier-words-first shortcut give the same
messages and scores, for ASCII and folded text, identifiers and the word being typed."""

from __future__ import annotations

import random
from array import array

import pytest

from core.search.index_chunks import Chunk
from core.search.message_scores import best_messages
from core.search.ranking import (
    LITERAL_WEIGHT,
    MESSAGE_B,
    MESSAGE_COVERAGE_POWER,
    MESSAGE_WORDS,
    TermStats,
    idf,
    term_score,
)
from core.search.search_query import SearchQuery, parse_query
from core.search.words import fold_text, term_counts

WORDS = (
    "retry retries retried checksum checksums frame frames storage budget compaction trigram socket "
    "timeout connection refused parse parsed header headers return dict lock locks deadlock thread "
    "acquire release file files closed close raise value résumé naïve café über straße retrieval retrieve"
).split()
FILLER = "we then it alpha beta gamma delta zeta kappa omega quokka wombat — “quoted” ﬁle".split()


def _plain(
    chunks: list[Chunk], query: SearchQuery, stats: TermStats, prefix_terms: tuple[str, ...], count: int
) -> list[tuple[float, int]]:
    terms, prefixed = set(query.terms), set(prefix_terms)
    asked = len(terms) + (1 if prefixed else 0)
    scored = []
    for chunk in chunks:
        texts = [
            chunk.text[start:end]
            for start, end in zip(chunk.starts, [*(s - 1 for s in chunk.starts[1:]), len(chunk.text)], strict=True)
        ]
        for index, text in enumerate(texts):
            counts = term_counts(text)
            length = fold_text(text).count(" ") + 1
            held, score = 0, 0.0
            for term in terms:
                if counts.get(term):
                    held += 1
                    score += term_score(stats.weight(term), counts[term], length, MESSAGE_WORDS, MESSAGE_B)
            if prefixed:
                top = max(
                    term_score(stats.weight(t), counts.get(t, 0), length, MESSAGE_WORDS, MESSAGE_B) for t in prefixed
                )
                if top:
                    held += 1
                    score += top
            if asked:
                score *= (held / asked) ** MESSAGE_COVERAGE_POWER
            lowered = text.lower()
            score += LITERAL_WEIGHT * idf(1, stats.total) * sum(1 for needle in query.needles if needle in lowered)
            if score > 0:
                scored.append((score, chunk.first_message + index))
    scored.sort(reverse=True)
    return scored[:count]


def _chunks(rng: random.Random, ascii_only: bool = False) -> list[Chunk]:
    words_of = [word for word in WORDS if word.isascii()] if ascii_only else WORDS
    filler = [word for word in FILLER if word.isascii()] if ascii_only else FILLER
    chunks, first = [], 0
    for _ in range(rng.randint(1, 4)):
        texts = []
        for _ in range(rng.randint(1, 12)):
            words = [rng.choice(words_of if rng.random() < 0.3 else filler) for _ in range(rng.randint(1, 40))]
            if rng.random() < 0.2:
                words.append("retry_budget.py")
            texts.append(" ".join(words).capitalize())
        starts, offset = array("I"), 0
        for text in texts:
            starts.append(offset)
            offset += len(text) + 1
        chunks.append(Chunk(first, "\n".join(texts), starts, "ua" * len(texts)))
        first += len(texts)
    return chunks


@pytest.mark.parametrize(
    ("typed", "typing"),
    [
        ("retry checksum", False),
        ("how do we retry when the checksum of a frame fails", False),
        ("deadlock thread lock", False),
        ("parse the header and return a dict", False),
        ("résumé cafe naive", False),
        ("retry_budget.py frames", False),
        ("socket timeo", True),
        ("file closed raise", False),
        ("retry retrieval", False),
        ("retrieval retr", True),
    ],
)
@pytest.mark.parametrize("ascii_only", [False, True])
def test_best_messages_are_those_a_plain_scorer_finds(typed: str, typing: bool, ascii_only: bool) -> None:
    rng = random.Random(typed)
    query = parse_query(typed, typing=typing)
    prefix_terms = tuple(
        word for word in {t for w in WORDS for t in term_counts(w)} if query.prefix and word.startswith(query.prefix)
    )
    for round_ in range(60):
        chunks = _chunks(rng, ascii_only)
        # Weights as a store would have them: some words in most sessions, some in a few.
        df = {term: rng.choice([1, 3, 40, 900, 990]) for term in (*query.terms, *prefix_terms)}
        stats = TermStats(1000, 120.0, df)
        found = best_messages(chunks, query, stats, prefix_terms, 3)
        expected = _plain(chunks, query, stats, prefix_terms, 3)
        got = [(passage.score, passage.message) for passage in found]
        assert [message for _s, message in got] == [message for _s, message in expected], (round_, got, expected)
        assert got == pytest.approx(expected)
        for passage in found:
            chunk = next(c for c in chunks if c.first_message <= passage.message < c.first_message + len(c.starts))
            assert passage.text in chunk.text.split("\n")
            assert passage.role == ("user" if (passage.message - chunk.first_message) % 2 == 0 else "assistant")
