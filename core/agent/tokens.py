"""Token estimates and context windows: how big a request is, and how big it may be.

The estimate is DeepSeek's published rule of thumb (0.3 token per English character, 0.6 per
Chinese character), applied as ASCII versus any other character, over what a request really
carries: the wire messages of ``core.agent.wire`` (content, ``reasoning_content``, tool calls) plus
a few tokens of role framing per message. It is an estimate, not a tokenizer: the context meter
calibrates it against the prompt-token counts the API reports (``core.agent.context``).

Windows: DeepSeek's models have a documented one built in; a profile may set one per model; and a
server's "maximum context length is N" error teaches one, remembered per base URL and model in a
small JSON file (``WindowMemory``) so the next session knows it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from core.agent.wire import wire_messages
from core.sessions.wire_shapes import ModelMessage

ESTIMATOR = "0.3 per ASCII char, 0.6 per other (DeepSeek's rule)"
"""How the estimate counts, in words (the app shows it beside every estimated figure)."""

MESSAGE_OVERHEAD = 4
"""Tokens of role framing each wire message costs beyond its text (chat templates add a few)."""

DEEPSEEK_WINDOW = 131_072
"""DeepSeek's documented context window (128K tokens) for ``deepseek-chat`` and ``deepseek-reasoner``."""

BUILTIN_WINDOWS: Mapping[str, int] = {"deepseek-chat": DEEPSEEK_WINDOW, "deepseek-reasoner": DEEPSEEK_WINDOW}
"""Context windows known without configuration, by model name."""

DEFAULT_WINDOW = DEEPSEEK_WINDOW
"""The window assumed for a model nobody described (shown as "assumed"; a server's error corrects it)."""

WindowSource = Literal["built-in", "config", "learned", "assumed"]


