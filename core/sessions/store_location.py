"""Where a store is, for another process to open it too."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoreLocation:
    """Where another process (``sessionref mcp`` for a hand-off, the index builder) opens the same
    store: a folder (its ``root`` and how its logs are written) or a database (its ``url``)."""

    root: str | None = None
    compression: str = "zstd"
    url: str | None = None
