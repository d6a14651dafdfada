"""``collector_paused``: the cyclic collector is paused for a block and restored after it; what a
big block leaves behind goes to the oldest generation (no young collection walks it), unless the
host froze something (which must stay frozen)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from core.collector import PROMOTE_FROM, collector_paused


@pytest.fixture
def collector() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.enable()
    gc.unfreeze()  # (an app test in this process may have frozen its listing)
    gc.collect()
    try:
        yield
    finally:
        gc.unfreeze()
        if not enabled:
            gc.disable()


def test_the_collector_is_paused_inside_and_restored_after(collector: None) -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the outer one restores
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()  # it was off before: it stays off


def _oldest(thing: object) -> bool:
    return any(held is thing for held in gc.get_objects(generation=2))


def test_a_big_block_s_objects_skip_the_young_generations(collector: None) -> None:
    young = gc.get_count()[0]
    with collector_paused():
        kept = [[n] for n in range(PROMOTE_FROM + 10)]  # tracked containers, all kept
    assert gc.get_count()[0] < young + 100  # none left for the next young collection to walk
    assert _oldest(kept) and gc.get_freeze_count() == 0  # in the oldest generation, not frozen


def test_a_small_block_leaves_its_objects_young(collector: None) -> None:
    with collector_paused():
        kept = [[n] for n in range(1000)]
    assert not _oldest(kept)


def test_what_the_host_froze_stays_frozen(collector: None) -> None:
    held = [[n] for n in range(100)]
    gc.freeze()
    frozen = gc.get_freeze_count()
    with collector_paused():
        kept = [[n] for n in range(PROMOTE_FROM + 10)]
    # Not thawed (the count only loses what was freed meanwhile), and the block's objects left young.
    assert gc.get_freeze_count() > frozen // 2
    assert not _oldest(kept)
    assert len(kept) + len(held) == PROMOTE_FROM + 110
