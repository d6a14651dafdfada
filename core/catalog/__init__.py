"""The catalog: a store's listing and every session's title kept in memory and refreshed by
revision, with other agents' sources beside it; the ``SessionQuery`` the app and ``sessionref mcp``
hand to the reference service, and what the message index reads."""

from __future__ import annotations

from core.catalog.catalog import SessionCatalog
from core.catalog.titles import SessionTitles

__all__ = ["SessionCatalog", "SessionTitles"]
