"""The one way the benchmarks time a piece of work: its median over a few runs (machines are noisy)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_seconds(work: Callable[[], Any], repeats: int) -> float:
    """The median wall time of ``repeats`` calls of ``work``, in seconds."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def machine_speed() -> str:
    """How fast this machine runs Python right now: the best of three runs of a fixed loop, in ms.

    A shared VM's speed drifts (by 1.5x within a minute here); printed beside absolute figures it
    says whether they were measured at a fast or a slow moment."""

    def loop() -> None:
        total = 0
        for number in range(3_000_000):
            total += number & 7

    best = min(median_seconds(loop, 1) for _ in range(3))
    return f"a fixed Python loop (3M steps) takes {best * 1000:.0f} ms now"
