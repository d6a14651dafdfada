"""What a chat-completions model receives: the wire messages of a history (CONTRACT §13).

A port of dsh's DeepSeek serializer (``@deepseek-ai/dsh-llm-deepseek``, ``serializeRequest`` /
``serializeMessages``): the text blocks of a message are concatenated with no separator; system
text is a ``system`` message; a user message contributes its text first and then one ``tool``
message per tool result (``(no output)`` when the result has no text); an assistant turn always
sends a string ``content`` (``""`` without text), plus ``reasoning_content`` and ``tool_calls``
when it has them. So a baked prompt reaches the model as the context text, then
``"\\n\\n## My request:\\n"``, then the request, byte for byte.

``OpenAICompatibleModel``, ``EchoModel`` and the app's model views all use these functions, so
what the app shows as "what the model receives" is the request body, not a re-rendering of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from core.sessions.wire_shapes import ModelMessage, WireMessage, WireToolCall

NO_OUTPUT = "(no output)"
"""The content of a ``tool`` message whose result carried no text."""


def wire_text(blocks: Any) -> str:
    """The ``text`` of every text block, concatenated with no separator (dsh's ``flattenText``)."""
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, Iterable):
        return ""
    return "".join(
        block["text"]
        for block in blocks
        if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


def _blocks_of(content: Any, kind: str) -> list[Mapping[str, Any]]:
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, Mapping) and block.get("type") == kind]


def _assistant(content: Any) -> WireMessage:
    message: WireMessage = {"role": "assistant", "content": wire_text(content)}
    reasoning = "".join(str(block.get("text", "")) for block in _blocks_of(content, "reasoning"))
    if reasoning:
        message["reasoning_content"] = reasoning
    calls: list[WireToolCall] = [
        {
            "id": block.get("id"),
            "type": "function",
            "function": {"name": block.get("name"), "arguments": block.get("arguments")},
        }
        for block in _blocks_of(content, "tool-call")
    ]
    if calls:
        message["tool_calls"] = calls
    return message


def wire_messages(messages: Sequence[ModelMessage], *, system: str | None = None) -> list[WireMessage]:
    """The ``messages`` of a chat-completions request for a history (``derive_messages()`` output).

    Args:
        messages: ``{role, content}`` messages, content as blocks (a plain string is taken as text).
        system: system text sent first as a ``system`` message, when given.
    """
    wire: list[WireMessage] = []
    if system is not None:
        wire.append({"role": "system", "content": system})
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "system":
            wire.append({"role": "system", "content": wire_text(content)})
            continue
        if role == "assistant":
            wire.append(_assistant(content))
            continue
        results = _blocks_of(content, "tool-result")
        text = wire_text(content)
        if text or not results:
            wire.append({"role": "user", "content": text})
        for result in results:
            wire.append(
                {
                    "role": "tool",
                    "tool_call_id": result.get("toolCallId"),
                    "content": wire_text(result.get("content")) or NO_OUTPUT,
                }
            )
    return wire
