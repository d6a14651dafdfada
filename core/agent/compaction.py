"""Compaction: a model-written summary replaces older history, in dsh's own log format.

What lands in the log is what ``@deepseek-ai/dsh-compaction-basic`` writes, in one atomic batch
after the summary exists (so a failure or a cancel leaves the log exactly as it was):

1. ``compaction/start`` ``{compactionId, turn}`` (``turn`` is ``null`` between turns);
2. ``compaction/summary`` ``{compactionId, summary, rawOutput?, llmStreamCall?, shadowedRange,
   shadowedSeqs, shadowedTokenCount, provider, model, maxTokens, usage?}``;
3. the checkpoint ``user/message`` ``{content: framed summary, source: {kind: "plugin", plugin:
   "compact", compactionId}}`` with ``surfaceOp: {op: "replace", start, end}`` over the shadowed
   range and ``sourceEventSeqs: [start, summary, ...shadowed]``;
4. ``compaction/end`` ``{compactionId, turn}``.

The range is the oldest part of the surface, up to a prompt boundary (a user prompt starts the
kept tail, so no exchange is split), keeping recent exchanges verbatim within ``retain_ratio`` of
the window and always keeping the prompt being answered. A range too large for one summary
request is summarized in parts, each part's request carrying the summary so far; a single message
too large for any request is cut in the middle for the summary (never in the log).
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.abort import AbortSignal
from core.agent.bounded_text import BoundedText
from core.agent.chat_models import SUMMARY_REQUEST_MARK, ChatModel, ModelError, model_chunks
from core.agent.context import ContextReading, estimate_event
from core.agent.defaults import CompactionPolicy
from core.agent.tokens import estimate_history, estimate_text
from core.agent.wire import wire_text
from core.constants import COMPACT_CHECKPOINT_SOURCE
from core.errors import SessionReferenceError, SessionrefError
from core.reference.projection import is_compact_checkpoint_source
from core.sessions import event_types as ev
from core.sessions.models import SessionEvent
from core.sessions.session import Session
from core.sessions.surface import event_message, text_of_blocks
from core.sessions.wire_shapes import ContentBlock, ModelMessage, TextBlock, TokenUsage

CHECKPOINT_PREAMBLE = (
    "This is an automatically generated checkpoint condensing an earlier span of the conversation to free up "
    "context. Treat the captured context as established background and build on it without restating it. "
    "Continue the task directly from the messages that follow, without acknowledging this checkpoint."
)
"""dsh's framing of a checkpoint (its exact text, so a checkpoint reads the same in both programs)."""
SUMMARY_OPEN_TAG = "<compacted-summary>"
SUMMARY_CLOSE_TAG = "</compacted-summary>"

SUMMARY_INSTRUCTION = "\n".join(
    [
        f"Stop the conversation here and {SUMMARY_REQUEST_MARK} this message, so that the "
        "conversation can continue from it alone: the earlier messages will be replaced by what you write.",
        "",
        "Use exactly these Markdown sections, in this order; write (none) under a section with nothing in it:",
        "",
        "## What the user wants",
        "- the user's goals and requests as they evolved; quote the user's own words where the wording matters",
        "",
        "## Decisions",
        "- what was decided or agreed, and why",
        "",
        "## Facts and data",
        "- names, numbers, paths, commands, identifiers, quotes and results established so far, exactly as written",
        "",
        "## Referenced sessions",
        "- other sessions the user referenced (their label and id) and what was used from each",
        "",
        "## Open questions",
        "- what is still undecided or unanswered, and pending requests",
        "",
        "## Where we are",
        "- what was being discussed last, and the next step if one was named",
        "",
        "Rules:",
        "- Be terse: bullets, not paragraphs. Keep every fact needed to continue; drop chit-chat.",
        "- Keep corrections and preferences the user stated; they override earlier statements.",
        f"- A {SUMMARY_OPEN_TAG} block above is an earlier checkpoint: merge it into this one (keep what is "
        "still true, drop what is stale) instead of copying it.",
        "- Write the checkpoint only. Do not mention this request or that the conversation was condensed.",
    ]
)
"""The summarization request: the final user message after the history it condenses."""

