"""Search by meaning in the team store: each message's vector in ``sessionref.sessionref_vectors``,
one row per message and embedder, four bits a dimension (``core.search.meaning.pack``), ranked by
the client.

Who embeds: each user's sessionref embeds the messages of the sessions that user owns (row-level
security lets only the owner add a session's vectors), in the background, after they are written;
everyone who may read a session reads its vectors. A message rewritten or removed takes its vectors
with it (a foreign key). The server is never asked for an extension: this is what every
PostgreSQL has (pgvector, where installed, is not used yet; see docs/search.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

import psycopg

from core.database.connect import connect
from core.database.errors import server_words
from core.search.meaning import Embedder, MeaningUnavailable, pack
from core.search.meaning_index import MeaningMatch, MeaningProgress, best_matches

if TYPE_CHECKING:
    from core.search.meaning import Vectors

EMBED_ROWS = 512
"""Messages embedded in one round (one transaction of vectors)."""
SCAN_ROWS = 4096
"""Vectors read at a time when every session is scored by meaning."""
QUERY_TIMEOUT_MS = 10_000
"""The longest one query of the meaning search may run."""


class PgMeaning:
    """The vectors of a team store's messages (see the module docstring).

    Args:
        conninfo: the database, as the store connects to it.
        embedder: what embeds the messages and the questions.
    """

    def __init__(self, conninfo: str, embedder: Embedder) -> None:
        self._conninfo = conninfo
        self.embedder = embedder
        self.failure: MeaningUnavailable | None = None
        """Why the embedder (or the database) failed last."""
        self.seen = MeaningProgress(0)
        """Where embedding stood when last looked at."""
        # Two connections: a search never waits behind the embedding's queries (finding what has no
        # vector yet reads every message of the user's sessions: a second at a million messages).
        self._searching = _Link(conninfo)
        self._embedding = _Link(conninfo)
        self._running = threading.Lock()
        self._asked: tuple[str, Vectors] | None = None
        self._closed = False

    # -- the connections -------------------------------------------------------------------------------

    def _rows(self, statement: str, parameters: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of one query of a search, on the searches' own connection.

        Raises:
            MeaningUnavailable: the database refused or cannot be reached.
        """
        return self._searching.rows(statement, parameters)

    def close(self) -> None:
        self._closed = True
        self._searching.close()
        self._embedding.close()

    # -- embedding -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Embed what is missing, on a thread of its own (nothing when a run goes on)."""
        if self._closed or not self._running.acquire(blocking=False):
            return

        def run() -> None:
            try:
                self.embed_pending(lambda: self._closed)
            except MeaningUnavailable as problem:
                self.failure = problem
            finally:
                self._running.release()

        threading.Thread(target=run, name="meaning", daemon=True).start()

    def embed_pending(self, stop: Callable[[], bool] | None = None) -> int:
        """Embed the messages of the sessions this role owns that have no vector of this embedder;
        how many were embedded.

        Raises:
            MeaningUnavailable: the embedder or the database failed (what was stored stays).
        """
        done = 0
        while stop is None or not stop():
            rows = self._embedding.rows(
                "SELECT m.session_id, m.position, m.body FROM sessionref.sessionref_messages m "
                "JOIN sessionref.sessionref_sessions s ON s.id = m.session_id AND s.owner = current_user "
                "WHERE NOT EXISTS (SELECT 1 FROM sessionref.sessionref_vectors v WHERE v.session_id = m.session_id "
                "AND v.position = m.position AND v.model = %(model)s) LIMIT %(limit)s",
                {"model": self.embedder.name, "limit": EMBED_ROWS},
            )
            if not rows:
                break
            try:
                made = self.embedder.embed([body for _session, _position, body in rows])
            except MeaningUnavailable as problem:
                self.failure = problem
                raise
            self.failure = None
            dims = int(made.shape[1])
            # A message rewritten meanwhile is gone (its new row has no vector yet): ON CONFLICT and
            # the foreign key keep a stale vector out.
            self._embedding.rows(
                "INSERT INTO sessionref.sessionref_vectors (session_id, position, model, dims, vector) "
                "SELECT t.session_id, t.position, %(model)s, %(dims)s, t.vector "
                "FROM unnest(%(sessions)s::text[], %(positions)s::int[], %(vectors)s::bytea[]) "
                "AS t(session_id, position, vector) "
                "WHERE EXISTS (SELECT 1 FROM sessionref.sessionref_messages m WHERE m.session_id = t.session_id "
                "AND m.position = t.position) ON CONFLICT DO NOTHING",
                {
                    "model": self.embedder.name,
                    "dims": dims,
                    "sessions": [session for session, _position, _body in rows],
                    "positions": [position for _session, position, _body in rows],
                    "vectors": [pack(made[number : number + 1]) for number in range(len(rows))],
                },
            )
            done += len(rows)
            self.seen = MeaningProgress(max(self.seen.pending - len(rows), 0), self.seen.done + len(rows))
        return done

    def progress(self) -> MeaningProgress:
        """How many messages of the sessions this role owns wait for a vector of this embedder
        (teammates' sessions are embedded by their owners). Counted on the embedding's connection:
        a search does not wait behind it."""
        rows = self._embedding.rows(
            "SELECT count(*) FROM sessionref.sessionref_messages m "
            "JOIN sessionref.sessionref_sessions s ON s.id = m.session_id AND s.owner = current_user "
            "WHERE NOT EXISTS (SELECT 1 FROM sessionref.sessionref_vectors v WHERE v.session_id = m.session_id "
            "AND v.position = m.position AND v.model = %(model)s)",
            {"model": self.embedder.name},
        )
        self.seen = MeaningProgress(int(rows[0][0]), self.seen.done)
        return self.seen

    # -- searching -------------------------------------------------------------------------------------

    def ask(self, question: str) -> Vectors | None:
        """The question's vector (``None`` when the embedder fails: words answer alone)."""
        asked = self._asked
        if asked is not None and asked[0] == question:
            return asked[1]
        try:
            vector: Vectors = self.embedder.embed([question])[0]
        except MeaningUnavailable as problem:
            self.failure = problem
            return None
        self._asked = (question, vector)
        return vector

    def scores(self, question: Vectors, session_ids: Iterable[str]) -> dict[str, MeaningMatch]:
        """Each session's best message by meaning (sessions without vectors are left out)."""
        wanted = [session_id for session_id in session_ids if "\x00" not in session_id]
        try:
            rows = self._rows(
                "SELECT session_id, position, vector FROM sessionref.sessionref_vectors "
                "WHERE model = %(model)s AND dims = %(dims)s AND session_id = ANY(%(sessions)s::text[])",
                {"model": self.embedder.name, "dims": len(question), "sessions": wanted},
            )
        except MeaningUnavailable as problem:
            self.failure = problem
            return {}
        return best_matches(rows, question)

    def nearest(
        self, question: Vectors, count: int, among: Collection[str], deadline: float
    ) -> tuple[list[MeaningMatch], bool]:
        """The ``count`` sessions of ``among`` nearest the question, nearest first; whether every
        vector the role may read was scored before ``deadline``."""
        best: dict[str, MeaningMatch] = {}
        after: tuple[str, int] = ("", -1)
        complete = True
        while True:
            try:
                rows = self._rows(
                    "SELECT session_id, position, vector FROM sessionref.sessionref_vectors "
                    "WHERE model = %(model)s AND dims = %(dims)s "
                    "AND (session_id, position) > (%(session)s, %(position)s) "
                    "ORDER BY session_id, position LIMIT %(limit)s",
                    {
                        "model": self.embedder.name,
                        "dims": len(question),
                        "session": after[0],
                        "position": after[1],
                        "limit": SCAN_ROWS,
                    },
                )
            except MeaningUnavailable as problem:
                self.failure = problem
                return [], False
            if not rows:
                break
            after = (rows[-1][0], int(rows[-1][1]))
            for session_id, match in best_matches([row for row in rows if row[0] in among], question).items():
                known = best.get(session_id)
                if known is None or match.cosine > known.cosine:
                    best[session_id] = match
            if time.perf_counter() > deadline:
                complete = False
                break
        return sorted(best.values(), key=lambda match: -match.cosine)[:count], complete

    def message(self, session_id: str, position: int) -> tuple[str, str] | None:
        """(role, text) of one message."""
        try:
            rows = self._rows(
                "SELECT role, body FROM sessionref.sessionref_messages WHERE session_id = %(session)s "
                "AND position = %(position)s",
                {"session": session_id, "position": position},
            )
        except MeaningUnavailable:
            return None
        return (str(rows[0][0]), str(rows[0][1])) if rows else None


class _Link:
    """One connection to the database, opened when first needed (again after it broke), one query
    at a time."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._connection: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()

    def rows(self, statement: str, parameters: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of one query.

        Raises:
            MeaningUnavailable: the database refused or cannot be reached.
        """
        with self._lock:
            try:
                if self._connection is None or self._connection.closed or self._connection.broken:
                    self._connection = connect(self._conninfo, autocommit=True, connect_timeout=5)
                    self._connection.execute(f"SET statement_timeout = {QUERY_TIMEOUT_MS}")
                cursor = self._connection.execute(statement, parameters)
                return cursor.fetchall() if cursor.description is not None else []
            except psycopg.Error as error:
                raise MeaningUnavailable(f"search by meaning failed ({server_words(error)})") from error

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
