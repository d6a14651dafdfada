"""The preview pane: per reference, what of the other session the model will see and what it costs."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from ..preview_report import PreviewReport, ReferenceCard
from ..text import ESTIMATOR, bar, kib, short_cwd, visible, visible_lines

MESSAGE_CHARS = 300
"""Each projected message shows at most this many characters here; the viewer shows everything."""


def _card(card: ReferenceCard, home: str | None) -> list[RenderableType]:
    parts: list[RenderableType] = []
    parts.append(Text("@" + visible(card.label), style="bold", no_wrap=True, overflow="ellipsis"))
    where = short_cwd(card.cwd, 30, home) if card.problem is None else ""
    ident = Text(visible(card.session_id), style="dim", no_wrap=True, overflow="ellipsis")
    if where:
        ident.append(" · " + where)
    if card.problem is None and card.captured_through_seq is not None:
        ident.append(f" · through #{card.captured_through_seq}")
    parts.append(ident)
    if card.problem is not None:
        parts.append(Text(f"✖ {card.problem.describe()}", style="bold red"))
        return parts
    share = card.size / card.budget if card.budget else 0
    usage = Text(bar(card.size, card.budget, 12), style="red" if card.truncated else "green")
    usage.append(f" {kib(card.size)} / {kib(card.budget)} ({share:.0%})", style="")
    parts.append(usage)
    counts = Text(f"{card.retained_messages} of {card.original_messages} messages kept")
    if card.omitted_messages or card.omitted_bytes:
        counts.append(f" · {card.omitted_messages} omitted · {kib(card.omitted_bytes)} cut", style="yellow")
    parts.append(counts)
    badges = Text()
    if card.compacted:
        badges.append(" compacted ", style="bold black on #5fafff")
        badges.append(" ")
    if card.truncated:
        badges.append(" truncated ", style="bold black on #ffaf00")
    if badges.plain:
        parts.append(badges)
    for item in card.conversation:
        text = item["text"]
        shown = text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + f"… (+{len(text) - MESSAGE_CHARS} chars)"
        line = Text()
        line.append(f"{item['role']}: ", style="bold cyan" if item["role"] == "user" else "bold magenta")
        line.append(visible_lines(shown))
        parts.append(line)
    return parts


def render_report(report: PreviewReport | None, home: str | None = None, busy: bool = False) -> RenderableType:
    """The preview pane's content for ``report`` (``None``: nothing typed yet)."""
    if report is None or (not report.references and report.problem is None):
        hint = Text("Type @ to reference another session.\n", style="dim")
        hint.append("What the model will see of it, and what it costs, appears here before you send.", style="dim")
        return hint
    parts: list[RenderableType] = []
    total = Text()
    total.append(f"{len(report.cards) if report.problem is None else len(report.references)}", style="bold")
    total.append(f"/{report.max_references} references")
    if report.contexts:
        total.append(f" · prefix {kib(report.prefix_bytes)} · ≈{report.prefix_tokens:,} tokens")
    if busy:
        total.append(" · updating…", style="dim italic")
    parts.append(total)
    if report.contexts:
        parts.append(Text(f"≈ tokens: {ESTIMATOR}", style="dim italic"))
    if report.problem is not None:
        parts.append(Text(f"✖ {report.problem.describe()}", style="bold red"))
        parts.append(Text("Nothing will be sent until this is fixed.", style="dim"))
    for card in report.cards:
        parts.append(Text(""))
        parts.extend(_card(card, home))
    return Group(*parts)


class PreviewPane(VerticalScroll):
    """Scrollable preview of the current draft's references."""

    DEFAULT_CSS = """
    PreviewPane {
        width: 44;
        height: 1fr;
        border: round $primary 50%;
        border-title-color: $text-muted;
        padding: 0 1;
        &:focus { border: round $primary; }
        & > #preview-body { width: 1fr; height: auto; }
    }
    """

    def __init__(self, *, id: str | None = None, home: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Preview"
        self.home = home
        self.report: PreviewReport | None = None

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(render_report(None), id="preview-body", markup=False)

    def show(self, report: PreviewReport | None, busy: bool = False) -> None:
        """Render ``report`` (keep showing the previous one, marked updating, while ``busy``)."""
        if report is not None:
            self.report = report
        self.query_one("#preview-body", Static).update(render_report(self.report, self.home, busy))