SPLIT_MARGIN = 0.9
"""A summary request is packed to this fraction of the room it has (estimates are estimates)."""

COMPACTION_FAILED = "COMPACTION_FAILED"
"""Summarizing failed (the model's error is the cause); the log is unchanged."""
COMPACTION_CANCELLED = "COMPACTION_CANCELLED"
"""The user cancelled; the log is unchanged."""
COMPACTION_NOTHING = "COMPACTION_NOTHING_TO_COMPACT"
"""There is no older history to summarize (the kept prompt is all there is)."""
CONTEXT_PROMPT_TOO_LARGE = "CONTEXT_PROMPT_TOO_LARGE"
"""A prompt cannot fit the model's window even with the whole history compacted."""


class CompactionError(SessionrefError):
    """Compaction or a context check failed; ``code`` is stable and the message says what to do.

    ``context_limit`` is the window a summary request's context-length error stated, if any.
    """

    def __init__(self, message: str, code: str, *, context_limit: int | None = None) -> None:
        super().__init__(message, code)
        self.context_limit = context_limit


def summary_cap(policy: CompactionPolicy, window: int) -> int:
    """The summary's token cap in a window: the policy's, at most an eighth of the window."""
    return max(256, min(policy.summary_max_tokens, window // 8))


_FRAME_TAG = re.compile(r"<(?=\s*/?\s*compacted-summary)", re.IGNORECASE)
"""The angle bracket of anything a model could read as the checkpoint frame's open or close tag."""


def as_summary_data(text: str) -> str:
    """Summary text as data inside the frame: every spelling of the frame's tags (any case, spaces
    inside) has its ``<`` written ``&lt;``, so a summary can neither close the frame and put words
    outside it nor open a second one. The words stay readable; nothing else changes."""
    return _FRAME_TAG.sub("&lt;", text)


def frame_summary(summary: Sequence[ContentBlock]) -> list[ContentBlock]:
    """The checkpoint's content: dsh's preamble and open tag, the summary blocks (as data:
    ``as_summary_data``), the close tag."""
    framed: list[ContentBlock] = [{"type": "text", "text": f"{CHECKPOINT_PREAMBLE}\n\n{SUMMARY_OPEN_TAG}"}]
    for block in summary:
        if block["type"] == "text":
            framed.append({**block, "text": as_summary_data(block["text"])})
        else:
            framed.append(block)
    framed.append({"type": "text", "text": SUMMARY_CLOSE_TAG})
    return framed


def checkpoint_allowance(policy: CompactionPolicy, window: int) -> int:
    """The most tokens a checkpoint can take (its cap plus the framing)."""
    return summary_cap(policy, window) + math.ceil(estimate_text(CHECKPOINT_PREAMBLE)) + 16


@dataclass(frozen=True, slots=True)
class CompactionProgress:
    """Where a running compaction is: summarizing ``part`` of ``parts`` (1-based)."""

    part: int
    parts: int
    messages: int


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compaction wrote."""

    compaction_id: str
    start_seq: int
    summary_seq: int
    checkpoint_seq: int
    end_seq: int
    shadowed_seqs: list[int]
    shadowed_tokens: int
    summary: str
    parts: int


@dataclass(slots=True)
class _Plan:
    shadowed: list[SessionEvent]
    shadowed_tokens: float
    parts: list[list[ModelMessage]] = field(default_factory=list)


def _is_prompt(event: SessionEvent) -> bool:
    if event.type == ev.STEERING_MESSAGE:
        return True
    return event.type == ev.USER_MESSAGE and not is_compact_checkpoint_source(event.data.get("source"))


def select_range(
    surface: Sequence[SessionEvent],
    estimates: Callable[[SessionEvent], float],
    *,
    keep_from: int | None,
    retain_tokens: float,
    room_tokens: float | None = None,
) -> list[SessionEvent]:
    """The surface events to compact: the oldest ones, up to a prompt boundary.

    ``keep_from`` is the surface position of the prompt being answered (never compacted, nor
    anything after it); ``None`` compacts up to the end. Recent exchanges are kept while they fit
    ``retain_tokens``, unless keeping them would leave more than ``room_tokens`` after compaction.
    An empty list means nothing useful can be compacted.
    """
    end = len(surface) if keep_from is None else keep_from
    boundaries = [index for index in range(1, end) if _is_prompt(surface[index])]
    cut = end
    tail = 0.0
    kept_after = sum(estimates(event) for event in surface[end:])
    # Walk back over whole exchanges while the kept tail fits the retention budget.
    for boundary in reversed(boundaries):
        size = sum(estimates(event) for event in surface[boundary:cut])
        if tail + size > retain_tokens:
            break
        if room_tokens is not None and kept_after + tail + size > room_tokens:
            break
        tail += size
        cut = boundary
    shadowed = list(surface[:cut])
    if len(shadowed) == 1 and is_compact_checkpoint_source(shadowed[0].data.get("source")):
        # Only an earlier checkpoint would be summarized again: keep nothing verbatim instead.
        shadowed = list(surface[:end])
    if not shadowed or (len(shadowed) == 1 and is_compact_checkpoint_source(shadowed[0].data.get("source"))):
        return []
    return shadowed


def _shorten(message: ModelMessage, budget: float) -> ModelMessage:
    """``message`` with its text cut in the middle so that it fits ``budget`` estimated tokens."""
    text = text_of_blocks(message.get("content") or [])
    total = estimate_text(text) or 1.0
    keep = max(200, int(len(text) * max(0.0, budget - 64) / total))
    if keep >= len(text):
        return message
    head, tail = keep * 2 // 3, keep // 3
    omitted = len(text) - head - tail
    marker = f"\n[… {omitted:,} characters of this message omitted for the summary …]\n"
    cut = f"{text[:head]}{marker}{text[len(text) - tail :]}"
    return {"role": message["role"], "content": [{"type": "text", "text": cut}]}


def plan_parts(
    messages: Sequence[ModelMessage], budget: float, sizes: Sequence[float] | None = None
) -> list[list[ModelMessage]]:
    """Pack ``messages`` in order into parts of at most ``budget`` estimated tokens each
    (``sizes``: their estimates when already known)."""
    parts: list[list[ModelMessage]] = [[]]
    used = 0.0
    for index, message in enumerate(messages):
        size = sizes[index] if sizes is not None else estimate_history([message])
        if size > budget:
            message = _shorten(message, budget)
            size = estimate_history([message])
        if parts[-1] and used + size > budget:
            parts.append([])
            used = 0.0
        parts[-1].append(message)
        used += size
    return parts


def _request(prior: str | None, part: Sequence[ModelMessage]) -> list[ModelMessage]:
    """One summary request: the summary so far (as a checkpoint), the part, then the instruction.

    Consecutive user messages are merged, since some servers refuse two in a row.
    """
    messages: list[ModelMessage] = []
    if prior is not None:
        messages.append({"role": "user", "content": frame_summary([{"type": "text", "text": prior}])})
    messages.extend(part)
    instruction: TextBlock = {"type": "text", "text": SUMMARY_INSTRUCTION}
    merged: list[ModelMessage] = []
    asked: ModelMessage = {"role": "user", "content": [instruction]}
    for message in [*messages, asked]:
        if merged and merged[-1]["role"] == "user" and message["role"] == "user":
            separator: TextBlock = {"type": "text", "text": "\n\n"}
            merged[-1] = {"role": "user", "content": [*merged[-1]["content"], separator, *message["content"]]}
        else:
            merged.append(message)
    return merged


def _add_usage(total: dict[str, int] | None, usage: TokenUsage | None) -> dict[str, int] | None:
    if not isinstance(usage, dict):
        return total
    merged = dict(total or {})
    for key, value in usage.items():
        if type(value) is int:
            merged[key] = merged.get(key, 0) + value
    return merged


async def _summarize_part(
    model: ChatModel, messages: list[ModelMessage], cap: int, signal: AbortSignal, max_chars: int
) -> tuple[str, list[ContentBlock], TokenUsage | None]:
    """One summary request's text (at most ``max_chars``, cut with a notice: the stream is closed
    there), its raw output and usage."""
    written = BoundedText(max_chars)
    reasoning = BoundedText(max_chars)
    usage: TokenUsage | None = None
    async for chunk in model_chunks(model, messages, signal=signal, max_tokens=cap):
        if chunk["type"] == "text-delta":
            written.add(str(chunk.get("text", "")))
            if written.cut:
                break  # closes the stream: a model that writes without end is not read to its end
        elif chunk["type"] == "reasoning-delta":
            reasoning.add(str(chunk.get("text", "")))
        elif chunk["type"] == "usage":
            usage = chunk["usage"]
    raw: list[ContentBlock] = []
    if reasoning.kept:
        raw.append({"type": "reasoning", "text": reasoning.value("reasoning")})
    text = written.value("summary", stopped=True)
    if text:
        raw.append({"type": "text", "text": text})
    return text, raw, usage


Progress = Callable[[CompactionProgress], None]


async def compact(
    session: Session,
    model: ChatModel,
    reading: ContextReading,
    policy: CompactionPolicy,
    *,
    signal: AbortSignal,
    turn: int | None = None,
    keep_from_seq: int | None = None,
    incoming: float = 0.0,
    progress: Progress | None = None,
    estimates: Callable[[SessionEvent], float] = estimate_event,
) -> CompactionResult:
    """Summarize the older history of ``session`` with ``model`` and write the checkpoint.

    Args:
        reading: the session's context now (window and calibration).
        turn: the open turn the compaction runs in, ``None`` between turns.
        keep_from_seq: the prompt being answered: it and everything after it are kept.
        incoming: estimated tokens of a prompt about to be added (pressure compaction before a send).
        progress: called before each summary request.
        estimates: the estimate of a surface event (the loop passes its meter's, computed once).

    Raises:
        CompactionError: ``COMPACTION_NOTHING_TO_COMPACT``, ``COMPACTION_FAILED`` (the model
            failed or wrote nothing shorter), ``COMPACTION_CANCELLED``; nothing is written then.
        SessionQueryError: the store could not write the batch (nothing is written either).
    """
    window, ratio = reading.window, reading.calibration
    surface = session.surface()
    keep_from = None
    if keep_from_seq is not None:
        keep_from = next((index for index, event in enumerate(surface) if event.seq == keep_from_seq), None)
    cap = summary_cap(policy, window)
    allowance = checkpoint_allowance(policy, window)
    room = (reading.threshold - reading.reserve - allowance) / ratio - incoming
    shadowed = select_range(
        surface,
        estimates,
        keep_from=keep_from,
        retain_tokens=window * policy.retain_ratio / ratio,
        room_tokens=room,
    )
    if not shadowed:
        raise CompactionError("there is no older history to compact yet", COMPACTION_NOTHING)
    messages: list[ModelMessage] = []
    sizes: list[float] = []
    for event in shadowed:
        message = event_message(event)
        if message is not None:
            messages.append(message)
            sizes.append(estimates(event))
    shadowed_tokens = sum(sizes)
    instruction = estimate_text(SUMMARY_INSTRUCTION) + 16
    budget = ((window - reading.reserve - cap) / ratio - instruction - allowance) * SPLIT_MARGIN
    if budget < 256:
        raise CompactionError(
            f"the model's window ({window:,} tokens) is too small to summarize anything in", COMPACTION_FAILED
        )
    parts = plan_parts(messages, budget, sizes)
    summary: str | None = None
    raw: list[ContentBlock] = []
    usage: dict[str, int] | None = None
    try:
        for number, part in enumerate(parts, 1):
            if progress is not None:
                progress(CompactionProgress(number, len(parts), len(shadowed)))
            text, raw, part_usage = await _summarize_part(
                model, _request(summary, part), cap, signal, policy.summary_max_chars
            )
            usage = _add_usage(usage, part_usage)
            if not text.strip():
                raise CompactionError("the model wrote an empty summary", COMPACTION_FAILED)
            summary = text
    except SessionReferenceError as error:
        raise CompactionError("compaction was cancelled; nothing changed", COMPACTION_CANCELLED) from error
    except ModelError as error:
        if signal.aborted:
            raise CompactionError("compaction was cancelled; nothing changed", COMPACTION_CANCELLED) from error
        raise CompactionError(
            f"the summary request failed: {error.line}; nothing changed",
            COMPACTION_FAILED,
            context_limit=error.context_limit,
        ) from error
    if signal.aborted:
        raise CompactionError("compaction was cancelled; nothing changed", COMPACTION_CANCELLED)
    assert summary is not None
    blocks: list[ContentBlock] = [{"type": "text", "text": summary}]
    content = frame_summary(blocks)
    framed = estimate_history([{"role": "user", "content": content}])
    if framed >= shadowed_tokens:
        raise CompactionError(
            f"the summary ({math.ceil(framed):,} tokens) is not smaller than what it replaces "
            f"({math.ceil(shadowed_tokens):,}); nothing changed",
            COMPACTION_FAILED,
        )
    return _write(session, model, shadowed, shadowed_tokens, blocks, raw, usage, cap, turn, len(parts))


def _write(
    session: Session,
    model: ChatModel,
    shadowed: list[SessionEvent],
    shadowed_tokens: float,
    blocks: list[ContentBlock],
    raw: list[ContentBlock],
    usage: dict[str, int] | None,
    cap: int,
    turn: int | None,
    parts: int,
) -> CompactionResult:
    compaction_id = str(uuid.uuid4())
    first = session.events[-1].seq + 1 if session.events else 0
    start_seq, summary_seq = first, first + 1
    seqs = [event.seq for event in shadowed]
    summary: dict[str, Any] = {"compactionId": compaction_id, "summary": blocks}
    if parts == 1:
        # One model call made this summary: its complete output, marked as dsh marks it.
        summary.update(rawOutput=raw, llmStreamCall=True)
    summary.update(
        shadowedRange={"start": seqs[0], "end": seqs[-1]},
        shadowedSeqs=seqs,
        shadowedTokenCount=math.ceil(shadowed_tokens),
        provider=model.provider,
        model=model.name,
        maxTokens=cap,
    )
    if usage:
        summary["usage"] = usage
    source = {**COMPACT_CHECKPOINT_SOURCE, "compactionId": compaction_id}
    bracket = {"compactionId": compaction_id, "turn": turn}
    written = session.append_batch(
        [
            ("compaction/start", bracket, None, None),
            ("compaction/summary", summary, None, None),
            (
                ev.USER_MESSAGE,
                {"content": frame_summary(blocks), "source": source},
                {"op": "replace", "start": seqs[0], "end": seqs[-1]},
                [start_seq, summary_seq, *seqs],
            ),
            ("compaction/end", bracket, None, None),
        ]
    )
    return CompactionResult(
        compaction_id=compaction_id,
        start_seq=written[0].seq,
        summary_seq=written[1].seq,
        checkpoint_seq=written[2].seq,
        end_seq=written[3].seq,
        shadowed_seqs=seqs,
        shadowed_tokens=math.ceil(shadowed_tokens),
        summary=wire_text(blocks),
        parts=parts,
    )
