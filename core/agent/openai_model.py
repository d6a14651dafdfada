"""``OpenAICompatibleModel``: streaming Chat Completions over HTTP (DeepSeek by default), with the
key kept out of every error, a reply's size capped on the bytes received, and dsh's usage shape."""

from __future__ import annotations

import codecs
import contextlib
import json
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from core.abort import AbortSignal
from core.agent.chat_models import MODEL_CONTEXT_LENGTH, MODEL_REPLY_TOO_LARGE, ModelError
from core.agent.chunks import Chunk, ToolCallDelta
from core.agent.defaults import DEEPSEEK_BASE_URL, DEEPSEEK_MODEL, MAX_REPLY_BYTES, REPLY_SECONDS
from core.agent.tokens import context_limit_in, is_context_overflow
from core.agent.wire import wire_messages
from core.sessions.wire_shapes import ModelMessage, TokenUsage, ToolDefinition

if TYPE_CHECKING:
    import httpx


def _error_for_status(response: httpx.Response, body: str) -> ModelError:
    status = response.status_code
    detail = body.strip()[:300]
    with contextlib.suppress(ValueError, KeyError, TypeError):
        detail = str(json.loads(body)["error"]["message"])
    if status in (401, 403):
        return ModelError(
            f"the model API refused the key (HTTP {status}): {detail}. Check DEEPSEEK_API_KEY / OPENAI_API_KEY.",
            "MODEL_UNAUTHORIZED",
        )
    if status == 429:
        retry = response.headers.get("retry-after")
        after = float(retry) if retry and retry.replace(".", "", 1).isdigit() else None
        wait = f" Retry after {retry} s." if after is not None else " Wait a moment and retry."
        return ModelError(
            f"the model API is rate limiting requests (HTTP 429).{wait}", "MODEL_RATE_LIMITED", retry_after=after
        )
    if status in (400, 413, 422) and is_context_overflow(detail):
        limit = context_limit_in(detail)
        stated = f" The server's window is {limit:,} tokens." if limit is not None else ""
        return ModelError(
            f"the request is larger than the model's context window (HTTP {status}): {detail}.{stated}",
            MODEL_CONTEXT_LENGTH,
            context_limit=limit,
        )
    if status >= 500:
        return ModelError(f"the model API failed (HTTP {status}): {detail}. Try again later.", "MODEL_SERVER_ERROR")
    return ModelError(f"the model API rejected the request (HTTP {status}): {detail}", "MODEL_HTTP_ERROR")


MODEL_INVALID_API_KEY = "MODEL_INVALID_API_KEY"
"""The key cannot be sent as an HTTP header value (a line break, a control or non-ASCII character)."""


def key_problem(key: str) -> str | None:
    """Why ``key`` cannot go in an ``Authorization`` header, in words that do not quote it (``None``: it can)."""
    if "\r" in key or "\n" in key:
        return "it contains a line break (a key file saved with Windows line endings?)"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in key):
        return "it contains a control character"
    if not key.isascii():
        return "it contains a character that is not ASCII"
    if key != key.strip():
        return "it starts or ends with a space"
    return None


def secret_forms(key: str) -> list[str]:
    """Every spelling of ``key`` an error text could carry: raw, trimmed, repr'd, JSON-escaped,
    ``unicode_escape``d, percent-encoded; longest first (so masking replaces whole spellings)."""
    forms = {
        key,
        key.strip(),
        repr(key)[1:-1],
        json.dumps(key)[1:-1],
        json.dumps(key, ensure_ascii=False)[1:-1],
        key.encode("unicode_escape").decode("ascii"),
        repr(key.encode("utf-8", "surrogatepass"))[2:-1],
        quote(key, safe=""),
    }
    return sorted((form for form in forms if len(form) >= 4), key=len, reverse=True)


def mask_secret(text: str, key: str | None) -> str:
    """``text`` with every spelling of ``key`` replaced by ``***``."""
    if not key:
        return text
    for form in secret_forms(key):
        text = text.replace(form, "***")
    return text


