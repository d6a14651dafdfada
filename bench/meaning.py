"""How search by meaning was tuned: the retrieval benchmark's questions ranked by words alone, by
meaning alone, and by the shipped fusion at other weights and pool sizes, each chosen on the tuning
half only (the held-back half printed for the choice).

``python -m bench --only meaning``. Everything runs through the shipped code (``SessionSearch`` over
a real folder store's index, the shipped offline model, 4-bit vectors); the weight and the pool are
the constants of ``core.search.fusion`` set for each run.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.retrieval import DEPTH, _Nowhere, _seed
from bench.retrieval_set import Question, held_back, real, synthetic
from core import JsonlSessionStore
from core.catalog import SessionCatalog
from core.mcp.server import SessionToolServer
from core.search import finder, fusion
from core.search.meaning import MEANING_POOL, MEANING_WEIGHT, LocalEmbedder
from core.sessions.sources.claude import ClaudeCodeSource
from core.sessions.sources.codex import CodexSource
from tests.support.shared_fixtures import fixtures_root

CHOICES = [(weight, pool) for pool in (20, 50) for weight in (0.1, 0.25, 0.5, 1.0)]
"""(meaning's weight, the words' best sessions ranked again) tried on the tuning half."""


def _rates(questions: Sequence[Question], order_of: Callable[[Question], list[str]]) -> tuple[float, float]:
    first = five = 0
    for question in questions:
        order = order_of(question)
        rank = order.index(question.session) + 1 if question.session in order else None
        first += rank == 1
        five += rank is not None and rank <= 5
    return first / len(questions), five / len(questions)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="sessionref-meaning-") as root:
        _seed(root)
        fixtures = fixtures_root() / "external-real"
        questions = synthetic()[1] + (real() if fixtures.is_dir() else [])
        sources: list[Any] = (
            [ClaudeCodeSource(fixtures / "claude"), CodexSource(fixtures / "codex")] if fixtures.is_dir() else []
        )
        store = JsonlSessionStore(root)
        began = time.perf_counter()
        server = SessionToolServer(SessionCatalog(store, sources), _Nowhere.cwd, embedder=LocalEmbedder())
        server.wait_for_index()
        built = time.perf_counter() - began
        meaning = server.body_index.meaning if server.body_index is not None else None
        assert meaning is not None
        records, titles = server.catalog.records, server.catalog.titles.title_map()
        ids = {record.header.id for record in records}
        print(f"\n## Meaning: {len(questions)} questions, {len(records)} sessions, {meaning.progress()}")
        print(f"  words and vectors indexed in {built:.1f} s (the shipped model, 4-bit vectors)")

        def order(question: Question) -> list[str]:
            result = server.search.search(_Nowhere(), question.question, records=records, titles=titles, limit=DEPTH)
            return [hit.candidate.session_id for hit in result.hits]

        def meaning_alone(question: Question) -> list[str]:
            vector = meaning.ask(question.question)
            assert vector is not None
            found, _complete = meaning.nearest(vector, DEPTH, ids, time.perf_counter() + 60)
            return [match.session_id for match in found]

        def words_alone(question: Question) -> list[str]:
            kept, finder.MEANING_WORDS = finder.MEANING_WORDS, 1_000_000  # no query is words enough
            try:
                return order(question)
            finally:
                finder.MEANING_WORDS = kept

        tuning = [question for question in questions if not held_back(question.id)]
        held = [question for question in questions if held_back(question.id)]
        print("  as asked, hit@1 / hit@5:")
        rows: list[tuple[str, Callable[[Question], list[str]]]] = [
            ("words alone", words_alone),
            ("meaning alone", meaning_alone),
        ]
        for label, ranking in rows:
            tuned, kept_back = _rates(tuning, ranking), _rates(held, ranking)
            held_rates = f"held back {kept_back[0]:.3f} / {kept_back[1]:.3f}"
            print(f"    {label:34} tuning {tuned[0]:.3f} / {tuned[1]:.3f}   {held_rates}")
        best: tuple[tuple[float, float], float, int] | None = None
        for weight, pool in CHOICES:
            fusion.MEANING_WEIGHT, fusion.MEANING_POOL, finder.MEANING_POOL = weight, pool, pool
            rates = _rates(tuning, order)
            shipped = " (ships)" if (weight, pool) == (MEANING_WEIGHT, MEANING_POOL) else ""
            print(f"    fused, weight {weight}, best {pool}{shipped:10} tuning {rates[0]:.3f} / {rates[1]:.3f}")
            if best is None or rates > best[0]:
                best = (rates, weight, pool)
        assert best is not None
        fusion.MEANING_WEIGHT, fusion.MEANING_POOL, finder.MEANING_POOL = best[1], best[2], best[2]
        rates = _rates(held, order)
        print(f"    chosen on tuning: weight {best[1]}, best {best[2]}: held back {rates[0]:.3f} / {rates[1]:.3f}")
        fusion.MEANING_WEIGHT, fusion.MEANING_POOL, finder.MEANING_POOL = MEANING_WEIGHT, MEANING_POOL, MEANING_POOL
        server.close()
        store.close()


if __name__ == "__main__":
    main()
