"""Reading a folder store whatever encoding its files have: each file says its own by its name
(``session.jsonl.zstd``, ``session.jsonl``), and a folder may mix both.

A ``JsonlSessionStore`` is opened with one encoding and lists a file of the other as a problem
(``SESSION_QUERY_WRONG_ENCODING``); a reader that moves a whole folder (``sessionref import``, the
existing side of ``export``) wants every session in it. ``EitherEncoding`` lists both, drops the
problems one encoding reports about files the other reads, and settles a session found in both
(the same id in two files): read once when both hold the same events, else left out and reported,
never one silently preferred.
"""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from core.errors import SessionQueryError
from core.folder.jsonl_layout import ENCODINGS, SESSION_QUERY_WRONG_ENCODING, Compression
from core.folder.jsonl_store import JsonlSessionStore
from core.serialization import js_json_stringify
from core.sessions.models import SessionEvent, SessionHeader, SessionRecord, StoreProblem
from core.sessions.session import not_found

SESSION_QUERY_ENCODING_CONFLICT = "SESSION_QUERY_ENCODING_CONFLICT"
"""The same session id in a zstd and a plain file that hold different events."""


@dataclass(frozen=True)
class EncodedRecord:
    """A listed session and the encoding of the file it was listed from."""

    record: SessionRecord
    compression: Compression


class EitherEncoding:
    """Lists and reads the sessions of the folder store at ``root`` in both encodings, read-only.

    ``read_log`` may be called from several threads: each thread reads through stores of its own
    (a store keeps a cache of parsed logs that is not shared across threads).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.problems: list[StoreProblem] = []
        self._where: dict[str, Compression] = {}
        self._stores: dict[tuple[int, Compression], JsonlSessionStore] = {}

    def _store(self, compression: Compression) -> JsonlSessionStore:
        key = (threading.get_ident(), compression)
        store = self._stores.get(key)
        if store is None:
            store = self._stores[key] = JsonlSessionStore(self.root, compression=compression)
        return store

    def list_sessions(self) -> list[EncodedRecord]:
        """Every readable session of either encoding, newest first; what cannot be read (or is found
        in both encodings with different events) is in ``problems``."""
        found: dict[str, EncodedRecord] = {}
        problems: list[StoreProblem] = []
        conflicts: set[str] = set()
        for compression in ENCODINGS:
            store = self._store(compression)
            records = asyncio.run(store.list_sessions())
            # A problem both encodings see (a flat file, a symlink) is said once.
            told = {problem.path for problem in problems}
            problems.extend(
                problem
                for problem in store.problems
                if problem.code != SESSION_QUERY_WRONG_ENCODING and problem.path not in told
            )
            for record in records:
                session_id = record.header.id
                first = found.get(session_id)
                if first is None:
                    found[session_id] = EncodedRecord(record, compression)
                elif not self._same_events(session_id, first.compression, compression):
                    conflicts.add(session_id)
                    problems.append(self._conflict(session_id))
        listed = [entry for session_id, entry in found.items() if session_id not in conflicts]
        listed.sort(key=lambda entry: entry.record.header.created_at, reverse=True)
        self._where = {entry.record.header.id: entry.compression for entry in listed}
        self.problems = problems
        return listed

    def read_log(self, session_id: str) -> tuple[SessionHeader, list[SessionEvent]]:
        """Every event of a listed session, from the file it was listed from.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` for a session the last listing did
                not list; ``SESSION_QUERY_CORRUPT_SESSION`` or ``SESSION_QUERY_UNSAFE_PATH`` from the read.
        """
        compression = self._where.get(session_id)
        if compression is None:
            raise not_found(session_id)
        return self._store(compression).read_log(session_id)

    def find(self, session_id: str) -> tuple[SessionHeader, list[SessionEvent]] | None:
        """A session of either encoding by id, without a listing (``None`` when neither has it).

        Raises:
            SessionQueryError: ``SESSION_QUERY_ENCODING_CONFLICT`` when both hold it with different
                events; the read's own errors.
        """
        logs = {}
        for compression in ENCODINGS:
            store = self._store(compression)
            if store.path_of(session_id) is not None:
                logs[compression] = store.read_log(session_id)
        if len(logs) == 2 and _wire(logs["zstd"][1]) != _wire(logs["none"][1]):
            raise SessionQueryError(self._conflict(session_id).message, SESSION_QUERY_ENCODING_CONFLICT)
        return next(iter(logs.values()), None)

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def _same_events(self, session_id: str, first: Compression, second: Compression) -> bool:
        try:
            return _wire(self._store(first).read_log(session_id)[1]) == _wire(
                self._store(second).read_log(session_id)[1]
            )
        except SessionQueryError:
            return False

    def _conflict(self, session_id: str) -> StoreProblem:
        paths = [str(self._store(compression).path_of(session_id)) for compression in ENCODINGS]
        return StoreProblem(
            Path(paths[1]),
            f"session {js_json_stringify(session_id)} is both {paths[0]} and {paths[1]}, with different events; "
            "neither was read (keep the one you want, remove the other)",
            SESSION_QUERY_ENCODING_CONFLICT,
        )


def _wire(events: list[SessionEvent]) -> list[object]:
    return [event.to_wire() for event in events]
