"""What an agent loop knows of its model's window and how it keeps a session's history within it:
the window (configured, learned from a server's refusal, built in or assumed), the reading of what
the next request takes, the checks that refuse a prompt no compaction can make fit, and compaction
itself (on demand, before a send, or inside a turn). ``core.agent.loop.AgentLoop`` has one
``WindowKeeper`` per session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core.abort import AbortController
from core.agent.chat_models import ChatModel, ModelError, ServedModel
from core.agent.compaction import (
    COMPACTION_CANCELLED,
    CONTEXT_PROMPT_TOO_LARGE,
    CompactionError,
    CompactionProgress,
    CompactionResult,
    checkpoint_allowance,
    compact,
)
from core.agent.context import ContextMeter, ContextReading
from core.agent.defaults import MAX_REASONING_CHARS, CompactionPolicy
from core.agent.tokens import ContextWindow, WindowMemory, estimate_history, resolve_window
from core.errors import ReferenceCancelled
from core.listeners import Listeners
from core.reference.baking import bake_prompt_message
from core.sessions.models import HookContext, SessionEvent
from core.sessions.session import Session
from core.sessions.wire_shapes import ContentBlock, ModelMessage


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """A loop's context configuration: the configured window (``None``: built in or assumed), where
    learned windows are remembered, the compaction policy, and how much of a reply's reasoning is
    kept (past it, cut with a notice)."""

    window: int | None = None
    memory: WindowMemory | None = None
    policy: CompactionPolicy = field(default_factory=CompactionPolicy)
    max_reasoning_chars: int = MAX_REASONING_CHARS

    def __post_init__(self) -> None:
        if self.max_reasoning_chars <= 0:
            raise ValueError(f"max_reasoning_chars must be positive, not {self.max_reasoning_chars}")


def prompt_estimate(content: list[ContentBlock], contexts: Sequence[HookContext] = ()) -> float:
    """Estimated tokens a prompt adds to a request once baked (its references included)."""
    baked = bake_prompt_message(content, contexts)
    messages: list[ModelMessage] = [{"role": "user", "content": baked.data["content"]}]
    messages.extend({"role": "user", "content": context.blocks} for context in baked.separate_contexts)
    return estimate_history(messages)


class WindowKeeper:
    """The window and compaction of one session's agent loop: what the next request takes, and
    compaction that keeps it within the window.

    Args:
        session: the session whose history it keeps.
        model: the model whose window it is.
        settings: the configured window, where learned windows are kept, the compaction policy.
    """

    def __init__(
        self, session: Session, model: ChatModel, settings: ContextSettings, changed: Listeners[None] | None = None
    ) -> None:
        self.changed: Listeners[None] = changed if changed is not None else Listeners()
        """Told when a compaction began, moved on or ended (``compacting`` says where it is)."""
        self.session = session
        self.model = model
        self.settings = settings
        self.meter = ContextMeter(session)
        self.compacting: CompactionProgress | None = None
        """Where a running compaction is (``None`` when none runs); the app shows it."""
        self.last_compaction: CompactionResult | None = None
        self.compaction_error: CompactionError | None = None
        """The latest automatic compaction that failed while the send went ahead anyway."""
        self.pressure_checked = False
        """Set when a send compacted (or tried to) just before the turn's first step."""

    @property
    def window(self) -> ContextWindow:
        """The model's context window (``core.agent.tokens.resolve_window``: configured unless its server
        said it is smaller, else learned, else built in, else assumed)."""
        return resolve_window(
            self.model.name,
            base_url=self.model.base_url if isinstance(self.model, ServedModel) else None,
            configured=self.settings.window,
            memory=self.settings.memory,
        )

    def context(self) -> ContextReading:
        """The context the next request starts from (``core.agent.context``)."""
        return self.meter.read(self.window, self.settings.policy.threshold_ratio)

    def fit(self, content: list[ContentBlock], contexts: Sequence[HookContext] = ()) -> tuple[int, int]:
        """``(request, floor)``: the tokens of the next request with this prompt, and the least it can
        take after compacting everything before it (checkpoint + prompt + the reply's reserve)."""
        return self.fit_estimate(self.context(), prompt_estimate(content, contexts))

    def fit_estimate(self, reading: ContextReading, added: float) -> tuple[int, int]:
        """``fit`` for a reading and a prompt estimate the caller already has."""
        checkpoint = checkpoint_allowance(self.settings.policy, reading.window) if reading.messages else 0
        return reading.request(added), reading.calibrated(added) + checkpoint + reading.reserve

    def check_fits(self, content: list[ContentBlock], contexts: Sequence[HookContext] = ()) -> None:
        """Refuse a prompt that cannot fit the window even with the whole history compacted.

        Raises:
            CompactionError: ``CONTEXT_PROMPT_TOO_LARGE``, saying how large and what to do.
        """
        _, floor = self.fit(content, contexts)
        self.refuse_over(floor)

    def refuse_over(self, floor: int) -> None:
        window = self.window
        if floor > window.tokens:
            raise CompactionError(
                f"this message needs about {floor:,} tokens (with room for the reply), more than "
                f"{self.model.name}'s window of {window.tokens:,} tokens ({window.source}), even with the "
                "history compacted: reference fewer sessions, lower the reference budget "
                "(--max-reference-bytes), or use a model with a larger window",
                CONTEXT_PROMPT_TOO_LARGE,
            )

    def _progress(self, progress: CompactionProgress) -> None:
        self.compacting = progress
        self.changed.emit(None)

    async def compact(
        self, controller: AbortController, *, turn: int | None, keep_from_seq: int | None, incoming: float = 0.0
    ) -> CompactionResult:
        """Compact the history (``turn`` ``None``: between turns), keeping ``keep_from_seq`` on; once
        more with parts sized for the server when it says the summary request was too long.

        Raises:
            CompactionError: nothing to compact, failed, or cancelled through ``controller``.
        """
        self.compacting = CompactionProgress(0, 0, 0)
        self.changed.emit(None)
        try:
            return await self._compact_once(controller, turn=turn, keep_from_seq=keep_from_seq, incoming=incoming)
        except CompactionError as error:
            window = self.window.tokens
            if error.context_limit is None or error.context_limit >= window:
                raise
            # The summary request itself was too long for the server: learn its window and try again
            # once with parts sized for it.
            self._learn_limit(error.context_limit)
            if self.window.tokens >= window:
                raise
            return await self._compact_once(controller, turn=turn, keep_from_seq=keep_from_seq, incoming=incoming)
        finally:
            self.compacting = None
            self.changed.emit(None)

    async def _compact_once(
        self, controller: AbortController, *, turn: int | None, keep_from_seq: int | None, incoming: float
    ) -> CompactionResult:
        result = await compact(
            self.session,
            self.model,
            self.context(),
            self.settings.policy,
            signal=controller.signal,
            turn=turn,
            keep_from_seq=keep_from_seq,
            incoming=incoming,
            progress=self._progress,
            estimates=lambda event: self.meter.estimate_of(event.seq),
        )
        self.last_compaction = result
        return result

    async def pressure(self, turn: int, prompt: SessionEvent, controller: AbortController) -> None:
        """Compact inside the turn when its next request would pass the threshold (best effort)."""
        if self.pressure_checked:
            self.pressure_checked = False  # the send compacted (or tried to) just before this step
            return
        reading = self.context()
        if not self.settings.policy.auto or reading.used + reading.reserve <= reading.threshold:
            return
        try:
            await self.compact(controller, turn=turn, keep_from_seq=prompt.seq)
        except CompactionError as error:
            if error.code == COMPACTION_CANCELLED:
                raise ReferenceCancelled(error.message) from error
            self.compaction_error = error

    def learn(self, error: ModelError) -> None:
        """Remember the window a server stated when it refused a request as too long."""
        if error.context_limit is not None:
            self._learn_limit(error.context_limit)

    def _learn_limit(self, limit: int) -> None:
        base_url = self.model.base_url if isinstance(self.model, ServedModel) else None
        if self.settings.memory is not None and isinstance(base_url, str):
            self.settings.memory.learn(base_url, self.model.name, limit)
