"""What a database error may say: the server's own words, never the connection string (it may hold
a password); and the store's error for a database that cannot be used."""

from __future__ import annotations

from core.errors import SessionQueryError

SESSION_QUERY_DATABASE = "SESSION_QUERY_DATABASE_UNAVAILABLE"


def server_words(error: BaseException, fallback: str | None = None) -> str:
    """The server's primary message for ``error``, else ``fallback``, else the error's kind."""
    primary = getattr(getattr(error, "diag", None), "message_primary", None)
    return primary or fallback or type(error).__name__


def database_error(error: BaseException, what: str) -> SessionQueryError:
    """``SESSION_QUERY_DATABASE_UNAVAILABLE``: ``what`` failed, in the server's words."""
    return SessionQueryError(f"{what}: {server_words(error)}", SESSION_QUERY_DATABASE)
