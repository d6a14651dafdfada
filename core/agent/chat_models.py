"""Model backends for the agent loop: the offline ``EchoModel`` and ``OpenAICompatibleModel``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from core.abort import AbortSignal, race_abort
from core.agent.chunks import Chunk
from core.agent.wire import wire_messages, wire_text
from core.constants import OMISSION_NOTICE_HEAD, PROMPT_REQUEST_DELIMITER
from core.errors import SessionReferenceError, SessionrefError
from core.serialization import stringify_tag_safe_json, utf8_length
from core.sessions.wire_shapes import ContentBlock, ModelMessage, ToolDefinition, WireMessage

MODEL_CONTEXT_LENGTH = "MODEL_CONTEXT_LENGTH"
"""The request was larger than the model's context window (the server said so)."""
MODEL_TIMEOUT = "MODEL_TIMEOUT"
"""The server did not answer in time, or a reply did not finish within its overall time limit."""
MODEL_REPLY_TOO_LARGE = "MODEL_REPLY_TOO_LARGE"
"""A reply passed its size cap: the stream is closed, what arrived is kept."""


class ModelError(SessionrefError):
    """A model call failed; ``code`` is stable (``MODEL_*``) and the message says what to do.

    ``context_limit`` is the window a ``MODEL_CONTEXT_LENGTH`` error stated, when it stated one.
    """

    def __init__(
        self, message: str, code: str, *, retry_after: float | None = None, context_limit: int | None = None
    ) -> None:
        super().__init__(message, code)
        self.retry_after = retry_after
        self.context_limit = context_limit


@runtime_checkable
class ChatModel(Protocol):
    """A streaming chat model.

    ``stream`` yields ``{"type": "text-delta", "index": 0, "text": ...}`` pieces, and may yield
    ``{"type": "reasoning-delta", "index": 0, "text": ...}`` (a reasoning model's thinking, before
    its answer) and one ``{"type": "usage", "usage": {inputTokens, outputTokens, ...}}`` in dsh's
    ``TokenUsage`` shape. ``max_tokens`` caps the reply (compaction's summaries use it).

    A model that can call tools says so (``supports_tools = True``), takes ``tools`` (Chat Completions
    tool definitions; passed only when there are any) and yields ``{"type": "tool-call-delta",
    "index": i, "id": ..., "name": ..., "argumentsDelta": ...}`` pieces (``name`` on a call's first
    piece), dsh's chunk shape.
    """

    name: str
    provider: str

    def stream(
        self, messages: list[ModelMessage], *, signal: AbortSignal, max_tokens: int | None = None
    ) -> AsyncIterator[Chunk]:
        """Stream the reply to ``messages`` (``derive_messages()`` of the target)."""
        ...


@runtime_checkable
class ToolCallingModel(Protocol):
    """A model's optional ability: it takes ``tools`` and may call them (``supports_tools`` true)."""

    supports_tools: bool


@runtime_checkable
class TimedModel(Protocol):
    """A model's optional bound: the longest one reply may take, in seconds (``None``: none)."""

    reply_seconds: float | None


@runtime_checkable
class ServedModel(Protocol):
    """A model behind an API at ``base_url`` (whose window may be learned and remembered by it)."""

    base_url: str


def _backend_failure(model: ChatModel, error: Exception) -> ModelError:
    return ModelError(f"the model {model.name!r} failed: {type(error).__name__}: {error}", "MODEL_FAILED")


async def model_chunks(
    model: ChatModel,
    messages: list[ModelMessage],
    *,
    signal: AbortSignal,
    max_tokens: int | None = None,
    tools: list[ToolDefinition] | None = None,
) -> AsyncIterator[Chunk]:
    """The chunks of ``model.stream(messages)``, each awaited against ``signal``; the stream is closed
    at the end, whatever ended it (best effort: it may be finished or broken already).

    Raises:
        SessionReferenceError: ``CANCELLED`` at once when ``signal`` aborts.
        ModelError: the model's failure.
    """
    options: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
    if tools and isinstance(model, ToolCallingModel) and model.supports_tools:
        options["tools"] = tools  # (only then: a model that calls no tools need not take the argument)
    try:
        stream = model.stream(messages, signal=signal, **options).__aiter__()
    except Exception as error:
        raise _backend_failure(model, error) from error
    # The model's overall time limit for a reply (``reply_seconds``; none for a model without one).
    seconds = model.reply_seconds if isinstance(model, TimedModel) else None
    deadline = None if seconds is None else asyncio.get_running_loop().time() + seconds
    try:
        while True:
            try:
                following = stream.__anext__()
                if deadline is not None:
                    following = asyncio.wait_for(following, max(0.0, deadline - asyncio.get_running_loop().time()))
                chunk = await race_abort(following, signal)
            except StopAsyncIteration:
                return
            except TimeoutError as error:
                if deadline is None or asyncio.get_running_loop().time() < deadline:
                    raise _backend_failure(model, error) from error  # the backend's own, not the limit
                raise ModelError(
                    f"the reply did not finish within {seconds:g} s (its time limit); what arrived is kept",
                    MODEL_TIMEOUT,
                ) from None
            except (ModelError, SessionReferenceError):
                raise
            except Exception as error:
                # Whatever a backend raises, the turn ends cleanly with a MODEL_* code.
                raise _backend_failure(model, error) from error
            yield chunk
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(RuntimeError, ModelError):
                await aclose()


_FRAME = re.compile(r"<referenced-sessions>\n(.*?)\n</referenced-sessions>", re.S)


