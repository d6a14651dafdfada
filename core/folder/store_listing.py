"""``StoreListing``: what ``JsonlSessionStore.list_sessions`` answers, kept between calls.

A listing costs one ``lstat`` per session file (``SessionFiles.walk``), plus one header read per file
whose revision is new to this process and to the listing cache. A store whose host reports every
change (a file-system watcher, ``note_changes``) pays less: only the reported folders are looked at
(``SessionFiles.update``), and what changed is applied to the kept listing, so noticing one session in
a store of 100,000 costs a few system calls and a binary search, not a pass over 100,000 records.
Whatever the delta cannot express exactly (a problem appearing or going, a duplicate id, a header
that no longer reads) falls back to the full computation, which is the definition.
"""

from __future__ import annotations

import bisect
import builtins
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from core.errors import SessionQueryError
from core.files import Revision
from core.folder.jsonl_listing import Changes, SessionFiles
from core.folder.listing_cache import load_listing, save_listing
from core.serialization import js_json_stringify
from core.sessions.models import SessionHeader, SessionRecord, StoreProblem
from core.sessions.query import listing_order_key, sort_listing

LISTING_SAVE_EVERY = 30.0
"""Seconds between two writes of the listing cache (a listing that read new headers marks it stale;
``close`` writes a stale one)."""

ReadRecord = Callable[[str], SessionRecord]
"""Reads a session file's header into its record (raises ``SessionQueryError`` or ``OSError``)."""

Owned = Mapping[str, SessionHeader]
"""The sessions the store writes: id -> header (their files may not exist yet)."""


@dataclass
class _Listed:
    """The last listing and what applying a change to it needs."""

    fingerprint: object
    """The files and revisions it was computed from (``None`` once changes were applied to it)."""
    owned: tuple[str, ...]
    records: list[SessionRecord]
    """Newest first (``listing_order_key``)."""
    problems: list[StoreProblem]
    revisions: dict[str, Revision]
    path_records: dict[str, SessionRecord]
    """Listed file -> its record (duplicates and unreadable files are not here)."""
    problem_paths: set[str]
    """Files listed as a problem (unreadable header, duplicate id): a change to one means a full pass."""
    duplicated: set[str]
    """Ids more than one file holds."""


