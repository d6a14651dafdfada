"""The listing side of ``JsonlSessionStore``: every session's header from one ``lstat`` per file
(``StoreListing`` keeps what it saw, and the listing cache what a new process starts from), and the
changes a file-system watcher reports. A base of the store, which owns the files it writes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from core.collector import collector_paused
from core.sessions.jsonl_layout import Compression
from core.sessions.jsonl_listing import Revision, StoreProblem
from core.sessions.models import SessionHeader, SessionRecord
from core.sessions.store_listing import StoreListing
from core.sessions.watch import ChangeCallback, StoreWatcher


class ListedSessions:
    """Listing a store's folder, and hearing what changed in it."""

    root: Path
    compression: Compression
    problems: list[StoreProblem]
    _listing: StoreListing
    _owned: dict[str, Any]
    """The sessions the store writes, by id (each with its ``session``); listed from memory."""

    @property
    def watched(self) -> bool:
        """Set by a host that reports every change under the root through ``note_changes``."""
        return self._listing.watched

    @watched.setter
    def watched(self, value: bool) -> None:
        self._listing.watched = value

    def watcher(self, on_change: ChangeCallback) -> StoreWatcher:
        """A watcher of the root's file-system events (inotify), reporting to ``on_change``."""
        return StoreWatcher(self.root, on_change)

    def note_changes(self, paths: Iterable[str] | None) -> None:
        """Say what changed under the root (paths a file-system watcher reported), or ``None`` when
        anything may have (the watcher lost events or just started): the next listing looks at
        those paths only, or at everything. Safe to call from any thread.

        Only a store whose ``watched`` is set relies on it; others look at everything each time.
        """
        self._listing.note_changes(paths)

    def changes_pending(self) -> bool:
        """Whether ``note_changes`` reported anything the last listing has not looked at."""
        return self._listing.changes_pending()

    async def list_sessions(self) -> list[SessionRecord]:
        """Every readable session, newest first; unreadable files are reported in ``self.problems``.

        Only header frames are read, and only for files whose revision changed since the last call
        (or, in a new process, since the listing cache was written); with a watcher reporting
        changes (``note_changes``), only the reported folders are looked at.
        """
        owned = {session_id: owned.session.header for session_id, owned in self._owned.items()}
        with collector_paused():
            records, self.problems = self._listing.list(owned)
        return records

    def remembered_sessions(self) -> list[SessionRecord] | None:
        """The listing as the listing cache remembers it, without looking at any file: what a host
        shows first, before ``list_sessions`` (which then answers what is there now). ``None`` when
        there is no cache or a listing was already made."""
        owned = {session_id: owned.session.header for session_id, owned in self._owned.items()}
        with collector_paused():
            remembered = self._listing.remembered(owned)
        if remembered is None:
            return None
        records, self.problems = remembered
        return records

    def listed_revisions(self) -> Mapping[str, Revision]:
        """Session id -> file revision, as the last ``list_sessions`` saw them.

        The same object until a listing sees any file change, so hosts can tell "nothing changed"
        by identity.
        """
        return self._listing.revisions()

    def listed_revision(self, header: SessionHeader) -> Revision | None:
        """The file revision (device, inode, size, mtime) the last ``list_sessions`` saw for a session.

        Hosts use it to keep per-session caches (titles) fresh without reading logs again.
        """
        return self._listing.revisions().get(header.id)
