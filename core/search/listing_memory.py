"""What a search keeps of one listing from one search to the next: its titles' search text and
words, each session's position and group, and where each indexed session of a part of the message
index sits in the listing. Hosts pass the same listing objects again while nothing changed, so a
keystroke's search builds none of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.search.listing_match import MetaIndex, group_of
from core.search.ranking import FoundWords, TitleIndex
from core.sessions.models import SessionRecord

FEW_FOUND = 8
"""Sessions found fewer than one in this many of a part's are looked up one by one when its array
must be made again (the array costs a lookup for each of its sessions)."""
KEPT_PARTS = 16
"""Parts (an index's shards) whose key -> position arrays are kept; beyond, they are made again."""


class ListingMemory:
    """The in-memory search structures of the last listing searched (see the module docstring)."""

    def __init__(self) -> None:
        self._meta: tuple[Sequence[SessionRecord], Mapping[str, str | None], MetaIndex] | None = None
        self._titles: tuple[Sequence[SessionRecord], Mapping[str, str | None], TitleIndex] | None = None
        self._positions: tuple[Sequence[SessionRecord], dict[str, int]] | None = None
        self._groups: tuple[Sequence[SessionRecord], str | None, list[int], Any] | None = None
        self._keys: dict[int, tuple[Sequence[SessionRecord], Mapping[int, str], int, int, Any]] = {}

    def meta_index(self, records: Sequence[SessionRecord], titles: Mapping[str, str | None]) -> MetaIndex:
        cached = self._meta
        if cached is None or cached[0] is not records or cached[1] is not titles:
            cached = self._meta = (records, titles, MetaIndex(records, titles))
        return cached[2]

    def title_index(self, records: Sequence[SessionRecord], titles: Mapping[str, str | None]) -> TitleIndex:
        cached = self._titles
        if cached is None or cached[0] is not records or cached[1] is not titles:
            labels = [titles.get(record.header.id) for record in records]
            cached = self._titles = (records, titles, TitleIndex(labels))
        return cached[2]

    def groups(self, records: Sequence[SessionRecord], target_cwd: str | None) -> list[int]:
        """Each listed session's group (0 this folder, 1 no folder, 2 elsewhere), by position."""
        return self._grouped(records, target_cwd)[2]

    def group_array(self, records: Sequence[SessionRecord], target_cwd: str | None) -> Any:
        """``groups`` as a numpy array."""
        return self._grouped(records, target_cwd)[3]

    def _grouped(
        self, records: Sequence[SessionRecord], target_cwd: str | None
    ) -> tuple[Sequence[SessionRecord], str | None, list[int], Any]:
        import numpy as np

        cached = self._groups
        if cached is None or cached[0] is not records or cached[1] != target_cwd:
            groups = [group_of(record.header.cwd, target_cwd) for record in records]
            cached = self._groups = (records, target_cwd, groups, np.array(groups, np.int64))
        return cached

    def position_map(self, records: Sequence[SessionRecord]) -> dict[str, int]:
        cached = self._positions
        if cached is None or cached[0] is not records:
            cached = self._positions = (records, {record.header.id: i for i, record in enumerate(records)})
        return cached[1]

    def positions(self, records: Sequence[SessionRecord], found: FoundWords) -> Any:
        """The listing position of each session ``found`` holds, by its key (-1: not listed).

        The array made for a part is kept while its ids are the same object at the same version
        and size (the index bumps the version after changing the ids, and the size tells a search
        that read the version between the two)."""
        import numpy as np

        ids = found.ids
        cached = self._keys.get(id(ids))
        if (
            cached is not None
            and found.version is not None
            and cached[0] is records
            and cached[1] is ids
            and cached[2] == found.version
            and cached[3] == len(ids)
        ):
            array = cached[4]
        elif len(found.keys) * FEW_FOUND < len(ids):
            # A few sessions found while the index changes (a build): looked up, nothing kept.
            position_of = self.position_map(records)
            return np.fromiter(
                (position_of.get(ids.get(key, ""), -1) for key in found.keys.tolist()), np.int64, len(found.keys)
            )
        else:
            position_of = self.position_map(records)
            pairs = list(ids.items())  # (one step: the index's writer may add to it meanwhile)
            array = np.full(max((key for key, _id in pairs), default=-1) + 1, -1, np.int64)
            for key, session_id in pairs:
                position = position_of.get(session_id)
                if position is not None:
                    array[key] = position
            if found.version is not None:
                if len(self._keys) >= KEPT_PARTS:
                    self._keys.clear()
                self._keys[id(ids)] = (records, ids, found.version, len(pairs), array)
        keys = found.keys
        inside = keys < len(array)
        if inside.all():
            return array[keys]
        at = np.full(len(keys), -1, np.int64)
        at[inside] = array[keys[inside]]
        return at
