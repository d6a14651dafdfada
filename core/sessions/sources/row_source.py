"""What the sources whose sessions are rows of another tool's database share:
a listing kept while the tool's data is unchanged, each session read once per revision, busy said
as busy, a record of a shape no version writes read as that session's problem, never a traceback.

A source says how to list (``_list``: every session's header, title and revision, and whatever it
needs to read it again) and how to read one (``_load``); this base keeps the rest.
"""

from __future__ import annotations

import os
import threading
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import SessionQueryError
from core.files import Revision
from core.sessions.models import SessionHeader, SessionRecord, StoreProblem, SurfaceSnapshot, TitleSnapshot
from core.sessions.query import ReadsAsQuery, sort_listing
from core.sessions.session import not_found
from core.sessions.sources.files import ExternalSession, cannot_read, surface_of, title_of
from core.sessions.sources.sqlite_reads import ReadOnlyDatabase, SourceBusy


@dataclass
class Listed:
    """One listed session: its header, its own title (``None``: the first prompt), the revision it
    was listed at, where it is read from (the source's own), and the session once read."""

    header: SessionHeader
    title: str | None
    revision: Revision
    where: Any = None
    session: ExternalSession | None = None


class RowSource(ReadsAsQuery):
    """A read-only source of sessions kept as rows (see the module docstring)."""

    prefix = ""
    name = ""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.problems: list[StoreProblem] = []
        self._lock = threading.RLock()
        self._listed: dict[str, Listed] = {}
        self._records: list[SessionRecord] | None = None
        self._seen: object = None
        self._busy = False

    @abstractmethod
    def _stamp(self) -> object:
        """What changes when the tool writes (``None``: nothing to read, or read every time)."""

    @abstractmethod
    def _list(self) -> tuple[list[Listed], list[StoreProblem]]:
        """Every session to list and the problems met.

        Raises:
            SourceBusy: the tool holds its database; what was listed stays, for now.
        """

    @abstractmethod
    def _load(self, entry: Listed) -> ExternalSession:
        """One listed session, read now.

        Raises:
            OSError: it cannot be read (gone meanwhile).
            SourceBusy: the tool holds its database.
        """

    def listing(self) -> list[SessionRecord]:
        """Every listed session, newest first; the same list while the tool's data did not change."""
        with self._lock:
            stamp = self._stamp()
            if stamp is not None and stamp == self._seen and self._records is not None:
                return self._records
            self._busy = False
            try:
                found, problems = self._list()
            except SourceBusy as error:
                self._busy = True
                self.problems = [StoreProblem(self.root, str(error), error.code)]
                return self._records if self._records is not None else []
            listed: dict[str, Listed] = {}
            for entry in found:
                known = self._listed.get(entry.header.id)
                if known is not None and known.revision == entry.revision:
                    entry.session = known.session
                listed[entry.header.id] = entry
            records = [
                SessionRecord.model_construct(header=entry.header, live=False, persisted=True)
                for entry in listed.values()
            ]
            sort_listing(records)
            self._listed, self._records, self.problems = listed, records, problems
            self._seen = stamp if not problems else None  # (a problem: read again next time)
            return records

    def revision(self, session_id: str) -> Revision | None:
        entry = self._listed.get(session_id)
        return entry.revision if entry is not None else None

    def session(self, session_id: str) -> ExternalSession:
        """The session as read now (cached by its revision).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``, ``SESSION_QUERY_SOURCE_BUSY`` or
                ``SESSION_QUERY_INVALID_SURFACE``.
        """
        with self._lock:
            self.listing()
            entry = self._listed.get(session_id)
            if entry is None:
                if self._busy:
                    raise SourceBusy(self.name)
                raise not_found(session_id)
            if entry.session is not None:
                return entry.session
            try:
                session = self._load(entry)
            except SessionQueryError:
                raise
            except OSError as error:
                raise not_found(session_id) from error
            except Exception as error:  # rows of a shape no version of the tool writes
                self.problems = [*self.problems, StoreProblem(self.root, f"{session_id}: cannot be read")]
                raise cannot_read(session_id, error) from error
            if entry.title is not None:
                session.title = entry.title
            entry.session = session
            return session

    def surface(self, session_id: str) -> SurfaceSnapshot:
        return surface_of(self.session(session_id))

    def title(self, session_id: str) -> TitleSnapshot | None:
        return title_of(self.session(session_id))


class DatabaseSource(RowSource):
    """A row source whose sessions are rows of one SQLite database at ``database_at`` under its root
    (Goose's, llm's, Cursor's, Zed's, Kiro CLI's): it reads the database as ``sqlite_reads`` says, and
    its listing changes when the database does."""

    database_at: tuple[str, ...] = ()
    """The database's path under the root, part by part."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._database = ReadOnlyDatabase(self.root.joinpath(*self.database_at), self.name)

    def _stamp(self) -> object:
        return self._database.stamp()

    def _present(self) -> bool:
        """Whether the database is there to read: a regular file, neither it nor a folder of the tool's
        between the root and it a link (no link leads out of the tool's folder; the root given may be one)."""
        path = self._database.path
        inside = len(self.database_at) > 1 and os.path.islink(path.parent)
        return not inside and not os.path.islink(path) and path.is_file()
