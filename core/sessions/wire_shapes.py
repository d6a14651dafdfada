"""The shapes that cross a wire, typed: dsh's content blocks and model messages (what a log's
events hold and ``derive_messages`` gives), the Chat Completions request's messages and tools (what
a model receives), and dsh's ``TokenUsage``.

These describe what sessionref writes and expects; what a log or a server sends is still checked
where it is read (a block of another shape is skipped, never trusted because of its annotation).
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import NotRequired, TypedDict  # (pydantic reads these on Python 3.11)


class TextBlock(TypedDict):
    """Text said by the user or the assistant."""

    type: Literal["text"]
    text: str


class ReasoningBlock(TypedDict):
    """A reasoning model's thinking, before its answer."""

    type: Literal["reasoning"]
    text: str


class ToolCallBlock(TypedDict):
    """A call the assistant made: its id, the tool's name and the arguments' JSON text."""

    type: Literal["tool-call"]
    id: str
    name: str
    arguments: str


class ToolResultBlock(TypedDict):
    """What a tool answered to the call ``toolCallId``."""

    type: Literal["tool-result"]
    toolCallId: str | None
    content: list[ContentBlock]
    isError: bool


ContentBlock = TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock
"""One block of a message's ``content``."""


class ModelMessage(TypedDict):
    """One message of a session's model history (``derive_messages``, CONTRACT §1)."""

    role: Literal["system", "user", "assistant"]
    content: list[ContentBlock]


class WireFunction(TypedDict):
    """The function a Chat Completions tool call names (as the log holds it: ``null`` when it lacks it)."""

    name: str | None
    arguments: str | None


class WireToolCall(TypedDict):
    """A tool call in a Chat Completions assistant message."""

    id: str | None
    type: Literal["function"]
    function: WireFunction


class WireMessage(TypedDict):
    """A message of a Chat Completions request (``wire_messages``)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    reasoning_content: NotRequired[str]
    tool_calls: NotRequired[list[WireToolCall]]
    tool_call_id: NotRequired[str | None]


class ToolFunction(TypedDict):
    """A tool offered to the model: its name, what it does, and its arguments' JSON Schema."""

    name: str
    description: str
    parameters: dict[str, object]


class ToolDefinition(TypedDict):
    """A tool in the Chat Completions ``tools`` list."""

    type: Literal["function"]
    function: ToolFunction


class TokenUsage(TypedDict):
    """What a request and its reply took, in dsh's ``TokenUsage`` shape (counts are disjoint)."""

    inputTokens: int
    outputTokens: int
    cacheReadTokens: NotRequired[int]
    reasoningTokens: NotRequired[int]
