"""What the preview shows for a draft: the real ``prepare`` result, laid out per reference.

``build_preview`` parses the draft and runs ``SessionReferenceService.prepare`` against the store
(which writes nothing). When ``prepare`` fails, each reference is prepared on its own as well, so
the problem appears under the mention that caused it. No Textual import: the widget renders a
``PreviewReport`` and tests check one directly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core import (
    PROMPT_REQUEST_DELIMITER,
    AbortSignal,
    HookContext,
    ReferenceInput,
    Session,
    SessionQueryError,
    SessionReferenceError,
    SessionReferenceService,
    bake_prompt_message,
    parse_session_reference_text,
)
from core.agent.wire import wire_text
from core.errors import (
    BUDGET_EXCEEDED,
    CANCELLED,
    INVALID_REFERENCE,
    READ_FAILED,
    SELF_REFERENCE,
    SESSION_QUERY_SESSION_NOT_FOUND,
    TOO_MANY,
    coded_line,
)
from core.reference.service import FRAME_CLOSE, FRAME_OPEN, build_context
from core.reference.staleness import earlier_references, moved_on_words
from core.serialization import tag_safe_json_length, utf8_length
from core.sessions.models import SessionEvent
from core.sessions.query import ReferenceTarget
from core.sessions.wire_shapes import ContentBlock
from tui.services.text import estimate_tokens

_PLAIN_WORDS = {
    INVALID_REFERENCE: "A mention in the draft is malformed",
    SELF_REFERENCE: "A session cannot reference itself",
    TOO_MANY: "Too many sessions are referenced",
    READ_FAILED: "A referenced session could not be read",
    BUDGET_EXCEEDED: "A referenced session cannot fit its byte budget",
    CANCELLED: "Preparing was cancelled",
}


@dataclass(frozen=True, slots=True)
class Problem:
    """A failure in plain words, with its stable code and the engine's message."""

    code: str
    summary: str
    message: str

    def describe(self) -> str:
        """One line: ``summary: message (CODE)``."""
        return coded_line(f"{self.summary}: {self.message}", self.code)


def problem_of(error: SessionReferenceError) -> Problem:
    """The ``Problem`` for a service error (a missing source is told apart from an unreadable one)."""
    summary = _PLAIN_WORDS.get(error.code, "Preparing failed")
    cause = error.__cause__
    if (
        error.code == READ_FAILED
        and isinstance(cause, SessionQueryError)
        and cause.code == SESSION_QUERY_SESSION_NOT_FOUND
    ):
        summary = "A referenced session does not exist"
    return Problem(error.code, summary, error.message)


@dataclass(slots=True)
class ReferenceCard:
    """One referenced source as it will be sent (or the problem that stops it)."""

    session_id: str
    label: str
    budget: int
    cwd: str | None = None
    captured_through_seq: int | None = None
    size: int = 0
    original_messages: int = 0
    retained_messages: int = 0
    omitted_messages: int = 0
    omitted_bytes: int = 0
    compacted: bool = False
    truncated: bool = False
    conversation: list[dict[str, Any]] = field(default_factory=list)
    problem: Problem | None = None
    earlier: str | None = None
    """When this chat referenced the session before and it has moved on since: what the model still
    holds (``referenced in message #12 through #40 · 3 newer messages since``)."""
    masked: tuple[tuple[str, int], ...] = ()
    """How many secrets of each kind the reference masks (``[redacted: <kind>]``; never their values)."""
    redaction: bool = True
    """Whether secrets are masked at all (``--no-redaction`` sends them as they are)."""

    @property
    def masked_words(self) -> str | None:
        """What the card says of secrets: ``2 secrets masked: aws-secret-key, openai-key``, or that
        masking is off; ``None`` when there is nothing to say."""
        if not self.redaction:
            return "secrets are sent as they are: redaction is off"
        count = sum(number for _kind, number in self.masked)
        if not count:
            return None
        kinds = ", ".join(kind if number == 1 else f"{kind} ×{number}" for kind, number in self.masked)
        return f"{count} secret{'' if count == 1 else 's'} masked: {kinds}"


@dataclass(slots=True)
class PreviewReport:
    """The preview of one draft."""

    draft: str
    max_references: int
    references: list[ReferenceInput] = field(default_factory=list)
    cards: list[ReferenceCard] = field(default_factory=list)
    problem: Problem | None = None
    contexts: list[HookContext] = field(default_factory=list)
    content: list[ContentBlock] = field(default_factory=list)
    context: Any = None
    """The context meter's figures for this draft (``tui.services.context_view.DraftContext``), set on the UI thread."""

    @property
    def prefix_text(self) -> str:
        """The exact model-visible text the references add before the request ("" without references)."""
        return "".join(block["text"] for context in self.contexts for block in context.content)

    @property
    def prefix_bytes(self) -> int:
        """UTF-8 bytes of the prefix plus the request delimiter (0 without references)."""
        if not self.contexts:
            return 0
        return utf8_length(self.prefix_text) + utf8_length(PROMPT_REQUEST_DELIMITER)

    @property
    def prefix_tokens(self) -> int:
        """Estimated tokens of the prefix plus the delimiter (``tui.services.text.ESTIMATOR``)."""
        if not self.contexts:
            return 0
        return estimate_tokens(self.prefix_text + PROMPT_REQUEST_DELIMITER)

    def model_visible_text(self) -> str:
        """Everything the model will read for this message: prefix, delimiter and the request."""
        content = self.content or [{"type": "text", "text": self.draft}]
        baked = bake_prompt_message(content, self.contexts)
        return wire_text(baked.data["content"])


