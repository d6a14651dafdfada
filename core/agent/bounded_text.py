"""Text a model writes, gathered piece by piece up to a cap: past it pieces are counted, not kept,
and the text ends with a notice saying where it was cut. Summaries and reasoning use it, so a model
that writes without end costs a bounded amount of memory, log and context."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class BoundedText:
    """At most ``cap`` characters of what was added (see the module docstring)."""

    cap: int
    parts: list[str] = field(default_factory=list)
    kept: int = 0
    """Characters kept."""
    total: int = 0
    """Characters added, kept or not."""

    def add(self, piece: str) -> str:
        """Add a piece; returns the part of it that was kept (empty past the cap)."""
        self.total += len(piece)
        room = self.cap - self.kept
        if room <= 0:
            return ""
        part = piece[:room]
        self.parts.append(part)
        self.kept += len(part)
        return part

    @property
    def cut(self) -> bool:
        """Whether more was added than kept."""
        return self.total > self.kept

    def value(self, what: str, *, stopped: bool = False) -> str:
        """The kept text, with ``[… {what} cut at N characters: the model wrote M …]`` after it when
        it was cut (``stopped``: the stream was closed at the cap, so how much more is unknown)."""
        text = "".join(self.parts)
        if not self.cut:
            return text
        wrote = "more" if stopped else f"{self.total:,}"
        return f"{text}\n\n[… {what} cut at {self.cap:,} characters: the model wrote {wrote} …]"
