"""A real store on disk with a BodyIndex kept in line with it, for the search tests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core import BodyIndex, JsonlSessionStore, index_path_beside, indexed_session, revision_key
from core.search.finder import SessionSearch


class Target:
    """The session the picker is open in."""

    def __init__(self, cwd: str | None = "/work/app", session_id: str = "target") -> None:
        self.id = session_id
        self.cwd = cwd


class Indexed:
    """A store on disk, its listing, its titles and a body index kept in line with it."""

    def __init__(self, root: Path, *, index_path: Path | None = None, shards: int = 2, embedder: Any = None) -> None:
        self.root = root
        self.writer = JsonlSessionStore(root)
        self.reader = JsonlSessionStore(root)
        path = index_path if index_path is not None else index_path_beside(root)
        self.index = BodyIndex(path, shards=shards, embedder=embedder)
        self.search = SessionSearch(self.index)
        self.records: list[Any] = []
        self.titles: dict[str, str | None] = {}

    def sources(self) -> list[tuple[str, str]]:
        self.records = asyncio.run(self.reader.list_sessions())
        return [(r.header.id, revision_key(self.reader.listed_revision(r.header))) for r in self.records]

    def read(self, session_id: str) -> Any:
        header = next(r.header for r in self.records if r.header.id == session_id)
        stored = self.reader.read_stored(header)
        return indexed_session(stored.revision, stored.surface, stored.title)

    def sync(self) -> Any:
        self.writer.close()
        report = self.index.sync(self.sources(), self.read)
        if self.index.meaning is not None:
            self.index.meaning.embed_pending()  # as the keeper does after the words
        self.titles = {session_id: title for session_id, (_rev, title) in self.index.titles().items()}
        return report

    def find(self, query: str, *, target: Target | None = None, limit: int = 50, **options: Any) -> Any:
        return self.search.search(
            target or Target(), query, records=self.records, titles=self.titles, limit=limit, **options
        )

    def ids(self, query: str, **options: Any) -> list[str]:
        return [hit.candidate.session_id for hit in self.find(query, **options).hits]

    def session(self, session_id: str, *, cwd: str | None = "/work/app", created_at: int = 0) -> Any:
        return self.writer.create(session_id, cwd=cwd, created_at=created_at)


def title(session: Any, words: str) -> None:
    session.append("session/title", {"title": words, "messageSeqs": [], "source": {"kind": "fallback"}})
