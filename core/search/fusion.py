"""Search by meaning inside one search: the words' best sessions ranked again with meaning, and a
page the words left short filled with the sessions nearest in meaning (see ``meaning``).

Entries are the finder's ordering keys: ``(3 * contract group + tier, -score, listing position)``,
tier 0 being the whole query found in a title, id or folder.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from core.search.matching import Snippet, plain_snippet
from core.search.meaning import FUSION_K, MEANING_FLOOR, MEANING_POOL, MEANING_WEIGHT
from core.search.meaning_index import MeaningMatch, MeaningSource

if TYPE_CHECKING:
    from core.search.meaning import Vectors

Entry = tuple[int, float, int]


class MeaningStep:
    """What meaning adds to one search (the question's vector, computed once).

    Args:
        meaning: the index's vectors.
        question: the query's vector.
        session_of: the session id at a listing position.
    """

    def __init__(self, meaning: MeaningSource, question: Vectors, session_of: Callable[[int], str]) -> None:
        self.meaning = meaning
        self.question = question
        self.session_of = session_of
        self.found: dict[int, MeaningMatch] = {}
        """The sessions found by meaning alone, by listing position."""

    def fused(self, ordered: list[Entry]) -> list[Entry]:
        """The first ``MEANING_POOL`` entries ranked again by reciprocal rank fusion of their order
        and their best message's cosine, inside each contract group (tier 0 stays first)."""
        if len(ordered) < 2:
            return ordered
        head = ordered[:MEANING_POOL]
        ids = {position: self.session_of(position) for _key, _negative, position in head}
        near = self.meaning.scores(self.question, ids.values())
        nearest_first = sorted((p for p in ids if ids[p] in near), key=lambda p: -near[ids[p]].cosine)
        meaning_rank = {position: rank for rank, position in enumerate(nearest_first)}
        fused = []
        for rank, entry in enumerate(head):
            key, _negative, position = entry
            score = 1 / (FUSION_K + rank)
            if position in meaning_rank:
                score += MEANING_WEIGHT / (FUSION_K + meaning_rank[position])
            fused.append(((key // 3, key % 3 != 0), -score, rank, entry))
        fused.sort()
        return [entry for *_order, entry in fused] + ordered[len(head) :]

    def filled(
        self,
        ordered: list[Entry],
        wanted: int,
        among: Collection[str],
        position_of: Callable[[str], int | None],
        group_of: Sequence[int],
        deadline: float,
    ) -> tuple[list[Entry], bool]:
        """``ordered`` with up to ``wanted`` sessions of ``among`` nearest in meaning added (a cosine
        of at least ``MEANING_FLOOR``), each after the word matches of its contract group; whether
        every vector was read before ``deadline``."""
        matches, complete = self.meaning.nearest(self.question, wanted, among, deadline)
        added: list[Entry] = []
        for match in matches:
            position = position_of(match.session_id)
            if position is None or match.cosine < MEANING_FLOOR:
                continue
            self.found[position] = match
            added.append((3 * group_of[position] + 2, -match.cosine, position))
        merged = sorted(
            [(entry[0] // 3, 0, rank, entry) for rank, entry in enumerate(ordered)]
            + [(entry[0] // 3, 1, rank, entry) for rank, entry in enumerate(added)]
        )
        return [entry for *_order, entry in merged], complete

    def snippet(self, session_id: str, position: int) -> tuple[Snippet, ...]:
        """The message of a session found by meaning alone nearest the query, nothing marked."""
        match = self.found.get(position)
        message = self.meaning.message(session_id, match.message) if match is not None else None
        if match is None or message is None:
            return ()
        return (plain_snippet(message[1], message[0], match.message),)
