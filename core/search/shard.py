"""``Shard``: one SQLite file of the message index, with its reader and its writer.

One process writes a shard at a time (an advisory lock on ``<file>.lock``); another process
searches it read-only and takes over writing once the first one exits. The file, its connections
and what both sides share are ``ShardFiles``; searching is ``ShardReader``'s, keeping it current
``ShardWriter``'s, its messages' vectors ``ShardVectors``'.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.search.shard_files import ShardFiles
from core.search.shard_reads import ShardReader
from core.search.shard_vectors import ShardVectors
from core.search.shard_writes import ShardWriter


class Shard:
    """One SQLite file of the index (see the module docstring).

    Args:
        path: the file (``None``: in memory, for a memory store).
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.files = ShardFiles(path)
        """The file, its connections, its writer lock and status."""
        self.reads = ShardReader(self.files)
        """Titles, candidates, verified snippets, a session's messages."""
        self.writes = ShardWriter(self.files)
        """Which sessions to (re)index, and writing them."""
        self.vectors = ShardVectors(self.files, self.reads)
        """Its messages' vectors (search by meaning)."""

    @property
    def path(self) -> Path | None:
        """The file (``None``: in memory)."""
        return self.files.path
