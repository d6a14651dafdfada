"""Modal screens: the model-visible text viewer and the rename dialog."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, TextArea

from tui.services.text import visible, visible_lines


class ViewerScreen(ModalScreen[None]):
    """A read-only, scrollable view of exact text (control characters shown as ``\\xNN``)."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    DEFAULT_CLASSES = "dialog"  # (its frame: app.tcss)
    DEFAULT_CSS = """
    ViewerScreen {
        & > Vertical {
            width: 90%;
            height: 90%;
        }
        & #viewer-text {
            width: 1fr;
            height: 1fr;
            border: none;
            padding: 0 1;
            &:focus { border: none; }
        }
    }
    """

    def __init__(self, title: str, text: str, subtitle: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.subtitle = subtitle

    def compose(self) -> ComposeResult:
        with Vertical() as frame:
            frame.border_title = self.title_text
            frame.border_subtitle = self.subtitle or "Esc closes"
            yield TextArea(visible_lines(self.text), read_only=True, soft_wrap=True, id="viewer-text")

    def on_mount(self) -> None:
        area = self.query_one("#viewer-text", TextArea)
        area.cursor_blink = False
        area.focus()

    async def action_dismiss(self, result: None = None) -> None:
        """Close the viewer."""
        self.dismiss(None)


class RenameScreen(ModalScreen[str | None]):
    """Ask for a new session title; Enter saves, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CLASSES = "dialog"  # (its frame: app.tcss)
    DEFAULT_CSS = """
    RenameScreen {
        & > Vertical {
            width: 60;
            height: auto;
            padding: 1 2;
        }
        & Label { margin-bottom: 1; }
    }
    """

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current
        # The field shows the title as the app shows it everywhere: control and reordering
        # characters escaped, so pre-filling it never sends an escape sequence to the terminal.
        self.shown = visible(current)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Rename this session (Enter saves, Esc cancels)", markup=False)
            yield Input(value=self.shown, id="rename-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        title = event.value.strip()
        # Unchanged (as shown) keeps the title as it is, raw characters and all.
        self.dismiss(title if title and title != self.shown.strip() else None)

    def action_cancel(self) -> None:
        """Close without renaming."""
        self.dismiss(None)
