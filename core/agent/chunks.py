"""What a streaming model yields, chunk by chunk: dsh's chunk shapes, typed.

A model streams ``TextDelta`` pieces of its answer, may stream ``ReasoningDelta`` pieces of its
thinking first, ``ToolCallDelta`` pieces of the calls it makes (``id`` and ``name`` on a call's first
piece), and one ``UsageChunk`` in dsh's ``TokenUsage`` shape.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from core.sessions.wire_shapes import TokenUsage


class TextDelta(TypedDict):
    """A piece of the answer."""

    type: Literal["text-delta"]
    index: int
    text: str


class ReasoningDelta(TypedDict):
    """A piece of a reasoning model's thinking (before its answer)."""

    type: Literal["reasoning-delta"]
    index: int
    text: str


class ToolCallDelta(TypedDict):
    """A piece of a tool call: its id and name on the first piece, its arguments' JSON in pieces."""

    type: Literal["tool-call-delta"]
    index: int
    id: NotRequired[str]
    name: NotRequired[str]
    argumentsDelta: NotRequired[str]


class UsageChunk(TypedDict):
    """What the request and the reply took, in dsh's ``TokenUsage`` shape."""

    type: Literal["usage"]
    usage: TokenUsage


Chunk = TextDelta | ReasoningDelta | ToolCallDelta | UsageChunk
"""One chunk of a model's stream."""
