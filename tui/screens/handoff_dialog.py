"""The hand-off dialog: the briefing that will start the other agent, its size, and the goal (editable)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Input, Label, OptionList, TextArea
from textual.widgets.option_list import Option

from core.handoff.agents import Agent
from core.handoff.briefing import DEFAULT_GOAL, Briefing
from tui.services.text import markup_escape, visible, visible_lines


def briefing_summary(briefing: Briefing, agent: Agent) -> str:
    """One line: the size, what of the session is in it, the masking, where the agent starts."""
    masked = sum(briefing.masked.values())
    secrets = f"{masked} secret{'' if masked == 1 else 's'} masked" if briefing.redacted else "secrets NOT masked"
    return visible(
        f"{briefing.size:,} bytes · {briefing.kept} of {briefing.messages} messages · {secrets} · "
        f"{agent.label} starts in {briefing.folder}"
    )


RELAYOUT_SECONDS = 0.15
"""How long typing in the goal pauses before the briefing below is laid out again."""


class HandoffScreen(ModalScreen[str | None]):
    """Shows the briefing; Start (or Enter in the goal) answers the goal, Esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CLASSES = "dialog"  # (its frame: app.tcss)
    DEFAULT_CSS = """
    HandoffScreen {
        & > Vertical {
            width: 90%;
            height: 90%;
            padding: 0 1;
        }
        & #handoff-briefing { height: 1fr; border: none; }
        & #handoff-buttons { height: auto; align-horizontal: right; }
        & Label { color: $text-muted; }
    }
    """

    def __init__(self, briefing: Briefing, agent: Agent) -> None:
        super().__init__()
        self.briefing = briefing
        self.agent = agent
        self._relayout: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical() as frame:
            frame.border_title = visible(f"Continue in {self.agent.label}")
            frame.border_subtitle = "Enter starts · Esc cancels"
            yield Label("Goal", markup=False)
            # Empty with the default goal as its placeholder: what is typed is the goal, from the first key
            # (no select-on-focus: keys typed as the dialog opens would land before the selection and be
            # replaced by the next one).
            goal = "" if self.briefing.goal == DEFAULT_GOAL else visible(self.briefing.goal)
            yield Input(value=goal, placeholder=DEFAULT_GOAL, select_on_focus=False, id="handoff-goal")
            yield Label(briefing_summary(self.briefing, self.agent), id="handoff-size", markup=False)
            yield TextArea(visible_lines(self.briefing.text), read_only=True, soft_wrap=True, id="handoff-briefing")
            with Horizontal(id="handoff-buttons"):
                yield Button("Cancel", id="handoff-cancel")
                yield Button("Start", variant="primary", id="handoff-start")

    def on_mount(self) -> None:
        self.query_one("#handoff-briefing", TextArea).cursor_blink = False
        self.query_one("#handoff-goal", Input).focus()

    @on(Input.Changed, "#handoff-goal")
    def _goal_changed(self, event: Input.Changed) -> None:
        self.briefing = self.briefing.with_goal(event.value)
        self.query_one("#handoff-size", Label).update(briefing_summary(self.briefing, self.agent))
        # The briefing below (tens of KiB to lay out again) follows once typing pauses, not at each key.
        if self._relayout is not None:
            self._relayout.stop()
        self._relayout = self.set_timer(RELAYOUT_SECONDS, self._show_briefing)

    def _show_briefing(self) -> None:
        self._relayout = None
        self.query_one("#handoff-briefing", TextArea).load_text(visible_lines(self.briefing.text))

    @on(Input.Submitted, "#handoff-goal")
    @on(Button.Pressed, "#handoff-start")
    def _start(self) -> None:
        self.dismiss(self.query_one("#handoff-goal", Input).value)

    @on(Button.Pressed, "#handoff-cancel")
    def action_cancel(self) -> None:
        """Close without starting anything."""
        self.dismiss(None)


class ContinueMenu(ModalScreen[str | None]):
    """A session row's menu: open it (or resume another agent's in that agent), or continue it in one
    of the agents found on PATH."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    ContinueMenu {
        align: center middle;
        & > OptionList { width: 64; height: auto; max-height: 16; border: round $accent; }
    }
    """

    def __init__(
        self, title: str, agents: list[Agent], can_open: bool, past: list[str] | None = None, resume: str | None = None
    ) -> None:
        super().__init__()
        self.title_text = title
        self.options = ([Option("Open", id="open")] if can_open else []) + [
            Option(f"Continue in {agent.label}", id=agent.name) for agent in agents
        ]
        if resume is not None:  # (another agent's session: open it in that agent, as sessionref resume does)
            self.options.insert(0, Option(f"Resume in {resume}", id="resume"))
        # Earlier hand-offs, listed under the choices (not choices themselves); their text is data.
        self.options += [
            Option(Text(visible(line), style="dim", no_wrap=True, overflow="ellipsis"), disabled=True)
            for line in past or ()
        ]

    def compose(self) -> ComposeResult:
        menu = OptionList(*self.options, id="continue-menu")
        menu.border_title = markup_escape(visible(self.title_text))  # a border title is markup: the title is data
        yield menu

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        """Close the menu."""
        self.dismiss(None)
