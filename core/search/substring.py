"""Finding text as typed in what was said: the substring index's candidates, verified against the
stored text, in listing order, within a time budget. Serves quoted phrases, identifiers, CJK typed
as is, and a word that no indexed word holds (``ueerr`` inside ``ValueError``)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from core.abort import AbortSignal
from core.search.matching import Snippet
from core.search.message_index import MessageIndex
from core.sessions.models import SessionRecord


class Containing:
    """Which listed sessions hold a needle, as far as a search got: listing position -> the snippet
    of its newest message holding it. ``complete`` is false when the budget ran out first."""

    def __init__(self) -> None:
        self.found: dict[int, Snippet] = {}
        self.complete = True


def sessions_containing(
    index: MessageIndex,
    needle: str,
    records: Sequence[SessionRecord],
    position_of: Mapping[str, int],
    *,
    order: Sequence[int],
    skip: set[str],
    wanted: int,
    deadline: float,
    signal: AbortSignal | None,
) -> Containing:
    """The sessions of ``records`` whose messages hold folded ``needle``, verified one by one in
    ``order`` (listing positions), until ``wanted`` are found or ``deadline`` (``perf_counter``)
    passes. Sessions in ``skip`` are not looked at.

    Raises:
        IndexUnavailable: the index cannot be read (or a newer search interrupted it).
    """
    result = Containing()
    candidates = index.candidates(needle, budget=max(0.0, deadline - time.perf_counter()))
    if signal is not None:
        signal.throw_if_aborted()
    if candidates is not None and not candidates:
        return result
    if candidates is not None:
        ranks = {position: rank for rank, position in enumerate(order)}
        positions = [position_of[sid] for sid in candidates if sid in position_of]
        walk = sorted((p for p in positions if p in ranks), key=ranks.__getitem__)
    else:
        walk = list(order)  # dense: most chunks may match; read the sessions in order
    for position in walk:
        if len(result.found) >= wanted:
            break
        if time.perf_counter() > deadline:
            result.complete = False
            break
        session_id = records[position].header.id
        if session_id in skip:
            continue
        if signal is not None:
            signal.throw_if_aborted()
        if candidates is not None:
            snippet = index.verify(session_id, candidates[session_id], needle)
        else:
            snippet = index.scan(session_id, needle)
        if snippet is not None:
            result.found[position] = snippet
    return result