def estimate_text(text: str) -> float:
    """Estimated tokens of ``text`` by DeepSeek's rule, unrounded (sums stay exact)."""
    if not text:
        return 0.0
    ascii_count = len(text.encode("ascii", "ignore"))
    return 0.3 * ascii_count + 0.6 * (len(text) - ascii_count)


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` by DeepSeek's rule, rounded up."""
    return math.ceil(estimate_text(text))


def estimate_wire_message(message: Mapping[str, Any]) -> float:
    """Estimated tokens of one wire message: its strings plus ``MESSAGE_OVERHEAD``."""
    tokens = float(MESSAGE_OVERHEAD)
    content = message.get("content")
    if isinstance(content, str):
        tokens += estimate_text(content)
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str):
        tokens += estimate_text(reasoning)
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {} if isinstance(call, Mapping) else {}
        tokens += estimate_text(str(function.get("name") or "")) + estimate_text(str(function.get("arguments") or ""))
    return tokens


def estimate_history(messages: Sequence[ModelMessage]) -> float:
    """Estimated tokens of a model history (``derive_messages`` output) as it goes on the wire."""
    return sum(estimate_wire_message(message) for message in wire_messages(messages))


# -- the API's own words ----------------------------------------------------------------------------

_LIMIT_PATTERNS = (
    # OpenAI, DeepSeek, vLLM: "This model's maximum context length is 131072 tokens."
    re.compile(r"maximum\s+context\s+length\s+is\s+(\d[\d,]*)", re.I),
    # llama.cpp: "the request exceeds the available context size (4096 tokens)"
    re.compile(r"context\s+size\s*\(\s*(\d[\d,]*)\s*tokens?\s*\)", re.I),
    # "context window of 32768 tokens", "context_length_exceeded ... limit of 8192"
    re.compile(r"context\s+(?:window|length)\s+(?:of|is|limit\s+of)\s+(\d[\d,]*)", re.I),
)
_OVERFLOW_PATTERNS = (
    re.compile(r"\b(?:maximum|max)(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)\b", re.I),
    re.compile(r"context[\s_-]+(?:length|window)[\s_-]+exceeded", re.I),
    re.compile(r"\bexceeds?\s+(?:the\s+)?(?:available\s+|model'?s?\s+)?context", re.I),
    re.compile(r"\b(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+model\b", re.I),
    re.compile(r"\btoo\s+many\s+tokens\b", re.I),
)


def context_limit_in(text: str) -> int | None:
    """The window a server's error states ("maximum context length is N"), or ``None``."""
    for pattern in _LIMIT_PATTERNS:
        match = pattern.search(text)
        if match:
            value = int(match.group(1).replace(",", ""))
            if value > 0:
                return value
    return None


def is_context_overflow(text: str) -> bool:
    """Whether a server's error text says the request was larger than the model's context."""
    return context_limit_in(text) is not None or any(pattern.search(text) for pattern in _OVERFLOW_PATTERNS)


# -- windows ------------------------------------------------------------------------------------------


def window_key(base_url: str, model: str) -> str:
    """The memory key of a model: its base URL without credentials, query or trailing slash, and its name."""
    parts = urlsplit(base_url.strip())
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    clean = urlunsplit((parts.scheme.lower(), host.lower(), parts.path.rstrip("/"), "", ""))
    return f"{clean} {model}"


class WindowMemory:
    """Context windows learned from servers' errors, kept in one small JSON file (``None``: in memory).

    The file maps ``window_key(base_url, model)`` to a window; it holds no key or header. Writes
    go through a temporary file and a rename, so a crash leaves the old file or the new one, and
    the file is private (``0600``). A damaged file is treated as empty and replaced on the next
    learned window.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else os.fspath(path)
        self._lock = threading.Lock()
        self._windows: dict[str, int] = self._read()

    def _read(self) -> dict[str, int]:
        if self.path is None:
            return {}
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(key): value for key, value in data.items() if type(value) is int and value > 0}

    def get(self, base_url: str, model: str) -> int | None:
        """The learned window of this model at this URL, if one was learned."""
        return self._windows.get(window_key(base_url, model))

    def learn(self, base_url: str, model: str, window: int) -> None:
        """Remember ``window`` for this model (best effort on disk: an unwritable file keeps it in memory)."""
        with self._lock:
            self._windows[window_key(base_url, model)] = window
            if self.path is None:
                return
            folder = os.path.dirname(self.path) or "."
            with contextlib.suppress(OSError):
                os.makedirs(folder, mode=0o700, exist_ok=True)
                handle, temporary = tempfile.mkstemp(prefix=".windows.", dir=folder)
                try:
                    with os.fdopen(handle, "w", encoding="utf-8") as file:
                        json.dump(self._windows, file, indent=1, sort_keys=True)
                        file.flush()
                        os.fsync(file.fileno())
                    os.chmod(temporary, 0o600)
                    os.replace(temporary, self.path)
                except OSError:
                    with contextlib.suppress(OSError):
                        os.unlink(temporary)
                    raise


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """A model's context window in tokens and where the figure comes from."""

    tokens: int
    source: WindowSource


def resolve_window(
    model: str, *, base_url: str | None = None, configured: int | None = None, memory: WindowMemory | None = None
) -> ContextWindow:
    """The window of ``model``: the configured one, unless its server said it is smaller (learned);
    else learned; else built in; else assumed. A configured window smaller than the server's is kept
    (people set one to spend less)."""
    learned = memory.get(base_url, model) if memory is not None and base_url is not None else None
    if learned is not None and (configured is None or learned < configured):
        return ContextWindow(learned, "learned")
    if configured is not None:
        return ContextWindow(configured, "config")
    if model in BUILTIN_WINDOWS:
        return ContextWindow(BUILTIN_WINDOWS[model], "built-in")
    return ContextWindow(DEFAULT_WINDOW, "assumed")


def reference_bytes_for(window: int, fraction: float) -> int:
    """A referenced session's byte budget relative to the model's window (upstream's
    "model-relative budget"): ``max(65536, floor(window × 4 × fraction))`` (4 bytes a token), so a
    bigger window can carry more of each session; never below rc.8's 64 KiB.

    Raises:
        ValueError: ``fraction`` outside (0, 1].
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"the reference context fraction must be in (0, 1], not {fraction}")
    return max(65536, math.floor(window * 4 * fraction))