def describe_prompt(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Split the wire text of a baked prompt into the request and the referenced data objects it carries.

    The first ``"\n\n## My request:\n"`` is the delimiter: the snapshot JSON before it cannot hold
    a raw newline, so no source text can spell it.
    """
    prefix, delimiter, request = text.partition(PROMPT_REQUEST_DELIMITER)
    if not delimiter:
        return text, []
    sources: list[dict[str, Any]] = []
    for frame in _FRAME.findall(prefix):
        try:
            parsed = json.loads(frame)
        except ValueError:
            continue
        sources.extend(item for item in parsed if isinstance(item, dict))
    return request, sources


SUMMARY_REQUEST_MARK = "write a checkpoint of everything ABOVE"
"""Words of compaction's summary instruction (``core.agent.compaction``) that mark a summary request."""


def summarize_offline(wire: list[WireMessage]) -> list[str]:
    """An extractive checkpoint of a summary request's history: each user request's first line."""
    asked: list[str] = []
    for message in wire[:-1]:
        if message["role"] != "user":
            continue
        request, _ = describe_prompt(message["content"])
        line = next((line.strip() for line in request.splitlines() if line.strip()), "")
        if line and "<compacted-summary>" not in line and not line.startswith("This is an automatically"):
            asked.append(line[:160])
    bullets = "\n".join(f"- {line}" for line in asked[-30:]) or "- (none)"
    return [f"## What the user wants\n{bullets}\n\n", "## Decisions\n- (none recorded offline)\n"]


def _tool_results(message: ModelMessage) -> list[ContentBlock]:
    content = message.get("content")
    return [block for block in content or [] if isinstance(block, dict) and block.get("type") == "tool-result"]


_PAGE = re.compile(r'"sessionId":("(?:[^"\\]|\\.)*").*?"totalMessages":(\d+),"from":(\d+),"to":(\d+)', re.S)


def _read_summary(messages: list[ModelMessage]) -> str | None:
    """What the latest ``read_session`` result covered (``messages 1–40 of 300 of "id"``), if the
    conversation ends with one."""
    results = _tool_results(messages[-1]) if messages else []
    for result in results:
        if result["type"] != "tool-result":
            continue
        text = wire_text(result["content"])
        found = _PAGE.search(text)
        if found is not None and not result.get("isError"):
            session, total, start, stop = found.group(1), *map(int, found.groups()[1:])
            return f"messages {start}–{stop - 1} of {total} of {session}" if stop > start else f"nothing of {session}"
    return None


class EchoModel:
    """Offline, deterministic model: it describes what it received, in a few streamed pieces.

    Offered the session tools, it uses one as a model would: a prompt that references a session
    first gets a ``read_session`` call for what follows that session's first message (what a cut
    snapshot leaves out), then the description, saying what it read.
    """

    name = "echo"
    provider = "sessionref"
    supports_tools = True

    def __init__(self, *, delay: float = 0.0) -> None:
        self.delay = delay

    def reply_for(self, messages: list[ModelMessage]) -> list[str]:
        """The pieces of the reply to ``messages``.

        A compaction's summary request gets an extractive checkpoint: the first line of every
        request it condenses (so compacting works offline, in the demo, in the same format).
        """
        wire = wire_messages(messages)
        last = next((m for m in reversed(wire) if m["role"] == "user"), None)
        if last is not None and SUMMARY_REQUEST_MARK in last["content"]:
            return summarize_offline(wire)
        request, sources = describe_prompt(last["content"] if last is not None else "")
        pieces = [f"You asked: {request.strip() or '(nothing)'}\n"]
        if not sources:
            pieces.append("\nNo other session was referenced.")
        for source in sources:
            conversation = source.get("conversation") or []
            cut = sum(1 for item in conversation if OMISSION_NOTICE_HEAD in str(item.get("text", "")))
            size = utf8_length(stringify_tag_safe_json(source))
            line = (
                f"\n- **{source.get('label')}** (`{source.get('sessionId')}`): "
                f"{len(conversation)} messages kept, {size:,} bytes"
            )
            if cut:
                line += f", {cut} cut short"
            pieces.append(line)
        return pieces

    def tool_call_for(self, messages: list[ModelMessage], tools: list[ToolDefinition] | None) -> dict[str, str] | None:
        """The ``read_session`` call a prompt with a reference gets first (``None``: none)."""
        offered = {tool.get("function", {}).get("name") for tool in tools or []}
        if "read_session" not in offered or not messages or _tool_results(messages[-1]):
            return None
        wire = wire_messages(messages)
        last = next((m for m in reversed(wire) if m["role"] == "user"), None)
        _, sources = describe_prompt(last["content"] if last is not None else "")
        if not sources:
            return None
        arguments = json.dumps({"session": sources[0].get("sessionId"), "from_message": 1})
        return {"id": f"echo-read-{len(messages)}", "name": "read_session", "arguments": arguments}

    async def stream(
        self,
        messages: list[ModelMessage],
        *,
        signal: AbortSignal,
        max_tokens: int | None = None,
        tools: list[ToolDefinition] | None = None,
    ) -> AsyncIterator[Chunk]:
        """Yield the reply piece by piece (stops early when ``signal`` aborts)."""
        call = self.tool_call_for(messages, tools)
        if call is not None:
            yield {"type": "tool-call-delta", "index": 0, "id": call["id"], "name": call["name"],
                   "argumentsDelta": call["arguments"]}  # fmt: skip
            return
        pieces = self.reply_for(messages)
        read = _read_summary(messages)
        if read is not None:
            pieces.append(f"\n\nWith read_session I also read {read}.")
        for piece in pieces:
            if signal.aborted:
                return
            if self.delay:
                await asyncio.sleep(self.delay)
            yield {"type": "text-delta", "index": 0, "text": piece}
