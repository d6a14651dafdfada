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
