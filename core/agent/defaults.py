"""The agent's defaults that settings declare, and the compaction policy they are checked against, in
one module that imports nothing heavy: the command line's flags, ``--help`` and ``sessionref mcp``
read them without importing the agent loop, the model client or the session tools (which take them
from here)."""

from __future__ import annotations

from dataclasses import dataclass

DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEEPSEEK_MODEL = "deepseek-chat"

REPLY_SECONDS = 600.0
"""The default overall time limit of one reply, first byte to last: a server that trickles a byte
a minute (each read in time) or streams without end still ends the turn."""
MAX_REPLY_BYTES = 16 * 1024 * 1024
"""The default size cap of one reply's stream as received (server-sent events, JSON and all)."""

MAX_STEPS = 8
"""Steps one turn may take (each tool round is a step); past it the turn ends ``TURN_STEP_LIMIT``."""

READ_BYTES = 65536
"""What one ``read_session`` call returns at most (UTF-8 bytes of its frame's JSON), by default."""
MIN_READ_BYTES = 1024
"""The least a ``read_session`` page may be set to hold (a frame and a cut message's notice fit)."""

MAX_REASONING_CHARS = 200_000
"""A reply's reasoning kept at most (it is logged, shown collapsed, never sent again)."""

SUMMARY_MAX_CHARS = 100_000
"""The summary kept at most, whatever a model writes past ``SUMMARY_MAX_TOKENS`` (cut with a notice)."""
SUMMARY_MAX_TOKENS = 8192
"""The cap on a summary's length (dsh's default), lowered for small windows (see ``summary_cap``)."""


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """When and how much to compact.

    Attributes:
        threshold_ratio: a send whose request would pass this fraction of the window compacts first.
        retain_ratio: recent history kept verbatim, as a fraction of the window (dsh's 0.16).
        auto: compact before sends and after a context-length error; off: only on demand.
        summary_max_tokens: the summary's length cap asked of the model.
        summary_max_chars: the summary's length cap kept, whatever the model wrote (cut with a notice).
    """

    threshold_ratio: float = 0.8
    retain_ratio: float = 0.16
    auto: bool = True
    summary_max_tokens: int = SUMMARY_MAX_TOKENS
    summary_max_chars: int = SUMMARY_MAX_CHARS

    def __post_init__(self) -> None:
        if not 0 < self.threshold_ratio <= 1:
            raise ValueError(f"threshold_ratio must be in (0, 1], not {self.threshold_ratio}")
        if not 0 <= self.retain_ratio < self.threshold_ratio:
            raise ValueError(f"retain_ratio must be in [0, threshold_ratio), not {self.retain_ratio}")
        if self.summary_max_tokens <= 0:
            raise ValueError(f"summary_max_tokens must be positive, not {self.summary_max_tokens}")
        if self.summary_max_chars <= 0:
            raise ValueError(f"summary_max_chars must be positive, not {self.summary_max_chars}")
