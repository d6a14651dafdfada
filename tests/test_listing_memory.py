"""What a search keeps of a listing: where each session the message index found sits in it, kept
from one search to the next while the index's ids stay the same, made again as soon as they change."""

from __future__ import annotations

import numpy as np
import pytest

from core.search import listing_memory
from core.search.listing_memory import ListingMemory
from core.search.ranking import FoundWords
from core.sessions.models import SessionHeader, SessionRecord


def listing(*ids: str) -> list[SessionRecord]:
    return [SessionRecord(header=SessionHeader(id=session_id, created_at=0)) for session_id in ids]


def found(ids: dict[int, str], version: int | None, *keys: int) -> FoundWords:
    count = len(keys)
    return FoundWords(ids, version, np.array(keys, np.int64), np.ones(count), np.ones(count, np.int64))


def test_positions_by_key_with_unlisted_forgotten_and_unknown_keys_left_out() -> None:
    cache = ListingMemory()
    records = listing("a", "b", "c")
    ids = {1: "c", 2: "gone-from-the-listing", 4: "a"}
    # key 3 was forgotten since (not in ids), key 9 indexed after the ids were read
    assert cache.positions(records, found(ids, 1, 1, 2, 3, 4, 9)).tolist() == [2, -1, -1, 0, -1]


def test_the_array_is_kept_while_the_ids_do_not_change_and_made_again_when_they_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(listing_memory, "FEW_FOUND", 10**9)  # (always the array, never the lookups)
    cache = ListingMemory()
    records = listing("a", "b", "c")
    ids = {0: "a", 1: "b"}
    assert cache.positions(records, found(ids, 1, 0, 1)).tolist() == [0, 1]
    kept = cache._keys[id(ids)][4]
    assert cache.positions(records, found(ids, 1, 1)).tolist() == [1]
    assert cache._keys[id(ids)][4] is kept  # the same version: nothing made again
    ids[2] = "c"  # a session indexed, the version not bumped yet (a search between the two steps)
    assert cache.positions(records, found(ids, 1, 2)).tolist() == [2]
    ids[0] = "b"
    ids[1] = "a"  # a session indexed again under another key: the version says so
    assert cache.positions(records, found(ids, 2, 0, 1)).tolist() == [1, 0]
    other = listing("b", "a", "c")  # a new listing: positions of that one
    assert cache.positions(other, found(ids, 2, 0, 1)).tolist() == [0, 1]
    assert cache.positions(other, found(ids, None, 0, 1)).tolist() == [0, 1]  # a database's: never kept


def test_a_few_sessions_found_while_the_index_changes_are_looked_up_without_making_the_array() -> None:
    cache = ListingMemory()
    records = listing(*(f"s{number}" for number in range(100)))
    ids = {key: f"s{key}" for key in range(100)}
    assert cache.positions(records, found(ids, 1, 5, 7, 200)).tolist() == [5, 7, -1]
    assert id(ids) not in cache._keys
    assert cache.positions(records, found(ids, 1, *range(50))).tolist() == list(range(50))
    assert id(ids) in cache._keys
