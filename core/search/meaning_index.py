"""The message vectors of a ``BodyIndex``, all shards together: embedding what the words index
holds and the vectors do not, and answering a search by meaning (see ``meaning``).

The keeper (or the builder process) calls ``embed_pending`` after indexing the words, so a session
is searchable by its words first and by its meaning moments later; a search uses the vectors there
are (a session without them yet is ranked by its words alone).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from core.search.index_values import IndexUnavailable
from core.search.meaning import Embedder, MeaningUnavailable, cosines, pack, packed_size
from core.search.shard import Shard

if TYPE_CHECKING:
    from core.search.meaning import Vectors

NARROWED = 300
"""Sessions a search by meaning alone scores message by message at least, the likeliest by their
mean vector (a store of fewer sessions is scored whole)."""


@dataclass(frozen=True, slots=True)
class MeaningMatch:
    """How near a session is to a question in meaning: its best message's cosine and position."""

    session_id: str
    cosine: float
    message: int


@dataclass(frozen=True, slots=True)
class MeaningProgress:
    """How far embedding is: what waits for its vectors, and what was embedded since the run began
    (chunks of a folder store's index, messages of the team store)."""

    pending: int
    done: int = 0

    @property
    def complete(self) -> bool:
        return self.pending == 0


def best_matches(rows: Sequence[tuple[str, int, bytes]], question: Vectors) -> dict[str, MeaningMatch]:
    """Each session's best message among ``rows`` of (session id, position of the row's first
    message, the packed vectors of consecutive messages), as both stores read them."""
    import numpy as np

    rows = [row for row in rows if row[2]]
    if not rows:
        return {}
    ids, firsts, blobs = zip(*rows, strict=True)
    sizes = np.fromiter(map(len, blobs), np.int64, len(rows)) // packed_size(len(question))
    near = cosines(b"".join(blobs), len(question), question)
    offsets = np.zeros(len(rows), np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    row_best = np.maximum.reduceat(near, offsets)  # (every row holds a vector)
    # Each session's best row (the first among equals): its rows sorted by session, best first.
    codes: dict[str, int] = {}
    session_codes = np.fromiter((codes.setdefault(session_id, len(codes)) for session_id in ids), np.int64, len(rows))
    order = np.lexsort((-row_best, session_codes))
    firsts_of_sessions = np.flatnonzero(np.diff(session_codes[order], prepend=-1))
    found: dict[str, MeaningMatch] = {}
    for number in order[firsts_of_sessions].tolist():
        start = int(offsets[number])
        at = int(np.argmax(near[start : start + int(sizes[number])]))
        found[ids[number]] = MeaningMatch(ids[number], float(row_best[number]), int(firsts[number]) + at)
    return found


class MeaningSource(Protocol):
    """What a search asks of the vectors of a store's messages: a folder store's ``MeaningIndex``,
    or the team store's own (``core.database.meaning``)."""

    failure: MeaningUnavailable | None
    seen: MeaningProgress

    def ask(self, question: str) -> Vectors | None:
        """The question's vector (``None`` when the embedder fails: words answer alone)."""
        ...

    def scores(self, question: Vectors, session_ids: Iterable[str]) -> dict[str, MeaningMatch]:
        """Each session's best message by meaning (sessions without vectors are left out)."""
        ...

    def nearest(
        self, question: Vectors, count: int, among: Collection[str], deadline: float
    ) -> tuple[list[MeaningMatch], bool]:
        """The ``count`` sessions of ``among`` nearest the question, and whether all were read."""
        ...

    def message(self, session_id: str, position: int) -> tuple[str, str] | None:
        """(role, text) of one message."""
        ...

    def progress(self) -> MeaningProgress:
        """How far embedding has come (counted: not for a UI thread)."""
        ...

    def start(self) -> None:
        """Embed what is missing in the background, where the source does so itself (a team store);
        a folder store's vectors are embedded by its ``IndexKeeper``."""
        ...


class MeaningIndex:
    """The vectors of an index's shards (see the module docstring).

    Args:
        shards: the index's shards.
        shard_of: the shard holding a session.
        embedder: what makes the vectors (and the question's).
    """

    def __init__(self, shards: Sequence[Shard], shard_of: Callable[[str], Shard], embedder: Embedder) -> None:
        self.shards = shards
        self.shard_of = shard_of
        self.embedder = embedder
        self.failure: MeaningUnavailable | None = None
        """Why the embedder failed last (``None``: it works, or was not tried yet)."""
        self.seen = MeaningProgress(0)
        """Where embedding stood when last looked at (kept by ``embed_pending``; cheap to read)."""
        self._asked: tuple[str, Vectors] | None = None
        self._lock = threading.Lock()

    # -- embedding -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Nothing: the ``IndexKeeper`` embeds after indexing the words (``embed_pending``)."""

    def embed_pending(self, stop: Callable[[], bool] | None = None) -> int:
        """Embed every queued chunk (missing or stale vectors), in the shards this process writes;
        how many chunks were embedded. Stops between batches once ``stop`` says so.

        Raises:
            IndexUnavailable: the index cannot be written.
            MeaningUnavailable: the embedder failed (what was stored stays).
        """
        done = 0
        try:
            self.embedder.embed([])  # loads a local model now, off the thread of the first search
        except MeaningUnavailable as problem:
            self.failure = problem
            raise
        writing = [shard for shard in self.shards if shard.vectors.adopt(self.embedder.name)]
        self.seen = MeaningProgress(sum(shard.vectors.queued() for shard in writing))
        for shard in writing:  # (the others are kept, and embedded, by another process)
            vectors = shard.vectors
            while stop is None or not stop():
                pending = vectors.pending()
                if not pending:
                    break
                try:
                    made = self.embedder.embed([text for chunk in pending for text in chunk.texts])
                except MeaningUnavailable as problem:
                    self.failure = problem
                    raise
                self.failure = None
                dims = int(made.shape[1])
                rows, start = [], 0
                for chunk in pending:
                    rows.append((chunk, pack(made[start : start + len(chunk.texts)])))
                    start += len(chunk.texts)
                vectors.store(rows, dims, packed_size(dims))
                done += len(pending)
                self.seen = MeaningProgress(max(self.seen.pending - len(pending), 0), self.seen.done + len(pending))
        return done

    def progress(self) -> MeaningProgress:
        """How many chunks wait for their vectors (all shards; counted in the files: not for a UI
        thread, which reads ``seen``)."""
        pending = 0
        for shard in self.shards:
            try:
                pending += shard.vectors.queued()
            except IndexUnavailable:
                continue
        self.seen = MeaningProgress(pending, self.seen.done)
        return self.seen

    # -- searching -------------------------------------------------------------------------------------

    def ask(self, question: str) -> Vectors | None:
        """The question's vector (``None`` when the embedder fails: words answer alone)."""
        with self._lock:
            if self._asked is not None and self._asked[0] == question:
                return self._asked[1]
        try:
            vector: Vectors = self.embedder.embed([question])[0]
        except MeaningUnavailable as problem:
            self.failure = problem
            return None
        with self._lock:
            self._asked = (question, vector)
        return vector

    def _dims(self, shard: Shard) -> int | None:
        """The dimensions of the shard's vectors when this embedder made them, else ``None``."""
        try:
            made = shard.vectors.made_by()
        except IndexUnavailable:
            return None  # an index of an older layout, kept by an older process: no vectors
        if made is None or made[0] != self.embedder.name:
            return None
        return made[1]

    def scores(self, question: Vectors, session_ids: Iterable[str]) -> dict[str, MeaningMatch]:
        """Each session's best message by meaning (sessions without vectors are left out); one
        query a shard."""
        by_shard: dict[int, list[str]] = {}
        for session_id in session_ids:
            by_shard.setdefault(id(self.shard_of(session_id)), []).append(session_id)
        found: dict[str, MeaningMatch] = {}
        for shard in self.shards:
            wanted = by_shard.get(id(shard))
            dims = self._dims(shard) if wanted else None
            if not wanted or dims is None or dims != len(question):
                continue
            try:
                found.update(best_matches(shard.vectors.of_sessions(wanted), question))
            except IndexUnavailable:
                continue
        return found

    def message(self, session_id: str, position: int) -> tuple[str, str] | None:
        """(role, text) of one message of a session, as indexed."""
        try:
            messages = self.shard_of(session_id).reads.session_messages(session_id, None)
        except IndexUnavailable:
            return None
        for at, role, text in messages:
            if at == position:
                return role, text
        return None

    def nearest(
        self, question: Vectors, count: int, among: Collection[str], deadline: float
    ) -> tuple[list[MeaningMatch], bool]:
        """The ``count`` sessions of ``among`` nearest the question, nearest first (their best
        message's cosine). The sessions' mean vectors choose the ``NARROWED`` likeliest (all of them
        in a store that small), whose messages are then scored: the work is bounded, so the answer
        is always complete (``deadline`` is for sources that read everything)."""
        import numpy as np

        ids: list[str] = []
        blobs: list[bytes] = []
        for shard in self.shards:
            dims = self._dims(shard)
            if dims is None or dims != len(question):
                continue
            try:
                for session_id, data in shard.vectors.means():
                    if session_id in among:
                        ids.append(session_id)
                        blobs.append(data)
            except IndexUnavailable:
                continue
        if not ids:
            return [], True
        wanted = max(NARROWED, count * 10)
        chosen = ids
        if len(ids) > wanted:
            by_mean = cosines(b"".join(blobs), len(question), question)
            chosen = [ids[at] for at in np.argpartition(-by_mean, wanted)[:wanted]]
        exact = self.scores(question, chosen)
        return sorted(exact.values(), key=lambda match: -match.cosine)[:count], True
