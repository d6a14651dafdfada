"""Context accounting: how many tokens the next request of a session will take, against its window.

The figure starts from what the API reported: the prompt-token count of the session's latest
request (``assistant/message`` usage, dsh's ``inputTokens + cacheReadTokens``), plus an estimate of
what joined the history since (that reply, later prompts), calibrated by the ratio of reported to
estimated tokens over earlier requests. Without reported usage, or once a compaction replaced part
of the history the report was about, it is the calibrated estimate of the whole history.

``ContextMeter`` follows one session's log incrementally (each event is estimated once), so reading
it before every send costs little even at 10,000 messages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any

from core.agent.tokens import ContextWindow, estimate_wire_message
from core.agent.wire import wire_messages
from core.sessions import event_types as ev
from core.sessions.models import SessionEvent
from core.sessions.session import Session
from core.sessions.surface import SURFACE_EVENT_TYPES, SurfaceFolder, event_message

CALIBRATION_SAMPLES = 5
"""How many of the latest reported requests the calibration ratio is the median of."""
CALIBRATION_BOUNDS = (0.2, 5.0)
"""A ratio outside these bounds is a server counting something else; it is clamped."""


def reported_prompt_tokens(usage: Any) -> int | None:
    """The prompt tokens a stored usage reports: dsh's ``inputTokens + cacheReadTokens`` (disjoint
    counts), or a raw chat-completions ``prompt_tokens``; ``None`` when it reports none."""
    if not isinstance(usage, Mapping):
        return None
    if type(usage.get("inputTokens")) is int:
        cached = usage.get("cacheReadTokens")
        return int(usage["inputTokens"]) + (int(cached) if type(cached) is int else 0)
    if type(usage.get("prompt_tokens")) is int:
        return int(usage["prompt_tokens"])
    return None


def estimate_event(event: SessionEvent) -> float:
    """Estimated tokens one surface event adds to a request (0 when it sends nothing)."""
    message = event_message(event)
    if message is None:
        return 0.0
    return sum(estimate_wire_message(wire) for wire in wire_messages([message]))


@dataclass(frozen=True, slots=True)
class ContextReading:
    """The context of a session's next request, in tokens.

    Attributes:
        window: the model's context window, and ``window_source`` where that figure comes from.
        used: what the history will take in the next request (reported + calibrated estimate).
        estimated: the uncalibrated estimate of the whole history.
        reported: the prompt tokens the API reported for the latest request still valid, if any.
        calibration: the reported/estimated ratio applied to estimates (1.0 before any report).
        threshold: above this a send compacts the history first.
        reserve: tokens kept free for the reply.
        messages: messages on the surface.
    """

    window: int
    window_source: str
    used: int
    estimated: int
    reported: int | None
    calibration: float
    threshold: int
    reserve: int
    messages: int

    def calibrated(self, estimate: float) -> int:
        """An estimate in this session's calibrated tokens, rounded up."""
        return math.ceil(estimate * self.calibration)

    def request(self, added: float) -> int:
        """The next request's tokens when ``added`` (estimated, uncalibrated) joins the history."""
        return self.used + self.calibrated(added)

    @property
    def share(self) -> float:
        """``used`` as a fraction of the window."""
        return self.used / self.window if self.window else 0.0


def reply_reserve(window: int) -> int:
    """Tokens a request leaves free for the reply: 4,096, or a sixteenth of a small window."""
    return min(4096, window // 16)


class ContextMeter:
    """Follows one session's log and reads its context (see the module docstring)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._folder = SurfaceFolder(allow_gaps=True)
        self._estimates: dict[int, float] = {}
        self._total = 0.0
        self._consumed = 0
        self._last_replace = -1
        # (seq of the assistant message, reported prompt tokens, estimated tokens of that request)
        self._anchors: list[tuple[int, int, float]] = []

    def _catch_up(self) -> None:
        events = self.session.events
        for event in events[self._consumed :]:
            self._consume(event)
        self._consumed = len(events)

    def _consume(self, event: SessionEvent) -> None:
        if event.type == ev.ASSISTANT_MESSAGE:
            reported = reported_prompt_tokens(event.data.get("usage"))
            if reported is not None and self._total > 0:
                self._anchors.append((event.seq, reported, self._total))
                del self._anchors[:-CALIBRATION_SAMPLES]
        folder = self._folder
        if event.type not in SURFACE_EVENT_TYPES:
            folder.push(event.type, event.seq, event.surface_op, event.source_event_seqs)
            return
        before = list(folder.seqs) if event.surface_op != "append" else None
        folder.push(event.type, event.seq, event.surface_op, event.source_event_seqs)
        estimate = estimate_event(event)
        self._estimates[event.seq] = estimate
        self._total += estimate
        if before is not None:
            self._last_replace = event.seq
            kept = set(folder.seqs)
            for seq in before:
                if seq not in kept:
                    self._total -= self._estimates.pop(seq, 0.0)

    @property
    def calibration(self) -> float:
        """The median reported/estimated ratio of the latest requests (1.0 before any)."""
        self._catch_up()
        ratios = [reported / estimated for _, reported, estimated in self._anchors if estimated > 0]
        if not ratios:
            return 1.0
        low, high = CALIBRATION_BOUNDS
        return min(high, max(low, median(ratios)))

    def read(self, window: ContextWindow, threshold_ratio: float) -> ContextReading:
        """The context of the next request against ``window``."""
        self._catch_up()
        ratio = self.calibration
        anchor = self._anchors[-1] if self._anchors else None
        if anchor is not None and anchor[0] > self._last_replace:
            _, reported, estimated = anchor
            used = reported + math.ceil(max(0.0, self._total - estimated) * ratio)
            reported_now: int | None = reported
        else:
            used = math.ceil(self._total * ratio)
            reported_now = None
        reserve = reply_reserve(window.tokens)
        return ContextReading(
            window=window.tokens,
            window_source=window.source,
            used=used,
            estimated=math.ceil(self._total),
            reported=reported_now,
            calibration=ratio,
            threshold=math.floor(window.tokens * threshold_ratio),
            reserve=reserve,
            messages=len(self._folder.seqs),
        )

    def estimate_of(self, seq: int) -> float:
        """The estimate of a surface event (0 for one not on the surface)."""
        self._catch_up()
        return self._estimates.get(seq, 0.0)