class OpenAICompatibleModel:
    """Streaming Chat Completions over HTTP (DeepSeek by default).

    Args:
        base_url: API root (``/chat/completions`` is appended).
        api_key: the bearer key; ``None`` raises ``MODEL_MISSING_API_KEY`` on the first call.
        model: the model name sent and recorded as provenance.
        timeout: seconds to wait for the connection and for each streamed piece.
        reply_seconds: the overall time limit of one reply (a trickle of pieces each in time too).
        max_reply_bytes: the size cap of one reply's stream.
    """

    provider = "openai-compatible"
    supports_tools = True

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        model: str,
        timeout: float = 60.0,
        reply_seconds: float = REPLY_SECONDS,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        if reply_seconds <= 0 or max_reply_bytes <= 0:
            raise ValueError("reply_seconds and max_reply_bytes must be positive")
        self.base_url = base_url.rstrip("/")
        self.key_source: str | None = None
        """The name of the environment variable the key came from (never the key), when known."""
        self.api_key = api_key
        self.name = model
        self.timeout = timeout
        self.reply_seconds = reply_seconds
        """A reply's overall time limit (``model_chunks`` keeps it): ``MODEL_TIMEOUT``, what arrived kept."""
        self.max_reply_bytes = max_reply_bytes
        """A reply's size cap, as received: ``MODEL_REPLY_TOO_LARGE``, what arrived kept."""

    @classmethod
    def from_environment(
        cls,
        *,
        base_url: str | None = None,
        model: str | None = None,
        key_env: str | None = None,
        reply_seconds: float = REPLY_SECONDS,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> OpenAICompatibleModel:
        """DeepSeek defaults; the key comes from ``key_env`` when given (a profile names the variable),
        else ``DEEPSEEK_API_KEY``, else ``OPENAI_API_KEY``."""
        names = (key_env,) if key_env else ("DEEPSEEK_API_KEY", "OPENAI_API_KEY")
        source = next((name for name in names if os.environ.get(name)), None)
        key = os.environ.get(source) if source is not None else None
        built = cls(
            base_url=base_url or DEEPSEEK_BASE_URL,
            api_key=key,
            model=model or DEEPSEEK_MODEL,
            reply_seconds=reply_seconds,
            max_reply_bytes=max_reply_bytes,
        )
        built.key_source = source or names[0]
        return built

    async def _stream(
        self,
        messages: list[ModelMessage],
        *,
        signal: AbortSignal,
        max_tokens: int | None = None,
        tools: list[ToolDefinition] | None = None,
    ) -> AsyncIterator[Chunk]:
        """Yield text, reasoning and tool-call deltas (and a final ``{"type": "usage"}`` chunk when the
        server reports usage); ``tools`` are offered to the model in the Chat Completions shape.

        Raises:
            ModelError: with a ``MODEL_*`` code for every failure class.
        """
        if not self.api_key:
            raise ModelError(
                f"no API key: set {self.key_source or 'DEEPSEEK_API_KEY (or OPENAI_API_KEY)'}, "
                "or run with --model echo",
                "MODEL_MISSING_API_KEY",
            )
        problem = key_problem(self.api_key)
        if problem is not None:
            where = self.key_source or "the key variable"
            raise ModelError(
                f"the API key in {where} cannot be sent: {problem}. Fix the variable's value.", MODEL_INVALID_API_KEY
            )
        body = {
            "model": self.name,
            "messages": wire_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if tools:
            body["tools"] = tools
        import httpx  # (imported by the first request: most commands never make one)

        calls: dict[int, str] = {}
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "text/event-stream"}
        timeout = httpx.Timeout(self.timeout)
        try:
            async with (
                httpx.AsyncClient(timeout=timeout) as client,
                client.stream("POST", f"{self.base_url}/chat/completions", json=body, headers=headers) as response,
            ):
                if response.status_code != 200:
                    raise _error_for_status(response, (await response.aread()).decode("utf-8", "replace"))
                async for line in _bounded_lines(response, self.max_reply_bytes):
                    if signal.aborted:
                        return
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        return
                    for chunk in _parse_chunk(payload, calls):
                        yield chunk
        except httpx.TimeoutException as error:
            raise ModelError(f"the model API did not answer within {self.timeout:g} s", "MODEL_TIMEOUT") from error
        except httpx.ConnectError as error:
            raise ModelError(
                f"could not connect to {self.base_url}: {error}. Check the base URL.", "MODEL_CONNECTION_FAILED"
            ) from error
        except httpx.HTTPError as error:
            raise ModelError(f"the model stream broke off: {error}", "MODEL_MALFORMED_STREAM") from error

    async def stream(
        self,
        messages: list[ModelMessage],
        *,
        signal: AbortSignal,
        max_tokens: int | None = None,
        tools: list[ToolDefinition] | None = None,
    ) -> AsyncIterator[Chunk]:
        """Yield reasoning, text and tool-call deltas (and a final ``{"type": "usage"}`` chunk when the
        server reports usage).

        The key never reaches an error: a server that echoes it (in an error body or a stream
        event) has it replaced by ``***`` in the message, and the traceback holds no copy.

        Raises:
            ModelError: with a ``MODEL_*`` code for every failure class.
        """
        key = self.api_key
        try:
            async for piece in self._stream(messages, signal=signal, max_tokens=max_tokens, tools=tools):
                yield piece
        except ModelError as error:
            message = mask_secret(error.message, key)
            cause = error.__cause__
            cause_is_clean = cause is None or mask_secret(str(cause), key) == str(cause)
            if message == error.message and cause_is_clean:
                raise
            clean = ModelError(message, error.code, retry_after=error.retry_after, context_limit=error.context_limit)
            # The cause is kept only when it does not spell the key; the context never is.
            clean.__cause__ = cause if cause_is_clean else None
            clean.__suppress_context__ = True
            raise clean  # noqa: B904 - chained by hand above
        except Exception as error:
            failure = ModelError(
                f"the request to the model API failed: {type(error).__name__}: {mask_secret(str(error), key)}",
                "MODEL_REQUEST_FAILED",
            )
            failure.__suppress_context__ = True
            raise failure from None


async def _bounded_lines(response: httpx.Response, cap: int) -> AsyncIterator[str]:
    """The response's lines, as ``aiter_lines`` gives them, but never more than ``cap`` bytes in all
    (a line that never ends counts too: it is never held whole past the cap).

    Raises:
        ModelError: ``MODEL_REPLY_TOO_LARGE`` past the cap.
    """
    received = 0
    pending = ""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    async for piece in response.aiter_bytes():
        received += len(piece)
        if received > cap:
            raise ModelError(
                f"the reply passed its size cap ({cap:,} bytes); the stream was closed, what arrived is kept",
                MODEL_REPLY_TOO_LARGE,
            )
        pending += decoder.decode(piece)
        *lines, pending = pending.split("\n")  # only line ends: JSON may hold a raw U+2028
        for line in lines:
            for part in line.removesuffix("\r").split("\r"):  # \r\n, and a lone \r, end a line too
                yield part
    pending += decoder.decode(b"", final=True)
    for part in pending.removesuffix("\r").split("\r") if pending else ():
        yield part


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def dsh_usage(wire: Any) -> TokenUsage | None:
    """A chat-completions ``usage`` object in dsh's ``TokenUsage`` shape, or ``None`` when it has no counts.

    As dsh's DeepSeek adapter maps it: ``prompt_tokens`` includes cache hits, dsh's counts are
    disjoint, so ``inputTokens`` is the prompt without the cache reads, which are
    ``cacheReadTokens`` (``prompt_tokens_details.cached_tokens``, else DeepSeek's
    ``prompt_cache_hit_tokens``); ``reasoningTokens`` when the server reports them.
    """
    if not isinstance(wire, dict):
        return None
    prompt, completion = _count(wire.get("prompt_tokens")), _count(wire.get("completion_tokens"))
    if prompt is None or completion is None:
        return None
    details = wire.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    if cached is None:
        cached = _count(wire.get("prompt_cache_hit_tokens"))
    completion_details = wire.get("completion_tokens_details")
    reasoning = _count(completion_details.get("reasoning_tokens")) if isinstance(completion_details, dict) else None
    usage: TokenUsage = {"inputTokens": prompt - min(cached or 0, prompt), "outputTokens": completion}
    if cached is not None:
        usage["cacheReadTokens"] = cached
    if reasoning is not None:
        usage["reasoningTokens"] = reasoning
    return usage


def _tool_call_delta(call: Any, calls: dict[int, str]) -> ToolCallDelta:
    index = call["index"]
    if type(index) is not int or index < 0:
        raise TypeError("tool call index is not a count")
    function = call.get("function") or {}
    known = calls.get(index)
    if known is None:
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise TypeError("a tool call's first piece has no id")
        calls[index] = known = call_id
    chunk: ToolCallDelta = {"type": "tool-call-delta", "index": index, "id": known}
    name = function.get("name")
    if name is not None:
        if not isinstance(name, str):
            raise TypeError("tool call name is not a string")
        chunk["name"] = name
    arguments = function.get("arguments") or ""
    if not isinstance(arguments, str):
        raise TypeError("tool call arguments are not a string")
    chunk["argumentsDelta"] = arguments
    return chunk


def _parse_chunk(payload: str, calls: dict[int, str] | None = None) -> list[Chunk]:
    """The chunks of one stream event. ``calls`` (call index -> id) carries a tool call's id from its
    first piece to the later ones, which name only its index: every ``tool-call-delta`` has its id
    (as dsh's chunks do), the first one its name too."""
    if calls is None:
        calls = {}
    try:
        data = json.loads(payload)
        chunks: list[Chunk] = []
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            # A reasoning model thinks first: its reasoning precedes the answer in the same stream.
            reasoning = delta.get("reasoning_content")
            if reasoning:
                if not isinstance(reasoning, str):
                    raise TypeError("delta reasoning_content is not a string")
                chunks.append({"type": "reasoning-delta", "index": 0, "text": reasoning})
            content = delta.get("content")
            if content:
                if not isinstance(content, str):
                    raise TypeError("delta content is not a string")
                chunks.append({"type": "text-delta", "index": 0, "text": content})
            for call in delta.get("tool_calls") or []:
                chunks.append(_tool_call_delta(call, calls))
        usage = dsh_usage(data.get("usage"))
        if usage is not None:
            chunks.append({"type": "usage", "usage": usage})
        return chunks
    except (ValueError, TypeError, AttributeError) as error:
        raise ModelError(
            f"the model sent a malformed stream event: {payload[:120]!r}", "MODEL_MALFORMED_STREAM"
        ) from error
