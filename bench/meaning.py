"""Would search by meaning earn its place? The retrieval benchmark's questions, ranked by words alone
(what ships), by meaning alone, and fused, with the fusion chosen on the tuning half only.

``python -m bench --only meaning``; needs ``wordllama`` (not a dependency: ``pip install
wordllama``), whose wheel ships its 256-dimension model, loaded offline. Meaning: each session's best
cosine between the question and its messages (and title). Fusions: reciprocal rank fusion over every
session (``1/(60 + word rank) + w/(60 + meaning rank)``), and re-ranking the words' top 20 by position
plus ``w`` times the cosine.
"""

from __future__ import annotations

import asyncio
import importlib
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.retrieval import DEPTH, _Nowhere, _seed
from bench.retrieval_set import Question, held_back, real, synthetic
from core import JsonlSessionStore, project_conversation
from core.catalog import SessionCatalog
from core.mcp.server import SessionToolServer
from core.sessions.sources.claude import ClaudeCodeSource
from core.sessions.sources.codex import CodexSource
from tests.support.shared_fixtures import fixtures_root

WEIGHTS = (0.25, 0.5, 1.0, 2.0)


def _rates(questions: Sequence[Question], order_of: Callable[[Question], list[str]]) -> tuple[float, float]:
    first = five = 0
    for question in questions:
        order = order_of(question)
        rank = order.index(question.session) + 1 if question.session in order else None
        first += rank == 1
        five += rank is not None and rank <= 5
    return first / len(questions), five / len(questions)


def main() -> None:
    try:  # (not dependencies: imported by name, so a checkout without them type-checks)
        numpy = importlib.import_module("numpy")
        wordllama = importlib.import_module("wordllama")
    except ImportError:
        print("\n## Meaning: wordllama is not installed (pip install wordllama); skipped")
        return
    with tempfile.TemporaryDirectory(prefix="sessionref-meaning-") as root:
        _seed(root)
        fixtures = fixtures_root() / "external-real"
        questions = synthetic()[1] + (real() if fixtures.is_dir() else [])
        sources: list[Any] = (
            [ClaudeCodeSource(fixtures / "claude"), CodexSource(fixtures / "codex")] if fixtures.is_dir() else []
        )
        store = JsonlSessionStore(root)
        server = SessionToolServer(SessionCatalog(store, sources), _Nowhere.cwd)
        server.wait_for_index()
        records, titles = server.catalog.records, server.catalog.titles.title_map()
        began = time.perf_counter()
        model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        loaded = time.perf_counter() - began
        vectors: dict[str, Any] = {}
        began, count = time.perf_counter(), 0
        for record in records:
            session_id = record.header.id
            surface = asyncio.run(server.catalog.read_surface(session_id))
            texts = [item.text[:2000] for item in project_conversation(surface)] + [titles.get(session_id) or ""]
            vectors[session_id] = numpy.asarray(model.embed(texts, norm=True))
            count += len(texts)
        embedded = time.perf_counter() - began
        ids = [record.header.id for record in records]
        words: dict[str, list[str]] = {}
        meaning: dict[str, dict[str, float]] = {}
        for question in questions:
            result = server.search.search(
                _Nowhere(), question.question, records=records, titles=titles, limit=DEPTH * 2
            )
            words[question.id] = [hit.candidate.session_id for hit in result.hits]
            asked = numpy.asarray(model.embed([question.question], norm=True))[0]
            meaning[question.id] = {sid: float((vectors[sid] @ asked).max()) for sid in ids}

        def fused(kind: str, weight: float) -> Callable[[Question], list[str]]:
            def order(question: Question) -> list[str]:
                lexical, cosine = words[question.id], meaning[question.id]
                if kind == "words":
                    return lexical
                if kind == "meaning":
                    return sorted(ids, key=lambda sid: -cosine[sid])
                if kind == "rrf":
                    by_meaning = {sid: i for i, sid in enumerate(sorted(ids, key=lambda sid: -cosine[sid]))}
                    by_words = {sid: i for i, sid in enumerate(lexical)}
                    score = {sid: 1 / (60 + by_words.get(sid, 1000)) + weight / (60 + by_meaning[sid]) for sid in ids}
                    return sorted(ids, key=lambda sid: -score[sid])
                top = lexical[: DEPTH * 2]
                return sorted(top, key=lambda sid: top.index(sid) / len(top) - weight * cosine[sid])

            return order

        tuning = [question for question in questions if not held_back(question.id)]
        held = [question for question in questions if held_back(question.id)]
        print(f"\n## Meaning (wordllama 256-d, offline): {len(questions)} questions, {len(ids)} sessions")
        print(f"  model loaded in {loaded:.2f} s; {count:,} messages embedded in {embedded:.1f} s")
        print("  as asked, hit@1 / hit@5:")
        best: tuple[tuple[float, float], str, float] | None = None
        for kind, weight in [("words", 0.0), ("meaning", 0.0)] + [
            (kind, weight) for kind in ("rrf", "rerank") for weight in WEIGHTS
        ]:
            rates = _rates(tuning, fused(kind, weight))
            label = kind if kind in ("words", "meaning") else f"{kind}, w={weight}"
            print(f"    tuning    {label:18} {rates[0]:.3f} / {rates[1]:.3f}")
            if kind in ("rrf", "rerank") and (best is None or rates > best[0]):
                best = (rates, kind, weight)
        assert best is not None
        for kind, weight in (("words", 0.0), ("meaning", 0.0), (best[1], best[2])):
            rates = _rates(held, fused(kind, weight))
            label = kind if kind in ("words", "meaning") else f"{kind}, w={weight} (chosen on tuning)"
            print(f"    held back {label:18} {rates[0]:.3f} / {rates[1]:.3f}")
        server.close()
        store.close()


if __name__ == "__main__":
    main()
