"""``AppTrace``: what the app measured about itself as it ran, from the chat screen's messages: each
picker's key-to-paint time, each preview's, and the messages sent. With ``SESSIONREF_TRACE=<file>``
the app writes the times there as JSON on exit (the benchmarks read them)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field

from core.display import visible

TRACE_ENV = "SESSIONREF_TRACE"


@dataclass
class AppTrace:
    """The app's own figures (see the module docstring)."""

    picker_latencies: list[float] = field(default_factory=list)
    """Seconds from a key to the picker painted, one per picker update."""
    preview_seconds: list[float] = field(default_factory=list)
    """Seconds from a draft's change to its preview painted, one per preview."""
    sent: int = 0
    """Messages that went to the model."""

    @property
    def picker_updates(self) -> int:
        """How many times the picker was painted."""
        return len(self.picker_latencies)

    @property
    def preview_updates(self) -> int:
        """How many previews were painted."""
        return len(self.preview_seconds)

    @property
    def last_preview_seconds(self) -> float:
        """The latest preview's time (0 before the first)."""
        return self.preview_seconds[-1] if self.preview_seconds else 0.0

    def write_if_asked(self) -> None:
        """Write the times to ``$SESSIONREF_TRACE`` when it names a file; a file that cannot be
        written is one line on stderr, never a failure to quit."""
        path = os.environ.get(TRACE_ENV)
        if not path:
            return
        figures = {"picker_latencies": self.picker_latencies, "preview_seconds": self.preview_seconds}
        try:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(figures, handle)
        except OSError as error:
            print(f"sessionref: cannot write {TRACE_ENV} {visible(path)}: {error.strerror}", file=sys.stderr)
