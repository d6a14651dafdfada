"""Every type of event a session log holds, each named once, and the shape of each one's data
(CONTRACT §1; ``tool/result`` also in the newer dsh shape, its text inside ``message``).

Code compares an event's ``type`` with these names, never with a string of its own, and the
transcript and the export ``match`` on them (``case event_types.USER_MESSAGE:``). A log may hold
types this version does not know (dsh's ``compact/*``, another tool's marked ``ignorable``): they
are log-only, and every reader leaves them alone.
"""

from __future__ import annotations

from typing import Final, Literal, NotRequired, TypedDict

from core.sessions.wire_shapes import ContentBlock

EventType = Literal[
    "user/message",
    "steering/message",
    "assistant/message",
    "assistant/chunk",
    "tool/call",
    "tool/result",
    "step/start",
    "step/end",
    "turn/start",
    "turn/end",
    "session/title",
    "sessionref/handoff",
]
"""The event types sessionref writes or reads the data of."""

USER_MESSAGE: Final = "user/message"
STEERING_MESSAGE: Final = "steering/message"
ASSISTANT_MESSAGE: Final = "assistant/message"
ASSISTANT_CHUNK: Final = "assistant/chunk"
TOOL_CALL: Final = "tool/call"
TOOL_RESULT: Final = "tool/result"
STEP_START: Final = "step/start"
STEP_END: Final = "step/end"
TURN_START: Final = "turn/start"
TURN_END: Final = "turn/end"
SESSION_TITLE: Final = "session/title"
HANDOFF: Final = "sessionref/handoff"
"""sessionref's own note of a hand-off, written ``ignorable`` (dsh skips it)."""

SURFACE_EVENT_TYPES: Final = frozenset({USER_MESSAGE, STEERING_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT})
"""The types a session's surface (what a model is sent) is made of; every other type is log-only."""


class MessageSource(TypedDict, total=False):
    """Who a prompt came from: ``{kind: "user"}``, or a plugin (``{kind: "plugin", plugin: "compact"}``
    marks a compaction's checkpoint)."""

    kind: str
    plugin: str


class UserMessageData(TypedDict):
    """``user/message`` and ``steering/message``: a prompt (its content baked with its references)."""

    content: list[ContentBlock]
    source: NotRequired[MessageSource]
    envelope: NotRequired[object]
    meta: NotRequired[object]


class Provenance(TypedDict):
    provider: str
    model: str


class AssistantMessageData(TypedDict):
    """``assistant/message``: one step's reply."""

    turn: int
    step: int
    content: list[ContentBlock]
    provenance: NotRequired[Provenance]
    usage: NotRequired[object]


class AssistantChunkData(TypedDict):
    """``assistant/chunk``: a streamed delta (log-only)."""

    turn: int
    step: int
    chunk: object


class ToolCallData(TypedDict):
    """``tool/call``: a call the model made."""

    turn: int
    step: int
    callId: str
    name: str
    arguments: str


class ToolResultData(TypedDict):
    """``tool/result``: a call's result, ``{callId, content, isError}``; the newer dsh shape keeps
    them in one ``tool-result`` block of ``message.content``."""

    turn: int
    step: int
    callId: NotRequired[str]
    content: NotRequired[list[ContentBlock]]
    isError: NotRequired[bool]
    message: NotRequired[object]


class StepData(TypedDict):
    """``step/start`` and ``step/end``."""

    turn: int
    step: int


class TurnData(TypedDict):
    """``turn/start`` and ``turn/end``."""

    turn: int


class SessionTitleData(TypedDict):
    """``session/title``: the latest one in the raw log wins."""

    title: str
    messageSeqs: list[int]
    source: object
