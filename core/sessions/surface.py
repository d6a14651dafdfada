"""Folding an event log into its current surface, and the model history derived from it (CONTRACT §1)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from core.errors import SESSION_QUERY_INVALID_SURFACE, SessionQueryError
from core.sessions import event_types as ev
from core.sessions.models import SessionEvent
from core.sessions.wire_shapes import ContentBlock, ModelMessage, ToolResultBlock

SURFACE_EVENT_TYPES = ev.SURFACE_EVENT_TYPES
"""Event types that live on the surface; every other type is log-only."""


def _on_surface(event_type: Any) -> bool:
    """Whether events of this type live on the surface (a type that is not a string, as a damaged
    or foreign log may hold, never does)."""
    return type(event_type) is str and event_type in SURFACE_EVENT_TYPES


def _invalid(message: str) -> SessionQueryError:
    return SessionQueryError(f"invalid surface: {message}", SESSION_QUERY_INVALID_SURFACE)


class SurfaceFolder:
    """Incremental fold of a log, one event at a time; ``seqs`` is the current surface.

    ``check`` validates an event against the surface so far without changing anything, so a store
    can refuse an append before it writes; ``push`` applies it.
    """

    __slots__ = ("allow_gaps", "next_seq", "seqs")

    def __init__(self, *, allow_gaps: bool = False) -> None:
        self.seqs: list[int] = []
        self.next_seq = 0
        self.allow_gaps = allow_gaps

    def check(self, event_type: str, seq: int, surface_op: Any, source_event_seqs: Sequence[int] | None) -> None:
        """Raise ``SessionQueryError(SESSION_QUERY_INVALID_SURFACE)`` unless the event may follow.

        With ``allow_gaps`` (reading a log someone else wrote) seqs need only increase: real dsh
        logs exist whose streamed chunk events were left out, and the files win over our reading.
        Appends are always checked strictly.
        """
        if seq != self.next_seq and not (self.allow_gaps and type(seq) is int and seq > self.next_seq):
            raise _invalid(f"event seq {seq} does not continue the log at {self.next_seq}")
        if not _on_surface(event_type):
            if surface_op is not None or source_event_seqs is not None:
                raise _invalid(f"log-only event {event_type!r} (seq {seq}) must not carry surfaceOp or sourceEventSeqs")
            return
        if surface_op is None:
            raise _invalid(f"surface event {event_type!r} (seq {seq}) must carry surfaceOp")
        if source_event_seqs is not None:
            if not isinstance(source_event_seqs, (list, tuple)) or not all(
                type(source) is int for source in source_event_seqs
            ):
                raise _invalid(f"sourceEventSeqs of seq {seq} must be a list of integers")
            if len(set(source_event_seqs)) != len(source_event_seqs):
                raise _invalid(f"sourceEventSeqs of seq {seq} must be unique")
            if any(not 0 <= source < seq for source in source_event_seqs):
                raise _invalid(f"sourceEventSeqs of seq {seq} must refer only to earlier events")
        if surface_op == "append":
            return
        start, end = self._replace_range(surface_op, seq)
        replaced = self.seqs[start : end + 1]
        covered = set(source_event_seqs or ())
        missing = [replaced_seq for replaced_seq in replaced if replaced_seq not in covered]
        if missing:
            raise _invalid(f"replace at seq {seq} must list every replaced seq in sourceEventSeqs (missing {missing})")

    def _replace_range(self, surface_op: Any, seq: int) -> tuple[int, int]:
        if (
            not isinstance(surface_op, Mapping)
            or surface_op.get("op") != "replace"
            or set(surface_op) != {"op", "start", "end"}
            or type(surface_op["start"]) is not int
            or type(surface_op["end"]) is not int
        ):
            raise _invalid(f'surfaceOp of seq {seq} must be "append" or {{op: "replace", start, end}}')
        try:
            start = self.seqs.index(surface_op["start"])
            end = self.seqs.index(surface_op["end"])
        except ValueError:
            raise _invalid(f"replace at seq {seq} names a seq that is not on the surface") from None
        if start > end:
            raise _invalid(f"replace at seq {seq} has start after end")
        return start, end

    def push(self, event_type: str, seq: int, surface_op: Any, source_event_seqs: Sequence[int] | None) -> None:
        """Validate and apply one event."""
        if surface_op == "append" and seq == self.next_seq and source_event_seqs is None:
            # The common case, decided here without ``check``: an event appended right after the last.
            if type(event_type) is str and event_type in SURFACE_EVENT_TYPES:
                self.seqs.append(seq)
                self.next_seq = seq + 1
                return
        self.check(event_type, seq, surface_op, source_event_seqs)
        self.next_seq = seq + 1
        if not _on_surface(event_type):
            return
        if surface_op == "append":
            self.seqs.append(seq)
            return
        start, end = self._replace_range(surface_op, seq)
        self.seqs[start : end + 1] = [seq]


def fold_surface(events: Sequence[SessionEvent], *, allow_gaps: bool = False) -> list[SessionEvent]:
    """The current surface of a log: surface events whose seqs remain after every replace.

    ``allow_gaps`` accepts seqs that only increase (logs read from disk, see ``SurfaceFolder``).

    Raises:
        SessionQueryError: ``SESSION_QUERY_INVALID_SURFACE`` for a gap in seqs or an invalid op.
    """
    folder = SurfaceFolder(allow_gaps=allow_gaps)
    for event in events:
        folder.push(event.type, event.seq, event.surface_op, event.source_event_seqs)
    return events_at(events, folder.seqs)


def events_at(events: Sequence[SessionEvent], seqs: Iterable[int]) -> list[SessionEvent]:
    """The events of a log (seqs increasing) with these seqs, in the order given."""
    if not events or events[-1].seq == len(events) - 1:
        return [events[seq] for seq in seqs]  # contiguous: a seq is its index
    by_seq = {event.seq: event for event in events}
    return [by_seq[seq] for seq in seqs]


def display_prompt_content(data: Mapping[str, Any]) -> list[ContentBlock]:
    """The user's own words of a prompt: ``envelope.displayContent`` when enveloped, else ``content``."""
    envelope = data.get("envelope")
    if isinstance(envelope, Mapping) and "displayContent" in envelope:
        display = envelope["displayContent"]
        return display if isinstance(display, list) else []
    content = data.get("content")
    return content if isinstance(content, list) else []


