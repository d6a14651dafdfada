"""``AgentLoop``: turns over a session: baked prompts, streamed replies, steering, titles (CONTRACT §8),
and the session's context: accounting before every send and compaction when it is needed.

Compaction (``core.agent.compaction``) runs on demand (``compact_now``), before a send whose request
would pass the policy's threshold (between turns, so a cancel or a failure leaves nothing written
and the prompt unsent), before a later step of a turn under the same pressure, and once after the
server refuses a request as too long (the window it states is remembered), then that step is
retried once. A prompt that cannot fit even after compaction is refused before anything is written.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Coroutine, Sequence
from typing import Any, Literal, TypeVar

from core.abort import AbortController
from core.agent.chat_models import MODEL_CONTEXT_LENGTH, ChatModel, ModelError
from core.agent.compaction import (
    COMPACTION_CANCELLED,
    CompactionError,
    CompactionProgress,
    CompactionResult,
)
from core.agent.context import ContextMeter, ContextReading
from core.agent.defaults import MAX_STEPS
from core.agent.session_tools import SessionTools
from core.agent.step import StepRunner
from core.agent.tokens import ContextWindow
from core.agent.tool_steps import TURN_STEP_LIMIT
from core.agent.window_keeper import ContextSettings, WindowKeeper, prompt_estimate
from core.errors import SessionQueryError, SessionReferenceError
from core.listeners import Listeners
from core.reference.baking import bake_prompt_message
from core.sessions import event_types as ev
from core.sessions.models import HookContext, SessionEvent
from core.sessions.session import Session
from core.sessions.surface import display_prompt_content, text_of_blocks
from core.sessions.wire_shapes import ContentBlock

Done = TypeVar("Done")

__all__ = ["FLUSH_INTERVAL", "TITLE_LIMIT", "AgentLoop", "ContextSettings", "fallback_title", "prompt_estimate"]

TITLE_LIMIT = 60
"""Fallback titles keep at most this many characters of the first line."""

FLUSH_INTERVAL = 0.2
"""Seconds streamed chunks may wait before they are written (dsh's ``writeBatchMaxDelayMs`` is 200)."""

Prompt = tuple[list[ContentBlock], Sequence[HookContext]]


def fallback_title(display_content: list[ContentBlock]) -> str:
    """A title from the user's own words: first non-empty line, trimmed, at most ``TITLE_LIMIT`` characters."""
    text = text_of_blocks(display_content)
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(line) > TITLE_LIMIT:
        line = line[: TITLE_LIMIT - 1].rstrip() + "…"
    return line or "Untitled"


class AgentLoop:
    """Runs turns on one session with one model; writes every event of CONTRACT §8 to the log."""

    def __init__(
        self,
        session: Session,
        model: ChatModel,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        context: ContextSettings | None = None,
        tools: SessionTools | None = None,
        max_steps: int = MAX_STEPS,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, not {max_steps}")
        self.session = session
        self.model = model
        self.tools = tools
        """The session tools offered to the model (``None``: none are offered)."""
        self.max_steps = max_steps
        self.flush_interval = flush_interval
        settings = context if context is not None else ContextSettings()
        self.changed: Listeners[None] = Listeners()
        """Told when the loop's state changed: a turn began or ended, a compaction began, moved on or
        ended (``status``, ``compacting``, ``last_error`` say how things stand). What a turn writes
        is told by its session (``session.appended``)."""
        self.keeper = WindowKeeper(session, model, settings, self.changed)
        """The session's window and its compaction."""
        self._steps = StepRunner(
            session, model, tools, flush_interval=flush_interval, max_reasoning_chars=settings.max_reasoning_chars
        )
        self._compaction_task: asyncio.Task[CompactionResult] | None = None
        self._flush_timer: asyncio.TimerHandle | None = None
        self._queue: deque[Prompt] = deque()
        self._steering: list[Prompt] = []
        self._task: asyncio.Task[None] | None = None
        self._abort: AbortController | None = None
        # Turns and steps count from 1, as dsh numbers them.
        self._turn = 1 + sum(1 for event in session.events if event.type == ev.TURN_START)
        self.last_error: ModelError | None = None

    @property
    def status(self) -> Literal["idle", "running", "compacting"]:
        """``running`` while a turn is in progress, ``compacting`` while compaction runs between turns."""
        if self._task is not None and not self._task.done():
            return "running"
        if self._compaction_task is not None and not self._compaction_task.done():
            return "compacting"
        return "idle"

    # -- the window (the keeper's) ------------------------------------------------------------------

    @property
    def settings(self) -> ContextSettings:
        """The configured window, where learned windows are kept, and the compaction policy."""
        return self.keeper.settings

    @property
    def meter(self) -> ContextMeter:
        """What the session's history takes of the window."""
        return self.keeper.meter

    @property
    def window(self) -> ContextWindow:
        """The model's context window (``WindowKeeper.window``)."""
        return self.keeper.window

    @property
    def compacting(self) -> CompactionProgress | None:
        """Where a running compaction is (``None`` when none runs); the app shows it."""
        return self.keeper.compacting

    @property
    def last_compaction(self) -> CompactionResult | None:
        """The latest compaction that succeeded."""
        return self.keeper.last_compaction

    @property
    def compaction_error(self) -> CompactionError | None:
        """The latest automatic compaction that failed while the send went ahead anyway, until a
        host takes it (``take_compaction_error``)."""
        return self.keeper.compaction_error

    def take_compaction_error(self) -> CompactionError | None:
        """The failed automatic compaction not yet reported, once: the next call gives ``None``."""
        error, self.keeper.compaction_error = self.keeper.compaction_error, None
        return error

    def context(self) -> ContextReading:
        """The context the next request starts from (``core.agent.context``)."""
        return self.keeper.context()

    def fit(self, content: list[ContentBlock], contexts: Sequence[HookContext] = ()) -> tuple[int, int]:
        """``(request, floor)`` of a prompt (``WindowKeeper.fit``)."""
        return self.keeper.fit(content, contexts)

    def fit_estimate(self, reading: ContextReading, added: float) -> tuple[int, int]:
        """``fit`` for a reading and a prompt estimate the caller already has."""
        return self.keeper.fit_estimate(reading, added)

    def check_fits(self, content: list[ContentBlock], contexts: Sequence[HookContext] = ()) -> None:
        """Refuse a prompt that cannot fit the window even with the whole history compacted.

        Raises:
            CompactionError: ``CONTEXT_PROMPT_TOO_LARGE``.
        """
        self.keeper.check_fits(content, contexts)

    # -- turns ------------------------------------------------------------------------------------

    async def compact_now(self) -> CompactionResult:
        """Compact the session's history now (between turns); the log is unchanged on failure.

        Raises:
            CompactionError: ``COMPACTION_BUSY`` while a turn runs, nothing to compact,
                failed or cancelled (``cancel()``).
        """
        if self.status != "idle":
            raise CompactionError("wait for the reply to finish, then compact", "COMPACTION_BUSY")
        controller = AbortController()
        self._abort = controller
        self._compaction_task = self._watched(self.keeper.compact(controller, turn=None, keep_from_seq=None))
        try:
            return await self._compaction_task
        finally:
            self._abort = None

    async def followup(self, content: list[ContentBlock], contexts: Sequence[HookContext] = ()) -> None:
        """Start a turn with this prompt, or queue it for the next turn while one runs.

        When the request would pass the compaction threshold, the history is compacted first
        (``status`` is ``compacting`` meanwhile; ``cancel()`` stops it and nothing is sent).

        Raises:
            CompactionError: ``CONTEXT_PROMPT_TOO_LARGE`` (nothing written), or a compaction that
                was cancelled or failed while the request would not fit the window without it.
        """
        if self.status != "idle":
            self._queue.append((content, contexts))
            return
        # One estimate of the baked prompt (up to three references' text) serves every check below.
        added = prompt_estimate(content, contexts)
        reading = self.context()
        request, floor = self.keeper.fit_estimate(reading, added)
        self.keeper.refuse_over(floor)
        policy = self.settings.policy
        if policy.auto and reading.messages and request + reading.reserve > reading.threshold:
            controller = AbortController()
            self._abort = controller
            self._compaction_task = self._watched(
                self.keeper.compact(controller, turn=None, keep_from_seq=None, incoming=added)
            )
            try:
                await self._compaction_task
            except CompactionError as error:
                # A compaction that failed wrote nothing: the request is still ``request``.
                if error.code == COMPACTION_CANCELLED or request + reading.reserve > reading.window:
                    raise
                self.keeper.compaction_error = error  # it still fits: send it anyway, and say so
            finally:
                self._abort = None
            self.keeper.pressure_checked = True
        self._start(content, contexts)

    async def steer(self, content: list[ContentBlock], contexts: Sequence[HookContext] = ()) -> None:
        """Add a prompt to the running turn (recorded after the current step); idle: like ``followup``."""
        if self.status == "running":
            self._steering.append((content, contexts))
            return
        self._start(content, contexts)

    def cancel(self) -> None:
        """Abort the running turn (the stream closes, what arrived is kept, the turn ends ``aborted``)
        or the running compaction (nothing is written)."""
        if self._abort is not None:
            self._abort.abort("cancelled by the user")

    async def when_idle(self) -> None:
        """Wait until no turn runs and nothing is queued."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
        if self._compaction_task is not None and not self._compaction_task.done():
            with contextlib.suppress(CompactionError, SessionQueryError):
                await asyncio.shield(self._compaction_task)

    # -- the turn ---------------------------------------------------------------------------------

    def _start(self, content: list[ContentBlock], contexts: Sequence[HookContext]) -> None:
        turn = self._turn
        self._turn += 1
        self.session.append(ev.TURN_START, {"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}})
        prompt = self._record_prompt(ev.USER_MESSAGE, turn, content, contexts)
        self._abort = AbortController()
        self._task = self._watched(self._run(turn, prompt, self._abort))

    def _watched(self, work: Coroutine[Any, Any, Done]) -> asyncio.Task[Done]:
        """``work`` as a task whose end the listeners are told of (``status`` changes); its start
        too, once the caller holds it (``status`` reads it), on the next pass of the event loop."""
        task = asyncio.create_task(work)
        task.add_done_callback(lambda _task: self.changed.emit(None))
        asyncio.get_running_loop().call_soon(self.changed.emit, None)
        return task

    def _record_prompt(
        self, event_type: str, turn: int, content: list[ContentBlock], contexts: Sequence[HookContext]
    ) -> SessionEvent:
        baked = bake_prompt_message(content, contexts)
        data = baked.data if event_type == ev.USER_MESSAGE else {"turn": turn, **baked.data}
        batch: list[tuple[str, dict[str, Any], Any, Any]] = [(event_type, data, "append", None)]
        for context in baked.separate_contexts:
            extra: dict[str, Any] = {"content": context.content, "source": context.source}
            if context.meta is not None:
                extra["meta"] = context.meta
            batch.append((ev.USER_MESSAGE, extra, "append", None))
        return self.session.append_batch(batch)[0]

    async def _run(self, turn: int, prompt: SessionEvent, controller: AbortController) -> None:
        reason, error = "completed", None
        step = 1
        retried = False
        try:
            while True:
                try:
                    await self.keeper.pressure(turn, prompt, controller)
                    outcome = await self._steps.run(turn, step, controller)
                except ModelError as failure:
                    if failure.code != MODEL_CONTEXT_LENGTH or retried:
                        raise
                    # The server says the request was too long: learn its window, compact, retry once.
                    retried = True
                    self.keeper.learn(failure)
                    step += 1
                    try:
                        await self.keeper.compact(controller, turn=turn, keep_from_seq=prompt.seq)
                    except CompactionError as compaction:
                        if compaction.code == COMPACTION_CANCELLED:
                            reason = "aborted"
                            break
                        raise failure from compaction
                    continue
                step += 1
                if outcome == "tool-calls":
                    if step > self.max_steps:
                        raise ModelError(
                            f"the turn reached its step limit ({self.max_steps} steps) while the model was still "
                            "calling tools; what it found is kept",
                            TURN_STEP_LIMIT,
                        )
                    continue  # the next step sends the results
                if outcome != "completed":
                    reason = outcome
                    break
                if not self._steering:
                    break
                pending, self._steering = self._steering, []
                for content, contexts in pending:
                    self._record_prompt(ev.STEERING_MESSAGE, turn, content, contexts)
        except ModelError as failure:
            reason, error = "error", failure
        except SessionReferenceError:
            reason = "aborted"
        # dsh's turn/end: {turn, reason: {kind}}; a failure also names its step, message and code.
        ending: dict[str, Any] = {"kind": reason}
        if error is not None:
            self.last_error = error
            ending.update(step=step, message=error.message, code=error.code)
        self.session.append(ev.TURN_END, {"turn": turn, "reason": ending})
        if reason == "completed" and self.session.title is None:
            title = fallback_title(display_prompt_content(prompt.data))
            self.session.append(
                ev.SESSION_TITLE, {"title": title, "messageSeqs": [prompt.seq], "source": {"kind": "fallback"}}
            )
        # Steering that never got its step becomes the next turn, so no prompt is lost.
        self._queue.extendleft(reversed(self._steering))
        self._steering = []
        if self._queue:
            content, contexts = self._queue.popleft()
            self._start(content, contexts)
