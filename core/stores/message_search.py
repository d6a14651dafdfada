"""The one way a host (the app, ``sessionref mcp``) opens a store's message index: the store's own
(a database keeps its index current with every append), else the SQLite index beside a folder store
(in memory for a memory store), which the host keeps current with an ``IndexKeeper``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from core.search.body_index import BodyIndex, index_path_beside
from core.search.index_keeper import BuilderTarget
from core.search.meaning import Embedder
from core.search.message_index import MessageIndex
from core.stores.hosted import HostedStore, OwnIndex


@dataclass(frozen=True)
class StoreIndex:
    """A store's message index as a host holds it: ``own`` (the store's; the host closes it) or
    ``body`` (the host's, kept by its ``IndexKeeper``, which a ``builder`` process may build for a
    folder store); neither when message search is off."""

    own: OwnIndex | None = None
    body: BodyIndex | None = None
    builder: BuilderTarget | None = None

    @property
    def searched(self) -> MessageIndex | None:
        """What a search reads."""
        return self.own if self.own is not None else self.body


def open_message_index(
    store: HostedStore,
    *,
    body_search: bool,
    embedder: Embedder | None,
    index_path: str | os.PathLike[str] | None = None,
) -> StoreIndex:
    """``store``'s message index (not opened yet: its keeper's first run opens a body index).
    ``index_path``: another place for a folder store's index than beside it."""
    if not body_search:
        return StoreIndex()
    own = store.message_index()
    if own is not None:
        own.use_meaning(embedder)
        return StoreIndex(own=own)
    location = store.location
    if location is None or location.root is None:
        return StoreIndex(body=BodyIndex(None, embedder=embedder))
    root = location.root
    path = index_path if index_path is not None else index_path_beside(root)
    return StoreIndex(body=BodyIndex(path, embedder=embedder), builder=BuilderTarget(root, location.compression))
