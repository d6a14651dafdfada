"""One step of a turn: a model request and its streamed reply, written to the log as dsh writes it
(chunks batched per flush interval, then the message and the step's end in one durable batch), and
the tool calls the reply made, run and logged (``core.agent.tool_steps``)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from core.abort import AbortController
from core.agent.bounded_text import BoundedText
from core.agent.chat_models import ChatModel, ModelError, model_chunks
from core.agent.session_tools import SessionTools
from core.agent.tool_steps import ToolCalls, run_calls
from core.errors import SessionQueryError, SessionReferenceError
from core.sessions import event_types as ev
from core.sessions.session import Session
from core.sessions.wire_shapes import TokenUsage


class StepRunner:
    """Runs the steps of one session's turns (``AgentLoop`` has one).

    Args:
        session: where the steps are written.
        model: what is asked.
        tools: the session tools offered to the model (``None``: none are).
        flush_interval: seconds streamed chunks may wait before they are written (0: at once).
        max_reasoning_chars: a reply's reasoning kept at most (past it, cut with a notice).
    """

    def __init__(
        self,
        session: Session,
        model: ChatModel,
        tools: SessionTools | None,
        *,
        flush_interval: float,
        max_reasoning_chars: int,
    ) -> None:
        self._session = session
        self._model = model
        self._tools = tools
        self._flush_interval = flush_interval
        self._max_reasoning_chars = max_reasoning_chars
        self._flush_timer: asyncio.TimerHandle | None = None

    def _append_chunk(self, data: dict[str, Any]) -> None:
        """Chunks join the log at once and reach the disk once per flush interval, in one batch."""
        self._session.append(ev.ASSISTANT_CHUNK, data, buffered=True)
        if self._flush_interval <= 0:
            self._session.flush()
        elif self._flush_timer is None:
            self._flush_timer = asyncio.get_running_loop().call_later(self._flush_interval, self._flush)

    def _flush(self) -> None:
        self._flush_timer = None
        # A failed write keeps the chunks buffered; the step's final batch writes them or raises.
        with contextlib.suppress(SessionQueryError):
            self._session.flush()

    def _cancel_flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None

    async def run(self, turn: int, step: int, controller: AbortController) -> str:
        """One model request and its reply; ``completed``, ``aborted``, or ``tool-calls`` when the
        reply called tools (run and logged here: the turn goes on with a next step)."""
        signal = controller.signal
        self._session.append(ev.STEP_START, {"turn": turn, "step": step})
        texts: list[str] = []
        reasoning = BoundedText(self._max_reasoning_chars)
        calls = ToolCalls()
        # dsh numbers a step's blocks in the order they open: a reasoning model's thinking is block 0.
        blocks: dict[Any, int] = {}
        usage: TokenUsage | None = None
        outcome = "completed"
        failure: ModelError | None = None
        offered = self._tools.definitions if self._tools is not None else None
        try:
            async for chunk in model_chunks(self._model, self._session.derive_messages(), signal=signal, tools=offered):
                if chunk["type"] == "usage":
                    usage = chunk["usage"]
                    continue
                if chunk["type"] == "tool-call-delta":
                    calls.add(chunk)
                    index = blocks.setdefault(("tool-call", chunk["index"]), len(blocks))
                    self._append_chunk({"turn": turn, "step": step, "chunk": {**chunk, "index": index}})
                    continue
                kind = chunk["type"]
                if kind not in ("text-delta", "reasoning-delta") or not chunk["text"]:
                    continue  # (a kind of chunk this step does not know, or an empty piece)
                piece = chunk["text"]
                if kind == "text-delta":
                    texts.append(piece)
                else:
                    piece = reasoning.add(piece)  # past the cap nothing more is kept or logged
                index = blocks.setdefault(kind, len(blocks))
                if piece:
                    self._append_chunk({"turn": turn, "step": step, "chunk": {**chunk, "text": piece, "index": index}})
            if signal.aborted:
                outcome = "aborted"
        except SessionReferenceError:
            outcome = "aborted"
        except ModelError as error:
            failure = error
        # A reply cut short leaves no call without its result: its calls are not kept (providers
        # refuse a dangling call), its text and reasoning are.
        finished = outcome == "completed" and failure is None
        content: list[dict[str, Any]] = []
        called: list[dict[str, Any]] = []
        for key in blocks:
            if key == "reasoning-delta":
                content.append({"type": "reasoning", "text": reasoning.value("reasoning")})
            elif key == "text-delta":
                content.append({"type": "text", "text": "".join(texts)})
            elif finished:
                called.append(calls.block(key[1]))
                content.append(called[-1])
        message: dict[str, Any] = {
            "turn": turn,
            "step": step,
            "content": content,
            "provenance": {"provider": self._model.provider, "model": self._model.name},
        }
        if usage is not None:
            message["usage"] = usage
        self._cancel_flush()
        step_end = (ev.STEP_END, {"turn": turn, "step": step}, None, None)
        if not called:  # the message and the step's end in one durable batch
            self._session.append_batch([(ev.ASSISTANT_MESSAGE, message, "append", None), step_end])
        else:
            self._session.append_batch([(ev.ASSISTANT_MESSAGE, message, "append", None)])
            completed = await run_calls(self._session, self._tools, turn, step, called, signal)
            outcome = "tool-calls" if completed else "aborted"
            self._session.append_batch([step_end])
        if failure is not None:
            raise failure
        return outcome
