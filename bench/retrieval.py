"""Retrieval quality: does the search put the right session first for a question about it?

``python -m bench --only retrieval``. A real folder store holds the synthetic conversations of
``bench/retrieval_set.py``; the real Claude Code and Codex transcripts of the shared fixtures are
read beside it as the other agents' sessions they are. Every question is asked through the same
``SessionSearch`` the picker, the model's tool and ``sessionref search`` use, once as asked and
once as its keywords, from a folder no session is in (so the contract's groups do not reorder
anything and the ranking alone is measured).

Prints hit@1 (the right session first), hit@5 (in the first five) and MRR (mean reciprocal rank,
over the first 10) per half (tuning / held back), per kind of question, and the query times. What
is measured is what ships: words and meaning (the shipped offline model); words alone are printed
beside it for the question as asked.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.retrieval_set import Question, held_back, real, synthetic
from core import JsonlSessionStore
from core.catalog import SessionCatalog
from core.mcp.server import SessionToolServer
from core.search.meaning import LocalEmbedder
from core.sessions.sources.claude import ClaudeCodeSource
from core.sessions.sources.codex import CodexSource
from tests.support.shared_fixtures import fixtures_root

TARGET_HIT1 = 0.72
TARGET_HIT5 = 0.92
DEPTH = 10


@dataclass(frozen=True, slots=True)
class _Nowhere:
    id: str = "\x00(no session)"
    cwd: str | None = "/nowhere"


def _seed(root: str) -> None:
    store = JsonlSessionStore(root)
    conversations, _questions = synthetic()
    for conversation in conversations:
        session = store.create(conversation.id, cwd=conversation.cwd)
        for role, text in conversation.messages:
            content = [{"type": "text", "text": text}]
            if role == "user":
                session.append("user/message", {"content": content, "source": {"kind": "user"}}, surface_op="append")
            else:
                data = {"turn": 0, "step": 0, "content": content, "provenance": {"provider": "bench", "model": "x"}}
                session.append("assistant/message", data, surface_op="append")
        session.append("session/title", {"title": conversation.title, "messageSeqs": [0], "source": "user"})
        store.release(conversation.id)
    store.close()


def rank_of(hits: Sequence[Any], session: str) -> int | None:
    for rank, hit in enumerate(hits, 1):
        if hit.candidate.session_id == session:
            return rank
    return None


def _line(name: str, ranks: list[int | None]) -> str:
    count = len(ranks)
    if not count:
        return f"  {name:28} (none)"
    hit1 = sum(1 for rank in ranks if rank == 1) / count
    hit5 = sum(1 for rank in ranks if rank is not None and rank <= 5) / count
    mrr = sum(1 / rank for rank in ranks if rank is not None) / count
    return f"  {name:28} n={count:4}  hit@1 {hit1:.3f}  hit@5 {hit5:.3f}  MRR {mrr:.3f}"


def _rates(ranks: list[int | None]) -> tuple[float, float]:
    count = max(len(ranks), 1)
    return (
        sum(1 for rank in ranks if rank == 1) / count,
        sum(1 for rank in ranks if rank is not None and rank <= 5) / count,
    )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="sessionref-retrieval-") as root:
        began = time.perf_counter()
        _seed(root)
        fixtures = fixtures_root() / "external-real"
        sources: list[Any] = []
        questions: list[Question] = synthetic()[1]
        if fixtures.is_dir():
            sources = [ClaudeCodeSource(fixtures / "claude"), CodexSource(fixtures / "codex")]
            questions += real()
        else:
            print(f"  (no shared fixtures at {fixtures}: the real-transcript questions are left out)")
        store = JsonlSessionStore(root)
        # What ships: words and meaning (the shipped offline model); words alone beside it.
        server = SessionToolServer(SessionCatalog(store, sources), _Nowhere.cwd, embedder=LocalEmbedder())
        status = server.wait_for_index()
        seeded = time.perf_counter() - began
        words = SessionToolServer(
            SessionCatalog(store, sources), _Nowhere.cwd, index_path=Path(root) / ".words-only-index"
        )
        words.wait_for_index()
        records, titles = server.catalog.records, server.catalog.titles.title_map()
        meaning = server.body_index.meaning if server.body_index is not None else None
        embedded = meaning.progress() if meaning is not None else None
        print(
            f"## Retrieval: {len(questions)} questions over {len(records)} sessions "
            f"({status.indexed} indexed, {embedded.done if embedded else 0} chunks embedded; "
            f"seeded and indexed in {seeded:.1f} s)"
        )
        compared: dict[tuple[str, str], list[int | None]] = defaultdict(list)
        for question in questions:
            half = "held back" if held_back(question.id) else "tuning"
            result = words.search.search(_Nowhere(), question.question, records=records, titles=titles, limit=DEPTH)
            compared[(half, "words")].append(rank_of(result.hits, question.session))
        results: dict[tuple[str, str, str], list[int | None]] = defaultdict(list)
        times: list[float] = []
        tool_times: list[float] = []
        for question in questions:
            half = "held back" if held_back(question.id) else "tuning"
            for form, text in (("as asked", question.question), ("keywords", question.keywords)):
                started = time.perf_counter()
                result = server.search.search(_Nowhere(), text, records=records, titles=titles, limit=DEPTH)
                times.append(time.perf_counter() - started)
                rank = rank_of(result.hits, question.session)
                results[(half, form, "all")].append(rank)
                results[(half, form, question.kind)].append(rank)
                if form == "as asked":
                    compared[(half, "words and meaning")].append(rank)
            started = time.perf_counter()
            asyncio.run(server.find(question.question, DEPTH))
            tool_times.append(time.perf_counter() - started)
        kinds = sorted({question.kind for question in questions})
        verdicts = []
        for half in ("tuning", "held back"):
            for form in ("as asked", "keywords"):
                print(f"\n### {half}, {form}")
                print(_line("all", results[(half, form, "all")]))
                for kind in kinds:
                    print(_line(kind, results[(half, form, kind)]))
                if form == "as asked":
                    hit1, hit5 = _rates(results[(half, form, "all")])
                    ok = hit1 >= TARGET_HIT1 and hit5 >= TARGET_HIT5
                    verdicts.append(f"{half}: hit@1 {hit1:.3f}, hit@5 {hit5:.3f} {'meets' if ok else 'MISSES'}")
        print("\n### What meaning adds, the question as asked")
        for half in ("tuning", "held back"):
            for ranking in ("words", "words and meaning"):
                print(_line(f"{half}: {ranking}", compared[(half, ranking)]))
        print(f"\n### Targets for the question as asked: hit@1 >= {TARGET_HIT1}, hit@5 >= {TARGET_HIT5}")
        for verdict in verdicts:
            print(f"  {verdict}")
        ordered = sorted(times)
        print("\n### Query times (this store)")
        print(
            f"  SessionSearch.search: p50 {statistics.median(times) * 1000:.1f} ms, "
            f"p95 {ordered[int(len(ordered) * 0.95)] * 1000:.1f} ms ({len(times)} queries)"
        )
        print(
            f"  search_sessions as the tool answers (3 messages each, masked): "
            f"p50 {statistics.median(tool_times) * 1000:.1f} ms"
        )
        words.close()
        server.close()
        store.close()


if __name__ == "__main__":
    main()
