"""Which references in a conversation are old: a reference is a snapshot "captured through seq N";
the session it was taken of may have moved on since, while the model still holds the old snapshot
in its history. From a prompt's model-hidden meta (``envelope.prefixContexts[].meta.references``:
``capturedThroughSeq`` and ``originalMessages``) and the session as it is now, this says how many
newer messages it has, so the transcript and the preview can say so (and the person, or the model
with ``read_session``, knows what is old)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.reference.projection import project_conversation
from core.sessions import event_types as ev
from core.sessions.models import SessionEvent, SurfaceSnapshot


@dataclass(frozen=True, slots=True)
class EarlierReference:
    """A session a prompt of the conversation referenced, as that prompt captured it."""

    session_id: str
    label: str
    captured_through_seq: int | None
    messages: int
    """Projected messages the session had then (``originalMessages``)."""
    prompt_seq: int
    """The prompt that carried it."""


def references_of(data: Any) -> list[dict[str, Any]]:
    """The per-reference meta of a baked prompt's payload (``[]`` for any other)."""
    envelope = data.get("envelope") if isinstance(data, dict) else None
    if not isinstance(envelope, dict):
        return []
    found: list[dict[str, Any]] = []
    for context in envelope.get("prefixContexts") or []:
        meta = context.get("meta") if isinstance(context, dict) else None
        if isinstance(meta, dict) and meta.get("kind") == "session-reference":
            found += [reference for reference in meta.get("references") or [] if isinstance(reference, dict)]
    return found


def earlier_references(events: Sequence[SessionEvent]) -> dict[str, EarlierReference]:
    """Each session the conversation's prompts referenced, as its latest reference captured it."""
    latest: dict[str, EarlierReference] = {}
    for event in events:
        if event.type not in (ev.USER_MESSAGE, ev.STEERING_MESSAGE):
            continue
        for reference in references_of(event.data):
            session_id = reference.get("sessionId")
            messages = reference.get("originalMessages")
            if not isinstance(session_id, str) or type(messages) is not int:
                continue
            captured = reference.get("capturedThroughSeq")
            latest[session_id] = EarlierReference(
                session_id,
                str(reference.get("label", session_id)),
                captured if type(captured) is int else None,
                messages,
                event.seq,
            )
    return latest


def newer_messages(earlier: EarlierReference | dict[str, Any], now: SurfaceSnapshot) -> int | None:
    """How many messages the session has now past what ``earlier`` captured: 0 when it has not
    moved on, ``None`` when it changed otherwise (compacted since, so the count does not compare)."""
    if isinstance(earlier, dict):
        captured, messages = earlier.get("capturedThroughSeq"), earlier.get("originalMessages")
    else:
        captured, messages = earlier.captured_through_seq, earlier.messages
    if now.captured_through_seq == captured:
        return 0
    count = len(project_conversation(now))
    if type(messages) is not int or count < messages:
        return None
    return count - messages


def moved_on_words(newer: int | None) -> str | None:
    """``3 newer messages since`` / ``changed since`` / ``None`` (not moved on)."""
    if newer == 0:
        return None
    if newer is None:
        return "changed since (compacted)"
    return f"{newer} newer message{'s' if newer != 1 else ''} since"
