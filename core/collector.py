"""Pausing Python's cyclic garbage collector around bulk, acyclic allocation."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the duration of the block.

    Parsing a log or projecting a conversation creates hundreds of thousands of acyclic dicts,
    lists and small objects; each counts towards the collector's thresholds, and every full
    collection walks the whole (growing) heap, which makes large inputs superlinear. Nothing
    built in such a block forms a reference cycle, so deferring collection until it ends is safe.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
