"""The PostgreSQL store's listing, kept between calls and brought up to date by what changed.

Every change to a session (an append, a title, a share or unshare: the schema's triggers) gives it a
new revision from one sequence. A listing first asks for two numbers, the newest revision and the
count of sessions this role may see (one aggregate, row-level security applied); when both are as
last time nothing is fetched and the same list comes back (hosts compare it by identity). When the
newest revision moved, only the rows past the last one are fetched and merged; when the count then
disagrees (a session deleted or no longer shared), the whole listing is read again.

A teammate owns their rows and can write anything into them with plain SQL. A row whose header
does not parse, names another id or is larger than a file's header may be (256 KiB, as the folder
store reads) is not listed but reported in ``problems``, with its code, like a damaged file; its
title is read at most ``TITLE_CHARS`` long. Neither stops the listing of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import SessionQueryError
from core.folder.jsonl_header import HEADER_LIMIT, SESSION_QUERY_CORRUPT, header_from_line
from core.serialization import js_json_stringify
from core.sessions.models import SessionHeader, SessionRecord, StoreProblem, trusted_record
from core.sessions.query import sort_listing

Run = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
"""Runs one read statement and returns its rows (errors are the caller's)."""

TITLE_CHARS = 1024
"""A listed title is read at most this long (a display value; the session's own log holds the title)."""
_COLUMNS = (
    f"SELECT id, CASE WHEN octet_length(header) <= {HEADER_LIMIT} THEN header END, octet_length(header), "
    f"owner, revision, left(title, {TITLE_CHARS}) FROM sessionref.sessionref_sessions"
)


@dataclass(frozen=True, slots=True)
class _Row:
    line: str
    header: SessionHeader
    owner: str
    revision: int
    title: str | None


class DatabaseListing:
    """The kept listing of one store (see the module docstring); not thread-safe (the store locks)."""

    def __init__(self, user: str) -> None:
        self.user = user
        self._rows: dict[str, _Row] = {}
        self._bad: dict[str, StoreProblem] = {}
        """Rows that cannot be listed (see the module docstring), by id."""
        self._probe: tuple[int, int] | None = None
        self._records: list[SessionRecord] = []
        self._live: frozenset[str] = frozenset()
        self.revisions: dict[str, int] = {}
        """Session id -> revision; a new object only when something changed."""
        self.titles: dict[str, tuple[str, str | None]] = {}
        """Session id -> (revision key, title); a new object only when something changed."""

    def current(self, run: Run, live: Collection[str], unsaved: list[SessionHeader]) -> list[SessionRecord]:
        """The listing now: ``live`` are the ids this store writes, ``unsaved`` the headers of
        sessions it writes that have no row yet."""
        newest, count = run("SELECT coalesce(max(revision), 0), count(*) FROM sessionref.sessionref_sessions", ())[0]
        probe = (int(newest), int(count))
        live_now = frozenset(live) | {header.id for header in unsaved}
        if probe == self._probe and live_now == self._live:
            return self._records
        shape_changed = live_now != self._live
        if probe != self._probe:
            if self._probe is not None and probe[0] >= self._probe[0]:
                shape_changed |= self._merge(run(_COLUMNS + " WHERE revision > %s", (self._probe[0],)))
            if len(self._rows) + len(self._bad) != probe[1] or self._probe is None or probe[0] < self._probe[0]:
                self._rows, self._bad = {}, {}
                self._merge(run(_COLUMNS, ()))
                shape_changed = True
            self._probe = probe
            self.revisions = {session_id: row.revision for session_id, row in self._rows.items()}
            self.titles = {session_id: (str(row.revision), row.title) for session_id, row in self._rows.items()}
        self._live = live_now
        if not shape_changed:
            # Sessions only grew (new revisions, titles): the records (header, owner, live) are as they were.
            return self._records
        records = [
            trusted_record(row.header, session_id in live_now, True, None if row.owner == self.user else row.owner)
            for session_id, row in self._rows.items()
        ]
        records += [trusted_record(header, True, False) for header in unsaved if header.id not in self._rows]
        sort_listing(records)
        self._records = records
        return self._records

    @property
    def problems(self) -> list[StoreProblem]:
        """The rows that cannot be listed, each with why (in id order)."""
        return [self._bad[session_id] for session_id in sorted(self._bad)]

    def _merge(self, rows: list[tuple[Any, ...]]) -> bool:
        """Take fetched rows; returns whether a record changes (a new session, header or owner, or a
        row that can no longer be listed, or can again)."""
        shape_changed = False
        for session_id, line, size, owner, revision, title in rows:
            known = self._rows.get(session_id)
            # A header never changes; parse it only when the text is new (a session re-created).
            same = known is not None and known.line == line and known.owner == owner
            if same and known is not None:
                header = known.header
            else:
                try:
                    header = listed_header(session_id, line, int(size))
                except SessionQueryError as error:
                    self._rows.pop(session_id, None)
                    shape_changed |= self._bad.get(session_id) is None or known is not None
                    self._bad[session_id] = StoreProblem(where(session_id), error.message, error.code)
                    continue
            shape_changed |= not same or self._bad.pop(session_id, None) is not None
            self._rows[session_id] = _Row(line, header, owner, int(revision), title)
        return shape_changed

    def forget(self) -> None:
        """Read everything again next time (after a failure)."""
        self._probe = None


def where(session_id: str) -> Path:
    """How a session of the database is named in errors and problems."""
    return Path(f"postgresql:{js_json_stringify(session_id)}")


def listed_header(session_id: str, line: str | None, size: int) -> SessionHeader:
    """The header a session row's ``header`` column holds, checked as a file's header is.

    Raises:
        SessionQueryError: ``SESSION_QUERY_CORRUPT_SESSION``: too large, not a header, or naming
            another session than its row.
    """
    if line is None:
        raise SessionQueryError(
            f"{where(session_id)}: its header is {size:,} bytes, over the {HEADER_LIMIT:,} a header is read",
            SESSION_QUERY_CORRUPT,
        )
    header = header_from_line(line, where(session_id))
    if header.id != session_id:
        raise SessionQueryError(
            f"{where(session_id)}: its header names another session ({js_json_stringify(header.id)})",
            SESSION_QUERY_CORRUPT,
        )
    return header
