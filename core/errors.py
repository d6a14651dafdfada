"""The two exception types of the engine, each carrying a stable ``code``."""

from __future__ import annotations

from typing import Final, Literal

SessionReferenceErrorCode = Literal[
    "SESSION_REFERENCE_INVALID_CONFIG",
    "SESSION_REFERENCE_INVALID_REFERENCE",
    "SESSION_REFERENCE_SELF_REFERENCE",
    "SESSION_REFERENCE_TOO_MANY",
    "SESSION_REFERENCE_READ_FAILED",
    "SESSION_REFERENCE_BUDGET_EXCEEDED",
    "SESSION_REFERENCE_CANCELLED",
]

INVALID_CONFIG: Final = "SESSION_REFERENCE_INVALID_CONFIG"
INVALID_REFERENCE: Final = "SESSION_REFERENCE_INVALID_REFERENCE"
SELF_REFERENCE: Final = "SESSION_REFERENCE_SELF_REFERENCE"
TOO_MANY: Final = "SESSION_REFERENCE_TOO_MANY"
READ_FAILED: Final = "SESSION_REFERENCE_READ_FAILED"
BUDGET_EXCEEDED: Final = "SESSION_REFERENCE_BUDGET_EXCEEDED"
CANCELLED: Final = "SESSION_REFERENCE_CANCELLED"

SESSION_QUERY_SESSION_NOT_FOUND: Final = "SESSION_QUERY_SESSION_NOT_FOUND"
SESSION_QUERY_INVALID_SURFACE: Final = "SESSION_QUERY_INVALID_SURFACE"
SESSION_QUERY_INVALID_EVENT: Final = "SESSION_QUERY_INVALID_EVENT"
SESSION_QUERY_SESSION_EXISTS: Final = "SESSION_QUERY_SESSION_EXISTS"


class SessionReferenceError(Exception):
    """A session-reference operation failed; ``code`` says why (CONTRACT §9).

    ``str(error)`` is the human-readable message. A wrapped failure is chained as ``__cause__``.
    """

    def __init__(self, message: str, code: SessionReferenceErrorCode) -> None:
        super().__init__(message)
        self.code: SessionReferenceErrorCode = code
        self.message = message

    def __repr__(self) -> str:
        return f"SessionReferenceError({self.message!r}, code={self.code!r})"


class SessionQueryError(Exception):
    """A session store or query operation failed; ``code`` is stable, e.g. ``SESSION_QUERY_SESSION_NOT_FOUND``."""

    def __init__(self, message: str, code: str, *, offset: int | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.offset = offset
        """For a damaged file: the byte offset of the damage (else ``None``)."""
        self.detail = detail
        """For a damaged file: what is wrong there, without the file and offset."""

    def __repr__(self) -> str:
        return f"SessionQueryError({self.message!r}, code={self.code!r})"