def message_payload(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The message fields of an ``assistant/message`` or ``tool/result`` payload.

    The contract's dsh version keeps ``content`` (and ``callId`` / ``isError``) on ``data`` itself;
    newer dsh versions (0.1.0-rc.8 and the real logs it writes) nest an identified message under
    ``data.message`` (``{id, role, content, source}``). Both read the same way here.
    """
    message = data.get("message")
    if "content" not in data and isinstance(message, Mapping):
        return message
    return data


def message_content(data: Mapping[str, Any]) -> list[Any]:
    """The content blocks of a message event's payload (either dsh shape), ``[]`` when malformed."""
    content = message_payload(data).get("content")
    return content if isinstance(content, list) else []


def _block_text(block: Any) -> str | None:
    if type(block) is dict or isinstance(block, Mapping):
        if block.get("type") == "text":
            value = block.get("text")
            if type(value) is str:
                return value
    return None


def text_of_blocks(blocks: Iterable[Any]) -> str:
    """The ``text`` of every ``type == "text"`` block, joined with newlines."""
    if type(blocks) is list and len(blocks) == 1:
        # The overwhelmingly common shape: one text block.
        return _block_text(blocks[0]) or ""
    texts = [text for text in map(_block_text, blocks) if text is not None]
    return "\n".join(texts)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def event_message(event: SessionEvent) -> ModelMessage | None:
    """The model message of one surface event (CONTRACT §1), or ``None`` when it contributes none.

    ``user/message`` / ``steering/message`` give their baked ``content``; ``assistant/message``
    its content (``None`` when empty); ``tool/result`` a user message holding one tool-result block.
    """
    data = event.data
    if event.type in (ev.USER_MESSAGE, ev.STEERING_MESSAGE):
        return {"role": "user", "content": _copy(data.get("content", []))}
    if event.type == ev.ASSISTANT_MESSAGE:
        content = message_content(data)
        return {"role": "assistant", "content": _copy(content)} if content else None
    if event.type == ev.TOOL_RESULT:
        message = message_payload(data)
        if message is not data:
            # A newer dsh tool result already is a user message holding its tool-result block.
            return {"role": "user", "content": _copy(message_content(data))}
        block: ToolResultBlock = {
            "type": "tool-result",
            "toolCallId": data.get("callId"),
            "content": _copy(data.get("content")),
            "isError": bool(data.get("isError", False)),
        }
        return {"role": "user", "content": [block]}
    return None


def derive_messages(events: Sequence[SessionEvent], *, allow_gaps: bool = False) -> list[ModelMessage]:
    """The model history of a log (CONTRACT §1): baked prompt content, assistant replies, tool results.

    Raises:
        SessionQueryError: ``SESSION_QUERY_INVALID_SURFACE`` when the log does not fold.
    """
    messages: list[ModelMessage] = []
    for event in fold_surface(events, allow_gaps=allow_gaps):
        message = event_message(event)
        if message is not None:
            messages.append(message)
    return messages
