"""Model backends for the agent loop: the offline ``EchoModel`` and ``OpenAICompatibleModel``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

import httpx

from core.abort import AbortSignal
from core.agent.wire import wire_messages
from core.constants import PROMPT_REQUEST_DELIMITER
from core.reference.retention import OMISSION_NOTICE_HEAD
from core.serialization import stringify_tag_safe_json, utf8_length

DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEEPSEEK_MODEL = "deepseek-chat"


class ModelError(Exception):
    """A model call failed; ``code`` is stable (``MODEL_*``) and the message says what to do."""

    def __init__(self, code: str, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after = retry_after


@runtime_checkable
class ChatModel(Protocol):
    """A streaming chat model: ``stream`` yields ``{"type": "text-delta", "index": 0, "text": ...}``."""

    name: str
    provider: str

    def stream(self, messages: list[dict[str, Any]], *, signal: AbortSignal) -> AsyncIterator[dict[str, Any]]:
        """Stream the reply to ``messages`` (``derive_messages()`` of the target)."""
        ...


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


class EchoModel:
    """Offline, deterministic model: it describes what it received, in a few streamed pieces."""

    name = "echo"
    provider = "sessionref"

    def __init__(self, *, delay: float = 0.0) -> None:
        self.delay = delay

    def reply_for(self, messages: list[dict[str, Any]]) -> list[str]:
        """The pieces of the reply to ``messages``."""
        last = next((m for m in reversed(wire_messages(messages)) if m["role"] == "user"), None)
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

    async def stream(self, messages: list[dict[str, Any]], *, signal: AbortSignal) -> AsyncIterator[dict[str, Any]]:
        """Yield the reply piece by piece (stops early when ``signal`` aborts)."""
        for piece in self.reply_for(messages):
            if signal.aborted:
                return
            if self.delay:
                await asyncio.sleep(self.delay)
            yield {"type": "text-delta", "index": 0, "text": piece}


def _error_for_status(response: httpx.Response, body: str) -> ModelError:
    status = response.status_code
    detail = body.strip()[:300]
    with contextlib.suppress(ValueError, KeyError, TypeError):
        detail = str(json.loads(body)["error"]["message"])
    if status in (401, 403):
        return ModelError(
            "MODEL_UNAUTHORIZED",
            f"the model API refused the key (HTTP {status}): {detail}. Check DEEPSEEK_API_KEY / OPENAI_API_KEY.",
        )
    if status == 429:
        retry = response.headers.get("retry-after")
        after = float(retry) if retry and retry.replace(".", "", 1).isdigit() else None
        wait = f" Retry after {retry} s." if after is not None else " Wait a moment and retry."
        return ModelError(
            "MODEL_RATE_LIMITED", f"the model API is rate limiting requests (HTTP 429).{wait}", retry_after=after
        )
    if status >= 500:
        return ModelError("MODEL_SERVER_ERROR", f"the model API failed (HTTP {status}): {detail}. Try again later.")
    return ModelError("MODEL_HTTP_ERROR", f"the model API rejected the request (HTTP {status}): {detail}")


class OpenAICompatibleModel:
    """Streaming Chat Completions over HTTP (DeepSeek by default).

    Args:
        base_url: API root (``/chat/completions`` is appended).
        api_key: the bearer key; ``None`` raises ``MODEL_MISSING_API_KEY`` on the first call.
        model: the model name sent and recorded as provenance.
        timeout: seconds to wait for the connection and for each streamed piece.
    """

    provider = "openai-compatible"

    def __init__(self, *, base_url: str, api_key: str | None, model: str, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.name = model
        self.timeout = timeout

    @classmethod
    def from_environment(cls, *, base_url: str | None = None, model: str | None = None) -> OpenAICompatibleModel:
        """DeepSeek defaults; the key comes from ``DEEPSEEK_API_KEY``, else ``OPENAI_API_KEY``."""
        key = os.environ.get("DEEPSEEK_API_KEY") or os.environ.get("OPENAI_API_KEY")
        return cls(base_url=base_url or DEEPSEEK_BASE_URL, api_key=key, model=model or DEEPSEEK_MODEL)

    async def _stream(self, messages: list[dict[str, Any]], *, signal: AbortSignal) -> AsyncIterator[dict[str, Any]]:
        """Yield text deltas (and a final ``{"type": "usage"}`` chunk when the server reports usage).

        Raises:
            ModelError: with a ``MODEL_*`` code for every failure class.
        """
        if not self.api_key:
            raise ModelError(
                "MODEL_MISSING_API_KEY",
                "no API key: set DEEPSEEK_API_KEY (or OPENAI_API_KEY), or run with --model echo",
            )
        body = {
            "model": self.name,
            "messages": wire_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "text/event-stream"}
        timeout = httpx.Timeout(self.timeout)
        try:
            async with (
                httpx.AsyncClient(timeout=timeout) as client,
                client.stream("POST", f"{self.base_url}/chat/completions", json=body, headers=headers) as response,
            ):
                if response.status_code != 200:
                    raise _error_for_status(response, (await response.aread()).decode("utf-8", "replace"))
                async for line in response.aiter_lines():
                    if signal.aborted:
                        return
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        return
                    for chunk in _parse_chunk(payload):
                        yield chunk
        except httpx.TimeoutException as error:
            raise ModelError("MODEL_TIMEOUT", f"the model API did not answer within {self.timeout:g} s") from error
        except httpx.ConnectError as error:
            raise ModelError(
                "MODEL_CONNECTION_FAILED", f"could not connect to {self.base_url}: {error}. Check the base URL."
            ) from error
        except httpx.HTTPError as error:
            raise ModelError("MODEL_MALFORMED_STREAM", f"the model stream broke off: {error}") from error

    async def stream(self, messages: list[dict[str, Any]], *, signal: AbortSignal) -> AsyncIterator[dict[str, Any]]:
        """Yield text deltas (and a final ``{"type": "usage"}`` chunk when the server reports usage).

        The key never reaches an error: a server that echoes it (in an error body or a stream
        event) has it replaced by ``***`` in the message, and the traceback holds no copy.

        Raises:
            ModelError: with a ``MODEL_*`` code for every failure class.
        """
        try:
            async for piece in self._stream(messages, signal=signal):
                yield piece
        except ModelError as error:
            key = self.api_key
            if not key or key not in error.message:
                raise
            clean = ModelError(error.code, error.message.replace(key, "***"), retry_after=error.retry_after)
            clean.__cause__ = error.__cause__
            clean.__suppress_context__ = True
            raise clean  # noqa: B904 - the cause is kept above; the context (with the key) is not


def _parse_chunk(payload: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(payload)
        chunks: list[dict[str, Any]] = []
        for choice in data.get("choices") or []:
            delta = (choice.get("delta") or {}).get("content")
            if delta:
                if not isinstance(delta, str):
                    raise TypeError("delta content is not a string")
                chunks.append({"type": "text-delta", "index": 0, "text": delta})
        if isinstance(data.get("usage"), dict):
            chunks.append({"type": "usage", "usage": data["usage"]})
        return chunks
    except (ValueError, TypeError, AttributeError) as error:
        raise ModelError(
            "MODEL_MALFORMED_STREAM", f"the model sent a malformed stream event: {payload[:120]!r}"
        ) from error
