"""The engine's errors: one base, ``SessionrefError(message, code)``, whose ``code`` is stable.

Its kinds: ``SessionReferenceError`` (referencing, CONTRACT §9; ``ReferenceCancelled`` when an
abort stopped it), ``SessionQueryError`` (a store), and, where they are raised, ``ModelError``
(``core.agent.chat_models``), ``CompactionError`` (``core.agent.compaction``), ``IndexUnavailable``
(``core.search.index_values``), ``MeaningUnavailable`` (``core.search.meaning``), ``HandoffError``
(``core.handoff``), ``ResumeError`` (``core.handoff.resume``), ``ConfigError`` (``core.settings``),
``NotPlainJsonError`` (``core.serialization``: a value that is not plain JSON, also a ``ValueError``)
and ``MalformedRowError`` (``core.sessions.chunk_rows``: a stored chunk row that is not one). A host
catches ``SessionrefError`` to show any of them as one line, ``error.line``: the message and its code;
``coded_line`` writes a status that is not an error (an index's state) the same way.
"""

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


def coded_line(message: str, code: str) -> str:
    """A message and its stable code as people read them: ``message (CODE)``."""
    return f"{message} ({code})"


class SessionrefError(Exception):
    """Any error of the engine: ``message`` (also ``str()``) and a stable ``code``."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    @property
    def line(self) -> str:
        """The one way an error is shown to a person: ``message (CODE)``."""
        return coded_line(self.message, self.code)


class SessionReferenceError(SessionrefError):
    """A session-reference operation failed; ``code`` says why (CONTRACT §9).

    ``str(error)`` is the human-readable message. A wrapped failure is chained as ``__cause__``.
    """

    def __init__(self, message: str, code: SessionReferenceErrorCode) -> None:
        super().__init__(message, code)
        self.code: SessionReferenceErrorCode = code

    def __repr__(self) -> str:
        return f"SessionReferenceError({self.message!r}, code={self.code!r})"


class ReferenceCancelled(SessionReferenceError):
    """An abort stopped a lookup or a preparation (code ``SESSION_REFERENCE_CANCELLED``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, CANCELLED)

    def __repr__(self) -> str:
        return f"ReferenceCancelled({self.message!r})"


class SessionQueryError(SessionrefError):
    """A session store or query operation failed; ``code`` is stable, e.g. ``SESSION_QUERY_SESSION_NOT_FOUND``."""

    def __init__(self, message: str, code: str, *, offset: int | None = None, detail: str | None = None) -> None:
        super().__init__(message, code)
        self.offset = offset
        """For a damaged file: the byte offset of the damage (else ``None``)."""
        self.detail = detail
        """For a damaged file: what is wrong there, without the file and offset."""

    def __repr__(self) -> str:
        return f"SessionQueryError({self.message!r}, code={self.code!r})"