class StoreListing:
    """The listing of one JSONL store root (see the module docstring).

    Args:
        files: where the session files are.
        root: the store folder (the listing cache lives there).
        compression: the store's compression (the cache is per compression).
        read_record: reads one session file's header.
    """

    def __init__(self, files: SessionFiles, root: Path, compression: str, read_record: ReadRecord) -> None:
        self._files = files
        self._root = root
        self._compression = compression
        self._read_record = read_record
        self.watched = False
        """Set by a host that reports every change under the root through ``note_changes``."""
        self.saving = True
        """Whether listings are remembered in the listing cache (off: nothing is ever written)."""
        self._pending: set[str] = set()
        self._walk_due = False
        self._lock = threading.Lock()
        self._headers: dict[str, tuple[Revision, SessionRecord]] = {}
        """Session file -> the revision its header was read at and its record (the listing cache)."""
        self._listed: _Listed | None = None
        self._dirty = False
        self._saved_at: float | None = None
        """When the listing cache was last written (``None``: not even read yet)."""

    # -- what changed -----------------------------------------------------------------------------

    def note_changes(self, paths: Iterable[str] | None) -> None:
        """See ``JsonlSessionStore.note_changes``."""
        with self._lock:
            if paths is None:
                self._walk_due = True
            else:
                self._pending.update(paths)

    def changes_pending(self) -> bool:
        """Whether ``note_changes`` reported anything the last listing has not looked at."""
        return self._walk_due or bool(self._pending)

    def _look(self) -> Changes | None:
        """Look at the files: what changed since the last look, or ``None`` after a full walk."""
        with self._lock:
            pending, self._pending = self._pending, set()
            walk = not self._files.walked or not self.watched or self._walk_due
            self._walk_due = False
        if walk:
            self._files.walk()
            return None
        return self._files.update(pending) if pending else {}

    # -- listing ----------------------------------------------------------------------------------

    def list(self, owned: Owned) -> tuple[list[SessionRecord], list[StoreProblem]]:
        """Every readable session (newest first) and the problems met; see the module docstring."""
        self._load_cache()
        changes = self._look()
        owned_key = tuple(owned)
        listed = self._listed
        if changes is None or listed is None or listed.owned != owned_key or not self._apply(listed, changes, owned):
            listed = self._full(owned, owned_key)
        if self.saving and self._dirty and time.monotonic() - (self._saved_at or 0.0) >= LISTING_SAVE_EVERY:
            self.save()
        return list(listed.records), list(listed.problems)

    def remembered(self, owned: Owned) -> tuple[builtins.list[SessionRecord], builtins.list[StoreProblem]] | None:
        """What the listing cache remembers, before any file is looked at: a first paint's listing
        (``None`` once a listing was made, or without a cache). The next ``list`` walks the files
        and answers what is there now."""
        if self._listed is not None:
            return None
        self._load_cache()
        if not self._headers:
            return None
        files = [(path, revision) for path, (revision, _) in self._headers.items()]
        listed = self._full(owned, tuple(owned), files)
        listed.fingerprint = None  # not what the files say: the next listing computes again
        return list(listed.records), list(listed.problems)

    def _load_cache(self) -> None:
        if self._saved_at is None:
            for path, entry in load_listing(self._root, self._compression).items():
                self._headers.setdefault(path, entry)
            self._saved_at = 0.0

    def revisions(self) -> Mapping[str, Revision]:
        """Session id -> file revision as last listed: the same object until a listing sees a change."""
        return self._listed.revisions if self._listed is not None else {}

    def save(self) -> None:
        """Write the listing cache (of the files last listed), in listing order: the next start
        builds its records in the order it lists and shows them (newest first), so walking them
        reads memory in order, and sorting them finds them sorted."""
        listed = self._listed
        paths: Iterable[str] = (
            list(self._headers)
            if listed is None
            else sorted(listed.path_records, key=lambda path: listing_order_key(listed.path_records[path]))
        )
        save_listing(self._root, self._compression, self._headers, paths)
        self._dirty = False
        self._saved_at = time.monotonic()

    @property
    def dirty(self) -> bool:
        """Whether headers were read that the listing cache does not hold yet (and it is kept)."""
        return self._dirty and self.saving

    def _record(self, path: str, revision: Revision) -> SessionRecord:
        cached = self._headers.get(path)
        if cached is not None and cached[0] == revision:
            return cached[1]
        self._dirty = True
        record = self._read_record(path)
        self._headers[path] = (revision, record)
        return record

    def _full(
        self, owned: Owned, owned_key: tuple[str, ...], files: builtins.list[tuple[str, Revision]] | None = None
    ) -> _Listed:
        problems: list[StoreProblem] = []
        if files is None:
            files = self._files.files(problems)
            if len(self._headers) > len(files):
                self._forget_gone(files)
        fingerprint = (files, owned_key, len(problems))
        listed = self._listed
        if listed is not None and listed.fingerprint == fingerprint:
            return listed  # the same files at the same revisions: the same answer
        records: dict[str, SessionRecord] = {}
        revisions: dict[str, Revision] = {}
        path_records: dict[str, SessionRecord] = {}
        problem_paths: set[str] = set()
        duplicated: set[str] = set()
        id_paths: dict[str, str] = {}
        headers = self._headers
        for path, revision in self._in_known_order(files):
            cached = headers.get(path)  # (``_record``'s common case, inline: 100,000 calls, 40 ms)
            if cached is not None and cached[0] == revision:
                record = cached[1]
            else:
                try:
                    record = self._record(path, revision)
                except (SessionQueryError, OSError) as error:
                    problems.append(StoreProblem(Path(path), str(error)))
                    problem_paths.add(path)
                    continue
            session_id = record.header.id
            held = id_paths.get(session_id)
            if held is not None:
                # The same id in two files: one is listed, the same one whatever order the folders
                # are read in (the one this store writes, else the first path), the other reported.
                duplicated.add(session_id)
                if _rank(path, record, owned) > _rank(held, path_records[held], owned):
                    held = path
                else:
                    del path_records[held]
                problems.append(
                    StoreProblem(Path(held), f"{held}: duplicate session id {js_json_stringify(session_id)}")
                )
                problem_paths.add(held)
                if held == path:
                    continue
            if session_id in owned:
                record = _live(record.header, persisted=True)
            records[session_id] = record
            revisions[session_id] = revision
            path_records[path] = record
            id_paths[session_id] = path
        for session_id, header in owned.items():
            if session_id not in records:
                records[session_id] = _live(header, persisted=False)
        ordered = list(records.values())
        sort_listing(ordered)
        if listed is not None and listed.revisions == revisions:
            revisions = listed.revisions  # no file changed: the same object, as ``revisions`` promises
        self._listed = _Listed(
            fingerprint,
            owned_key,
            ordered,
            problems,
            revisions,
            path_records,
            problem_paths,
            duplicated,
        )
        return self._listed

    def _in_known_order(self, files: builtins.list[tuple[str, Revision]]) -> Iterable[tuple[str, Revision]]:
        """``files`` with the ones whose headers are known first, in the order they were read (the
        listing cache's: newest first), then the new ones. Records are visited in the order they
        were built, which is the order they sit in memory: with 100,000 of them, walking them in
        the folders' order instead costs more in cache misses than all the rest of the pass."""
        if not self._headers:
            return files
        walked = dict(files)
        known = [(path, walked.pop(path)) for path in self._headers if path in walked]
        known.extend(walked.items())
        return known

    def _forget_gone(self, files: builtins.list[tuple[str, Revision]]) -> None:
        """Drop the headers of files no longer there (the cache then forgets them too)."""
        present = {path for path, _ in files}
        gone = [path for path in self._headers if path not in present]
        for path in gone:
            del self._headers[path]
        self._dirty = self._dirty or bool(gone)

    def _apply(self, listed: _Listed, changes: Changes, owned: Owned) -> bool:
        """Apply changed files to the kept listing; ``False`` when only a full pass can say."""
        if not changes:
            return True
        if any(path in listed.problem_paths for path in changes):
            return False
        # First everything that can fail (header reads), then the edits: never half applied.
        removed: list[tuple[str | None, SessionRecord]] = []
        added: list[tuple[str, SessionRecord, Revision]] = []
        for path, revision in changes.items():
            old = listed.path_records.get(path)
            if old is not None and old.header.id in listed.duplicated:
                return False  # a duplicate may take its place
            if revision is None:
                if old is not None:
                    if old.header.id in owned:
                        return False  # the live record stays, no longer persisted
                    removed.append((path, old))
                continue
            try:
                record = self._record(path, revision)
            except (SessionQueryError, OSError):
                return False
            if old is not None and old.header == record.header:
                added.append((path, old, revision))  # the file grew: only its revision changes
                continue
            if old is not None:
                if old.header.id in owned:
                    return False  # a session this store writes, rewritten elsewhere
                removed.append((path, old))
            session_id = record.header.id
            if session_id in listed.revisions:
                return False  # a duplicate (or a moved file): the full pass says which is listed
            if session_id in owned:
                if owned[session_id] != record.header:
                    return False
                # The file of a session this store writes appeared: the same live record, now persisted.
                removed.append((None, _live(owned[session_id], persisted=False)))
                record = _live(record.header, persisted=True)
            added.append((path, record, revision))
        if len({record.header.id for _, record, _ in added}) < len(added):
            return False
        records = listed.records
        revisions = dict(listed.revisions)  # a new object: ``revisions`` says "changed" by identity
        for gone, old in removed:
            at = bisect.bisect_left(records, listing_order_key(old), key=listing_order_key)
            del records[at]
            if gone is not None:
                del revisions[old.header.id], listed.path_records[gone]
                if changes[gone] is None:
                    self._headers.pop(gone, None)
                    self._dirty = True  # the cache must not remember it
        for path, record, revision in added:
            if path not in listed.path_records:
                records.insert(bisect.bisect_left(records, listing_order_key(record), key=listing_order_key), record)
            revisions[record.header.id] = revision
            listed.path_records[path] = record
        listed.revisions = revisions
        listed.fingerprint = None  # the next full pass computes again
        return True


def _rank(path: str, record: SessionRecord, owned: Owned) -> tuple[bool, str]:
    """Which of two files holding one id is listed: the lower rank."""
    mine = owned.get(record.header.id)
    return (mine is None or mine.cwd != record.header.cwd, path)


def _live(header: SessionHeader, *, persisted: bool) -> SessionRecord:
    """The record of a session this store writes."""
    return SessionRecord.model_construct(header=header, live=True, persisted=persisted)
