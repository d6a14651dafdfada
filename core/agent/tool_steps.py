"""The tool side of a turn's step, in dsh's event shapes (rc.8 reads them back; ``tests/test_interop.py``).

A step whose reply calls tools is logged as dsh logs it: the streamed ``tool-call-delta`` chunks
(packed into ``tool-call-chunks`` rows), the ``assistant/message`` with its ``tool-call`` blocks, then
for each call ``tool/call {turn, step, callId, name, arguments}`` before it runs and ``tool/result``
after it, then ``step/end``; the turn goes on with a next step that sends the results. The result is
rc.8's shape, ``{turn, step, message: {id, role: "user", source: {kind: "tool", callId}, content:
[{type: "tool-result", toolCallId, content, isError}]}}`` on the surface, citing its call
(``sourceEventSeqs``), not the contract's older flat one: rc.8 writes this one, reads both, and its
repair and compaction pair calls and results by it.

Esc during a call closes the step as dsh's repair closes an interrupted one: a result for every call
without one (``isError``, dsh's own words: outcome unknown for a call recorded as started, not
started for the rest, with its ``error`` code), then ``step/end``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.abort import AbortSignal, race_abort
from core.agent.chunks import ToolCallDelta
from core.agent.defaults import MAX_STEPS, MIN_READ_BYTES, READ_BYTES
from core.agent.session_tools import SessionTools, ToolResult
from core.errors import ReferenceCancelled, SessionReferenceError
from core.sessions import event_types as ev
from core.sessions.models import SessionEvent
from core.sessions.session import Session

TURN_STEP_LIMIT = "TURN_STEP_LIMIT"


@dataclass(frozen=True)
class ToolSettings:
    """How the session tools are offered: ``read_bytes`` a ``read_session`` returns at most, and the
    ``max_steps`` a turn may take."""

    read_bytes: int = READ_BYTES
    max_steps: int = MAX_STEPS

    def __post_init__(self) -> None:
        if self.read_bytes < MIN_READ_BYTES or self.max_steps < 1:
            raise ValueError(f"read_bytes must be at least {MIN_READ_BYTES} and max_steps at least 1")


OUTCOME_UNKNOWN = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is "
    "unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or "
    "idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly."
)
NOT_STARTED = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."
"""dsh's words for the results its repair writes (``@deepseek-ai/dsh-session``), so a log reads the same."""


@dataclass
class _Call:
    id: str
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class ToolCalls:
    """The tool calls a streamed reply makes, gathered from its ``tool-call-delta`` pieces."""

    calls: dict[int, _Call] = field(default_factory=dict)

    def add(self, chunk: ToolCallDelta) -> None:
        call = self.calls.setdefault(chunk["index"], _Call(chunk["id"]))
        if "name" in chunk:
            call.name += chunk["name"]
        call.arguments.append(chunk.get("argumentsDelta", ""))

    def block(self, index: int) -> dict[str, Any]:
        """The ``tool-call`` content block of the call at ``index``."""
        call = self.calls[index]
        return {"type": "tool-call", "id": call.id, "name": call.name, "arguments": "".join(call.arguments)}


def result_event(
    turn: int, step: int, call_id: str, text: str, is_error: bool, error: dict[str, str] | None = None
) -> dict[str, Any]:
    """A ``tool/result`` payload in rc.8's shape."""
    data: dict[str, Any] = {
        "turn": turn,
        "step": step,
        "message": {
            "id": str(uuid.uuid4()),
            "role": "user",
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "content": [{"type": "text", "text": text}],
                    "isError": is_error,
                }
            ],
        },
    }
    if error is not None:
        data["error"] = error
    return data


async def run_calls(
    session: Session,
    tools: SessionTools | None,
    turn: int,
    step: int,
    calls: list[dict[str, Any]],
    signal: AbortSignal,
    on_result: Callable[[SessionEvent, ToolResult], None] | None = None,
) -> bool:
    """Run a step's tool calls in order, logging each call and its result; ``False`` when ``signal``
    aborted them (every call then has a result: the closers)."""
    for position, call in enumerate(calls):
        recorded = session.append(
            ev.TOOL_CALL,
            {"turn": turn, "step": step, "callId": call["id"], "name": call["name"], "arguments": call["arguments"]},
        )
        try:
            if signal.aborted:
                raise ReferenceCancelled("aborted")
            if tools is None:
                result = ToolResult("tools are off in this session (TOOL_UNKNOWN)", is_error=True, code="TOOL_UNKNOWN")
            else:
                result = await race_abort(tools.call(call["name"], call["arguments"]), signal)
        except SessionReferenceError:
            _close(session, turn, step, recorded, calls[position + 1 :])
            return False
        event = session.append(
            ev.TOOL_RESULT,
            result_event(turn, step, call["id"], result.text, result.is_error),
            surface_op="append",
            source_event_seqs=[recorded.seq],
        )
        if on_result is not None:
            on_result(event, result)
    return True


def _close(session: Session, turn: int, step: int, started: SessionEvent, rest: list[dict[str, Any]]) -> None:
    """Results for the call that was running and those that never started, as dsh's repair writes them."""
    unknown = {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    not_started = {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    batch: list[tuple[str, dict[str, Any], Any, Any]] = [
        (
            ev.TOOL_RESULT,
            result_event(turn, step, started.data["callId"], OUTCOME_UNKNOWN, True, unknown),
            "append",
            [started.seq],
        )
    ]
    batch += [
        (ev.TOOL_RESULT, result_event(turn, step, call["id"], NOT_STARTED, True, not_started), "append", None)
        for call in rest
    ]
    session.append_batch(batch)
