"""``Session`` (one append-only log) and ``MemorySessionStore`` (live, in-process sessions)."""

from __future__ import annotations

import asyncio
import ntpath
import posixpath
import time
import uuid
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from core.errors import (
    SESSION_QUERY_INVALID_EVENT,
    SESSION_QUERY_SESSION_EXISTS,
    SESSION_QUERY_SESSION_NOT_FOUND,
    SessionQueryError,
)
from core.listeners import Listeners
from core.serialization import NotPlainJsonError, js_json_stringify, plain_json_copy
from core.sessions import event_types as ev
from core.sessions.models import (
    SessionEvent,
    SessionHeader,
    SessionRecord,
    SurfaceSnapshot,
    TitleSnapshot,
    trusted_event,
)
from core.sessions.query import ReadsAsQuery, sort_listing
from core.sessions.surface import SURFACE_EVENT_TYPES, SurfaceFolder, derive_messages, events_at
from core.sessions.wire_shapes import ModelMessage

Clock = Callable[[], int]
"""Returns the current time in epoch milliseconds."""


def system_clock() -> int:
    """Wall-clock time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def not_found(session_id: str) -> SessionQueryError:
    """The ``SESSION_QUERY_SESSION_NOT_FOUND`` error for ``session_id`` (id JSON-quoted)."""
    return SessionQueryError(f"session {js_json_stringify(session_id)} not found", SESSION_QUERY_SESSION_NOT_FOUND)


def already_exists(session_id: str) -> SessionQueryError:
    """The ``SESSION_QUERY_SESSION_EXISTS`` error for ``session_id`` (id JSON-quoted)."""
    return SessionQueryError(f"session {js_json_stringify(session_id)} already exists", SESSION_QUERY_SESSION_EXISTS)


def title_from_event(event: SessionEvent) -> TitleSnapshot | None:
    """The title a ``session/title`` event sets, or ``None`` for any other event (or a title-less one)."""
    if event.type != ev.SESSION_TITLE or not isinstance(event.data.get("title"), str):
        return None
    return TitleSnapshot(
        title=event.data["title"],
        message_seqs=[seq for seq in event.data.get("messageSeqs") or [] if type(seq) is int],
        event_seq=event.seq,
        updated_at=event.time,
    )


def latest_title(events: Iterable[SessionEvent]) -> TitleSnapshot | None:
    """The title the last titled ``session/title`` event among ``events`` sets, or ``None``."""
    title = None
    for event in events:
        title = title_from_event(event) or title
    return title


def invalid_event(message: str) -> SessionQueryError:
    """A rejected append (``SESSION_QUERY_INVALID_EVENT``)."""
    return SessionQueryError(f"invalid event: {message}", SESSION_QUERY_INVALID_EVENT)


def check_cwd(cwd: Any) -> str | None:
    """Return ``cwd`` if it is ``None`` or an absolute POSIX or Windows path, else raise."""
    if cwd is None:
        return None
    if not isinstance(cwd, str) or not (posixpath.isabs(cwd) or ntpath.isabs(cwd)):
        raise invalid_event(f"cwd must be an absolute path, got {cwd!r}")
    return cwd


class EventSink(Protocol):
    """Where a session persists an accepted batch before it becomes visible (the durable store)."""

    def write(self, session: Session, events: Sequence[SessionEvent]) -> None:
        """Persist ``events`` durably or raise without leaving any of them behind."""
        ...


class Session:
    """One session: an immutable header and an append-only, validated event log."""

    def __init__(
        self,
        header: SessionHeader,
        events: Sequence[SessionEvent] = (),
        *,
        clock: Clock = system_clock,
        sink: EventSink | None = None,
    ) -> None:
        self.header = header
        self._clock = clock
        self._sink = sink
        self._events: list[SessionEvent] = []
        self._frozen: tuple[SessionEvent, ...] | None = ()
        self._folder = SurfaceFolder(allow_gaps=True)  # seed events come from storage
        self._title: TitleSnapshot | None = None
        self._pending: list[SessionEvent] = []
        self.appended: Listeners[Sequence[SessionEvent]] = Listeners()
        """Told the events of each append once they joined the log (buffered ones too)."""
        for event in events:
            self._folder.push(event.type, event.seq, event.surface_op, event.source_event_seqs)
            self._remember(event)

    @property
    def id(self) -> str:
        """The session id."""
        return self.header.id

    @property
    def cwd(self) -> str | None:
        """The working directory the session belongs to, if any."""
        return self.header.cwd

    @property
    def events(self) -> tuple[SessionEvent, ...]:
        """Every event of the raw log, in seq order."""
        if self._frozen is None:
            self._frozen = tuple(self._events)
        return self._frozen

    @property
    def title(self) -> TitleSnapshot | None:
        """The latest ``session/title`` of the log, if any."""
        return self._title

    def _remember(self, event: SessionEvent) -> None:
        self._events.append(event)
        self._frozen = None
        title = title_from_event(event)
        if title is not None:
            self._title = title

    def surface(self) -> list[SessionEvent]:
        """The folded current surface."""
        return events_at(self._events, self._folder.seqs)

    def snapshot(self) -> SurfaceSnapshot:
        """A ``read_surface`` snapshot of the log as it is now."""
        last = self._events[-1].seq if self._events else None
        return SurfaceSnapshot.model_construct(session=self.header, captured_through_seq=last, events=self.surface())

    def snapshot_with(self, batch: Sequence[SessionEvent]) -> SurfaceSnapshot:
        """The snapshot the log will give once ``batch`` (validated events being written) joins it:
        what a store that indexes on write sees, before the batch is in memory."""
        # A batch may begin with buffered events, which joined the log already.
        known = self._events[-1].seq if self._events else -1
        batch = [event for event in batch if event.seq > known]
        folder = SurfaceFolder(allow_gaps=True)
        folder.seqs, folder.next_seq = list(self._folder.seqs), self._folder.next_seq
        for event in batch:
            folder.push(event.type, event.seq, event.surface_op, event.source_event_seqs)
        events = [*self._events, *batch]
        return SurfaceSnapshot.model_construct(
            session=self.header,
            captured_through_seq=events[-1].seq if events else None,
            events=events_at(events, folder.seqs),
        )

    def append(
        self,
        type: str,
        data: Mapping[str, Any],
        *,
        surface_op: str | Mapping[str, Any] | None = None,
        source_event_seqs: Sequence[int] | None = None,
        buffered: bool = False,
        ignorable: bool = False,
    ) -> SessionEvent:
        """Validate and append one event; nothing is written when it is rejected.

        ``ignorable`` marks an event of sessionref's own (not a dsh type: a hand-off's note) as one
        dsh may skip; it is never a surface event.

        Raises:
            SessionQueryError: ``SESSION_QUERY_INVALID_EVENT`` for a bad type or non-plain-JSON data,
                ``SESSION_QUERY_INVALID_SURFACE`` for a surface-op violation; an I/O error of a
                durable store propagates as its own ``SessionQueryError``.
        """
        if ignorable and (surface_op is not None or source_event_seqs is not None or type in SURFACE_EVENT_TYPES):
            raise invalid_event(f"{type!r}: an ignorable event is never part of the surface")
        return self._append([(type, data, surface_op, source_event_seqs)], buffered=buffered, ignorable=ignorable)[0]

    def append_batch(
        self,
        batch: Sequence[tuple[str, Mapping[str, Any], str | Mapping[str, Any] | None, Sequence[int] | None]],
        *,
        buffered: bool = False,
    ) -> list[SessionEvent]:
        """Append several events atomically: all are accepted and written, or none.

        With ``buffered`` the events join the log at once but reach the store with the next
        ``flush()`` or unbuffered append (write-behind, for streamed chunks: one durable batch per
        flush interval instead of one per chunk). An unbuffered append writes the buffered events
        first, in the same durable batch.

        Raises:
            SessionQueryError: as ``append``.
        """
        return self._append(batch, buffered=buffered, ignorable=False)

    def _append(
        self,
        batch: Sequence[tuple[str, Mapping[str, Any], str | Mapping[str, Any] | None, Sequence[int] | None]],
        *,
        buffered: bool,
        ignorable: bool,
    ) -> list[SessionEvent]:
        folder = SurfaceFolder()
        folder.seqs = list(self._folder.seqs)
        folder.next_seq = self._folder.next_seq
        now = self._clock()
        events: list[SessionEvent] = []
        for type_, data, surface_op, source_event_seqs in batch:
            events.append(self._validated(folder, type_, data, surface_op, source_event_seqs, now, ignorable))
        if buffered:
            self._pending.extend(events)
        else:
            self._write([*self._pending, *events])
        self._folder = folder
        for event in events:
            self._remember(event)
        if self.appended:
            self.appended.emit(events)
        return events

    @property
    def pending(self) -> int:
        """How many accepted events wait for ``flush()`` to reach the store."""
        return len(self._pending)

    def flush(self) -> None:
        """Write the buffered events to the store in one durable batch (a no-op when none wait).

        Raises:
            SessionQueryError: the store's write error; the events stay buffered for the next try.
        """
        if self._pending:
            self._write(self._pending)

    def _write(self, events: list[SessionEvent]) -> None:
        if self._sink is not None:
            self._sink.write(self, events)
        self._pending = []

    def _validated(
        self,
        folder: SurfaceFolder,
        event_type: Any,
        data: Any,
        surface_op: Any,
        source_event_seqs: Any,
        now: int,
        ignorable: bool = False,
    ) -> SessionEvent:
        if not isinstance(event_type, str) or not event_type:
            raise invalid_event(f"type must be a non-empty string, got {event_type!r}")
        if not isinstance(data, Mapping):
            raise invalid_event(f"data of {event_type!r} must be an object")
        try:
            plain = plain_json_copy(dict(data), "$.data")
            op = None if surface_op is None else plain_json_copy(surface_op, "$.surfaceOp")
            sources = (
                None if source_event_seqs is None else plain_json_copy(list(source_event_seqs), "$.sourceEventSeqs")
            )
        except NotPlainJsonError as error:
            raise invalid_event(f"{event_type!r}: {error}") from error
        if event_type == ev.SESSION_TITLE and not (
            isinstance(plain.get("title"), str) and all(type(seq) is int for seq in plain.get("messageSeqs", []) or [])
        ):
            raise invalid_event("session/title needs a string title and integer messageSeqs")
        seq = folder.next_seq
        folder.push(event_type, seq, op, sources)
        return trusted_event(event_type, seq, now, plain, op, sources, ignorable)

    def derive_messages(self) -> list[ModelMessage]:
        """The model history of this session (CONTRACT §1)."""
        return derive_messages(self.events, allow_gaps=True)  # the log was validated as it arrived

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, cwd={self.cwd!r}, events={len(self._events)})"


def mint_session_id() -> str:
    """A fresh, unique session id."""
    return str(uuid.uuid4())


class MemorySessionStore(ReadsAsQuery):
    """Live, in-process sessions; also the reference ``SessionQuery`` implementation."""

    def __init__(self, *, clock: Clock = system_clock) -> None:
        self._clock = clock
        self._sessions: dict[str, Session] = {}

    def create(
        self, session_id: str | None = None, *, cwd: str | None = None, created_at: int | None = None
    ) -> Session:
        """Create an empty session (an id is minted when none is given).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_EXISTS`` for a taken id,
                ``SESSION_QUERY_INVALID_EVENT`` for a non-absolute cwd or a non-string id.
        """
        if session_id is None:
            session_id = mint_session_id()
        if not isinstance(session_id, str):
            raise invalid_event(f"session id must be a string, got {session_id!r}")
        if session_id in self._sessions:
            raise already_exists(session_id)
        header = SessionHeader(
            id=session_id, cwd=check_cwd(cwd), created_at=self._clock() if created_at is None else created_at
        )
        session = Session(header, clock=self._clock)
        self._sessions[session_id] = session
        return session

    def get(self, session_id: str) -> Session | None:
        """The live session with this id, or ``None``."""
        return self._sessions.get(session_id)

    def delete(self, session_id: str) -> None:
        """Forget a session (a missing id is not an error)."""
        self._sessions.pop(session_id, None)

    def release(self, session_id: str) -> None:
        """Nothing to let go of: a memory session is its own log."""

    def close(self) -> None:
        """Nothing to close: the sessions live as long as the store."""

    def _require(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise not_found(session_id)
        return session

    def listing(self) -> list[SessionRecord]:
        """Every session, newest ``created_at`` first, ties by id."""
        records = [
            SessionRecord(header=session.header, live=True, persisted=False) for session in self._sessions.values()
        ]
        sort_listing(records)
        return records

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """The folded surface of a session as it is now.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``.
        """
        return self._require(session_id).snapshot()

    def title(self, session_id: str) -> TitleSnapshot | None:
        """The latest title of a session, or ``None``.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``.
        """
        return self._require(session_id).title

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        """``surface()``, as the engine's ``SessionQuery`` asks for it (after a yield to the loop: a
        live session may be appended to meanwhile, as it would be by a real reply)."""
        await asyncio.sleep(0)
        return self.surface(session_id)
