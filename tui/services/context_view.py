"""The context meter: what the session already takes of the model's window and what a draft adds.

``draft_context`` asks the agent loop (``core``) for its figures and ``context_lines`` words them,
in the palette's colours, for the preview pane; ``context_summary`` for the header and the viewer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from core import AgentLoop, HookContext
from core.agent.compaction import CONTEXT_PROMPT_TOO_LARGE
from core.agent.loop import prompt_estimate
from core.agent.tokens import ESTIMATOR
from core.sessions.wire_shapes import ContentBlock
from tui.services.palette import Paint, default_paint
from tui.services.text import bar, visible


def tokens(count: int) -> str:
    """A token count for people: ``950``, ``62.1k``, ``1.2M``."""
    if count < 1000:
        return f"{count}"
    if count < 100_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    if count < 1_000_000:
        return f"{count // 1000}k"
    return f"{count / 1_000_000:.1f}M"


@dataclass(frozen=True, slots=True)
class DraftContext:
    """The next request's context with this draft, in (calibrated) tokens."""

    used: int
    window: int
    window_source: str
    request_tokens: int
    reference_tokens: int
    floor: int
    threshold: int
    reserve: int
    calibration: float
    reported: int | None
    auto: bool
    model: str

    @property
    def draft(self) -> int:
        """What the draft adds: the request plus its references."""
        return self.request_tokens + self.reference_tokens

    @property
    def total(self) -> int:
        """The next request with the draft."""
        return self.used + self.draft

    @property
    def fits(self) -> bool:
        """Whether the draft can be sent at all (after compacting everything before it if need be)."""
        return self.floor <= self.window

    @property
    def compacts(self) -> bool:
        """Whether sending compacts the history first."""
        return self.fits and self.auto and self.used > 0 and self.total + self.reserve > self.threshold

    def refusal(self) -> str:
        """The words and code of a draft that cannot fit."""
        return (
            f"This draft cannot fit: it needs ≈{tokens(self.floor)} tokens with room for the reply, more than "
            f"{visible(self.model)}'s {tokens(self.window)} window even with the history compacted. Reference fewer "
            f"sessions or lower --max-reference-bytes. ({CONTEXT_PROMPT_TOO_LARGE})"
        )


def draft_context(agent: AgentLoop, content: list[ContentBlock], contexts: Sequence[HookContext]) -> DraftContext:
    """The context figures of sending ``content`` with ``contexts`` on ``agent``'s session."""
    reading = agent.context()
    if not content and not contexts:
        request, whole, floor = 0, reading.used, reading.used
    else:
        request = reading.calibrated(prompt_estimate(content))
        whole, floor = agent.fit_estimate(reading, prompt_estimate(content, contexts))
    return DraftContext(
        used=reading.used,
        window=reading.window,
        window_source=reading.window_source,
        request_tokens=request,
        reference_tokens=max(0, whole - reading.used - request),
        floor=floor,
        threshold=reading.threshold,
        reserve=reading.reserve,
        calibration=reading.calibration,
        reported=reading.reported,
        auto=agent.settings.policy.auto,
        model=agent.model.name,
    )


def context_lines(context: DraftContext, paint: Paint = default_paint, *, width: int = 12) -> list[Text]:
    """The meter as the preview shows it: use, the draft's share, and what sending will do."""
    share = context.used / context.window if context.window else 0.0
    style = paint("fits" if share < 0.6 else "caution" if share < 0.8 else "over")
    meter = Text("Context ", style="bold")
    meter.append(bar(context.used, context.window, width), style=style)
    meter.append(f" {tokens(context.used)} / {tokens(context.window)} ({share:.0%})")
    meter.append(f" · {context.window_source}", style="dim")
    lines = [meter]
    if context.draft:
        draft = Text("This draft +" + tokens(context.draft), style="")
        if context.reference_tokens:
            draft.append(
                f" (request {tokens(context.request_tokens)} + references {tokens(context.reference_tokens)})",
                style="dim",
            )
        draft.append(f" → {tokens(context.total)}")
        lines.append(draft)
    if not context.fits:
        lines.append(Text("✖ " + context.refusal(), style=paint("problem")))
    elif context.compacts:
        lines.append(
            Text(
                f"⟳ Over {context.threshold / context.window:.0%} of the window: sending compacts the history first",
                style=paint("caution"),
            )
        )
    elif context.total + context.reserve > context.window:
        lines.append(Text("⚠ Over the window: compaction is off, so this send will fail", style=paint("problem")))
    calibration = "" if context.calibration == 1.0 else f" · ×{context.calibration:.2f} from reported usage"
    lines.append(Text(f"≈ tokens: {ESTIMATOR}{calibration}", style="dim italic"))
    return lines


def context_summary(context: DraftContext) -> str:
    """One line for the header and the viewer: ``context 47% of 131k``."""
    share = context.used / context.window if context.window else 0.0
    return f"context {share:.0%} of {tokens(context.window)}"


def model_view_figures(text: str, context: DraftContext | None) -> str:
    """The model view's subtitle: the bytes the model will receive, and what the request takes of
    the window (the last reported usage, and whether sending compacts first)."""
    figures = f"{len(text.encode('utf-8', 'surrogatepass')):,} bytes"
    if context is not None:
        figures += (
            f" · this message ≈{tokens(context.draft)} tokens · request ≈{tokens(context.total)} of "
            f"{tokens(context.window)} ({context.window_source}) · history {tokens(context.used)}"
        )
        if context.reported is not None:
            figures += f" (last reported {context.reported:,})"
        if context.compacts:
            figures += " · compacts first"
    return figures