def _data_objects(context: HookContext) -> list[dict[str, Any]]:
    text = context.content[0]["text"]
    start = text.index(FRAME_OPEN) + len(FRAME_OPEN)
    end = text.rindex(FRAME_CLOSE)
    objects: list[dict[str, Any]] = json.loads(text[start:end])
    return objects


def _cards(context: HookContext, budget: int) -> list[ReferenceCard]:
    meta = context.meta
    assert isinstance(meta, dict)
    cards = []
    for data, stats in zip(_data_objects(context), meta["references"], strict=True):
        cards.append(
            ReferenceCard(
                session_id=data["sessionId"],
                label=data["label"],
                budget=budget,
                cwd=data["cwd"],
                captured_through_seq=data["capturedThroughSeq"],
                size=tag_safe_json_length(data),
                original_messages=stats["originalMessages"],
                retained_messages=stats["retainedMessages"],
                omitted_messages=stats["omittedMessages"],
                omitted_bytes=stats["omittedBytes"],
                compacted=stats["compacted"],
                truncated=stats["truncated"],
                conversation=data["conversation"],
            )
        )
    return cards


def _mark_earlier(cards: list[ReferenceCard], events: Sequence[SessionEvent]) -> None:
    """Say on each card whose session this chat referenced before, and that moved on since, what
    the model still holds (it keeps the older snapshot in its history)."""
    earlier = earlier_references(events)
    for card in cards:
        before = earlier.get(card.session_id)
        if before is None or before.captured_through_seq == card.captured_through_seq:
            continue
        newer = card.original_messages - before.messages if card.original_messages >= before.messages else None
        words = moved_on_words(newer) or "changed since"
        through = "an empty log" if before.captured_through_seq is None else f"#{before.captured_through_seq}"
        card.earlier = f"referenced in message #{before.prompt_seq} through {through} · {words}"


def _distinct(references: list[ReferenceInput]) -> list[ReferenceInput]:
    seen: set[str] = set()
    distinct = []
    for reference in references:
        if reference.session_id not in seen:
            seen.add(reference.session_id)
            distinct.append(reference)
    return distinct


async def build_preview(
    service: SessionReferenceService, target: ReferenceTarget, draft: str, signal: AbortSignal | None = None
) -> PreviewReport:
    """Parse ``draft`` and run the real ``prepare`` for it against ``target``.

    Raises:
        SessionReferenceError: ``CANCELLED`` when ``signal`` aborts (the caller drops the result).
    """
    config = service.config
    report = PreviewReport(draft=draft, max_references=config.max_references)
    try:
        parsed = parse_session_reference_text(draft)
    except SessionReferenceError as error:
        report.problem = problem_of(error)
        return report
    report.references = parsed.references
    report.content = [{"type": "text", "text": parsed.text}]
    try:
        # prepare's own sources: build_context of them is its context, byte for byte.
        retained = await service.retain_sources(target, parsed.references, signal)
    except SessionReferenceError as error:
        if error.code == CANCELLED:
            raise
        report.problem = problem_of(error)
    else:
        report.contexts = [build_context(retained)] if retained else []
        if report.contexts:
            report.cards = _cards(report.contexts[0], config.max_reference_bytes)
            for card, source in zip(report.cards, retained, strict=True):
                card.masked, card.redaction = source.masked, service.redact
            _mark_earlier(report.cards, target.events if isinstance(target, Session) else ())
        return report
    if report.problem.code == INVALID_REFERENCE:
        return report
    # Place the failure: prepare each distinct reference alone (its logs are cached by now).
    for index, reference in enumerate(_distinct(parsed.references)):
        label = reference.label if reference.label is not None else reference.session_id
        if index >= config.max_references:
            over = Problem(TOO_MANY, "Over the limit", f"only the first {config.max_references} sessions can be sent")
            report.cards.append(ReferenceCard(reference.session_id, label, config.max_reference_bytes, problem=over))
            continue
        try:
            alone = await service.prepare(target, report.content, [reference], signal)
        except SessionReferenceError as failure:
            if failure.code == CANCELLED:
                raise
            failed = ReferenceCard(reference.session_id, label, config.max_reference_bytes, problem=problem_of(failure))
            report.cards.append(failed)
        else:
            report.cards.extend(_cards(alone.contexts[0], config.max_reference_bytes))
    return report
