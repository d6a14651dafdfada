"""Folding an event log into its current surface, and the model history derived from it (CONTRACT §1)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from .errors import SESSION_QUERY_INVALID_SURFACE, SessionQueryError
from .models import SessionEvent

SURFACE_EVENT_TYPES = frozenset({"user/message", "steering/message", "assistant/message", "tool/result"})
"""Event types that live on the surface; every other type is log-only."""


def _invalid(message: str) -> SessionQueryError:
    return SessionQueryError(f"invalid surface: {message}", SESSION_QUERY_INVALID_SURFACE)


class SurfaceFolder:
    """Incremental fold of a log, one event at a time; ``seqs`` is the current surface.

    ``check`` validates an event against the surface so far without changing anything, so a store
    can refuse an append before it writes; ``push`` applies it.
    """

    __slots__ = ("next_seq", "seqs")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.next_seq = 0

    def check(self, event_type: str, seq: int, surface_op: Any, source_event_seqs: Sequence[int] | None) -> None:
        """Raise ``SessionQueryError(SESSION_QUERY_INVALID_SURFACE)`` unless the event may follow."""
        if seq != self.next_seq:
            raise _invalid(f"event seq {seq} does not continue the log at {self.next_seq}")
        if event_type not in SURFACE_EVENT_TYPES:
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
        self.check(event_type, seq, surface_op, source_event_seqs)
        self.next_seq = seq + 1
        if event_type not in SURFACE_EVENT_TYPES:
            return
        if surface_op == "append":
            self.seqs.append(seq)
            return
        start, end = self._replace_range(surface_op, seq)
        self.seqs[start : end + 1] = [seq]


def fold_surface(events: Sequence[SessionEvent]) -> list[SessionEvent]:
    """The current surface of a log: surface events whose seqs remain after every replace.

    Raises:
        SessionQueryError: ``SESSION_QUERY_INVALID_SURFACE`` for a gap in seqs or an invalid op.
    """
    folder = SurfaceFolder()
    for event in events:
        folder.push(event.type, event.seq, event.surface_op, event.source_event_seqs)
    return [events[seq] for seq in folder.seqs]


def display_prompt_content(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The user's own words of a prompt: ``envelope.displayContent`` when enveloped, else ``content``."""
    envelope = data.get("envelope")
    if isinstance(envelope, Mapping) and "displayContent" in envelope:
        display = envelope["displayContent"]
        return display if isinstance(display, list) else []
    content = data.get("content")
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


def derive_messages(events: Sequence[SessionEvent]) -> list[dict[str, Any]]:
    """The model history of a log (CONTRACT §1): baked prompt content, assistant replies, tool results.

    Raises:
        SessionQueryError: ``SESSION_QUERY_INVALID_SURFACE`` when the log does not fold.
    """
    messages: list[dict[str, Any]] = []
    for event in fold_surface(events):
        data = event.data
        if event.type in ("user/message", "steering/message"):
            messages.append({"role": "user", "content": _copy(data.get("content", []))})
        elif event.type == "assistant/message":
            content = data.get("content") or []
            if content:
                messages.append({"role": "assistant", "content": _copy(content)})
        elif event.type == "tool/result":
            block = {
                "type": "tool-result",
                "toolCallId": data.get("callId"),
                "content": _copy(data.get("content")),
                "isError": bool(data.get("isError", False)),
            }
            messages.append({"role": "user", "content": [block]})
    return messages
