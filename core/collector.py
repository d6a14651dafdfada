"""Pausing Python's cyclic garbage collector around bulk, acyclic allocation."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

PROMOTE_FROM = 50_000
"""Tracked objects a paused block leaves behind from which they go straight to the oldest
generation as it ends (see ``collector_paused``)."""


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the duration of the block.

    Parsing a log or projecting a conversation creates hundreds of thousands of acyclic dicts,
    lists and small objects; each counts towards the collector's thresholds, and every full
    collection walks the whole (growing) heap, which makes large inputs superlinear. Nothing
    built in such a block forms a reference cycle, so deferring collection until it ends is safe.

    A block that leaves many objects behind (a listing of 100,000 sessions leaves 800,000) would
    have the next young collection walk them all at once (0.1 s), to find no garbage: they are
    moved to the oldest generation instead (``gc.freeze`` then ``gc.unfreeze``, two list splices),
    where only a full collection looks, as it would have at their next promotion anyway. Not done
    while anything is frozen: that would thaw what the host froze (the app freezes its listing).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_count()[0] >= PROMOTE_FROM and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
