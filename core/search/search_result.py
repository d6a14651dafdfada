"""What a search found: the sessions (``SearchHit``, each with why it matched and its best messages)
and what the message search did (``SearchResult``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.search.index_values import IndexStatus
from core.search.listing_match import MatchField
from core.search.matching import Snippet
from core.sessions.models import Candidate

BodyState = Literal["off", "short", "indexing", "ready", "unavailable"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One session the picker lists and why.

    ``field`` is what matched best (``None`` for an empty query); for ``"title"``, ``"id"`` and
    ``"cwd"``, ``span`` is the match inside that field's text; ``snippet`` shows the message that
    matches best, when what was said matched.
    """

    candidate: Candidate
    field: MatchField | None = None
    span: tuple[int, int] | None = None
    snippet: Snippet | None = None
    snippets: tuple[Snippet, ...] = ()
    """The best-matching messages, best first (``snippet`` is the first)."""
    score: float = 0.0
    """How well the session matched (BM25, see ``ranking``; 0 for an empty query)."""
    title_marks: tuple[tuple[int, int], ...] = ()
    """Where the query's words are in the label (for marking them)."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What ``SessionSearch.search`` found.

    ``body`` says what the message search did: ``"off"`` (switched off or no index), ``"short"``
    (the query has fewer than ``MIN_BODY_QUERY`` characters), ``"indexing"`` (searched what is
    indexed so far), ``"ready"`` or ``"unavailable"`` (the index failed; ``status`` says why).
    """

    hits: list[SearchHit]
    body: BodyState
    status: IndexStatus | None = None
    complete: bool = True
    """False when the verification budget ran out before the list was full: more body matches may
    exist (search again with a larger ``budget``)."""
