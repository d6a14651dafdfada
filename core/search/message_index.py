"""The seam every message index sits behind, as ``SessionSearch`` uses it.

Two implementations: ``BodyIndex`` (SQLite FTS5 beside a folder store, built and kept current by
the app) and ``PgMessageIndex`` (PostgreSQL full text with ``pg_trgm``, kept current by the store's
own append transactions). Both hold only what a reference would send (the projected conversation),
answer "which sessions may contain this text" and then say where, with a snippet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from core.abort import AbortSignal
from core.search.index_values import IndexStatus
from core.search.matching import Snippet
from core.search.meaning_index import MeaningSource
from core.search.ranking import Passage, RankedWords
from core.search.search_query import SearchQuery


class MessageIndex(Protocol):
    """What the picker's search reads of a message index."""

    @property
    def meaning(self) -> MeaningSource | None:
        """The messages' vectors, for search by meaning (``None``: words only)."""
        ...

    @property
    def status(self) -> IndexStatus:
        """Where the index stands (``complete`` once every listed session is searchable)."""
        ...

    def candidates(
        self, needle: str, cap: int | None = None, budget: float | None = None
    ) -> dict[str, list[int]] | None:
        """Session id -> places (index-specific numbers) where folded ``needle`` may occur; ``None``
        when too many would ("dense": ``scan`` the sessions in listing order instead). ``budget``
        is the search's time budget in seconds: an index whose lookup may take longer answers
        "dense" rather than hold a keystroke."""
        ...

    def verify(self, session_id: str, places: Sequence[int], needle: str) -> Snippet | None:
        """The snippet of the newest message among ``places`` of one session that really contains
        ``needle``, or ``None``."""
        ...

    def scan(self, session_id: str, needle: str) -> Snippet | None:
        """The snippet of the newest message of one session containing ``needle``, or ``None``."""
        ...

    def rank(self, query: SearchQuery, *, quick: bool = False, signal: AbortSignal | None = None) -> RankedWords:
        """Every session holding a word of ``query`` (its terms, and the word being typed as a
        prefix) with its BM25 score over its projected conversation, and the statistics used.
        ``quick``: a keystroke's first answer, which may read less (the full answer follows);
        ``signal``: checked between the words (``CANCELLED`` when a newer keystroke aborted it)."""
        ...

    def passages(self, session_id: str, query: SearchQuery, ranked: RankedWords, count: int) -> list[Passage]:
        """The ``count`` messages of one session that match ``query`` best, best first (each makes
        its snippet with every matching word marked)."""
        ...

    def interrupt(self) -> None:
        """Stop a query running on another thread (a newer keystroke)."""
        ...
