"""The sidebar's filter line: ``/`` starts it, what is typed narrows the sidebar to the sessions the
search finds for it (the same search as the `@` picker and the model's tool), Escape clears it.

A part the sidebar owns: it keeps the typed text and says what a key did; the sidebar shows it in its
border title and posts ``SessionSidebar.FilterChanged``.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_FILTER = 200
"""Characters a filter holds at most."""


@dataclass(slots=True)
class SidebarFilter:
    """The filter's text and whether keys go to it (``typing``)."""

    text: str = ""
    typing: bool = False

    @property
    def active(self) -> bool:
        """Whether the sidebar shows a filtered list."""
        return bool(self.text.strip())

    def key(self, key: str, character: str | None) -> bool | None:
        """Take one key: ``True`` when the text changed, ``False`` when the key was taken without
        changing it, ``None`` when it is not the filter's (the sidebar's bindings get it)."""
        if not self.typing:
            if character == "/":
                self.typing = True
                return False
            if key == "escape" and self.text:
                self.text = ""
                return True
            return None
        if key == "escape":
            self.typing = False
            changed = bool(self.text)
            self.text = ""
            return changed
        if key in ("enter", "down", "tab"):
            self.typing = False  # the list takes the keys again; the filter stays
            return False
        if key == "backspace":
            if not self.text:
                self.typing = False
                return False
            self.text = self.text[:-1]
            return True
        if character is not None and character.isprintable() and len(self.text) < MAX_FILTER:
            self.text += character
            return True
        return False

    def title(self) -> str:
        """What the sidebar's border title says."""
        if not self.typing and not self.active:
            return "Sessions"
        cursor = "▏" if self.typing else ""
        return f"Sessions / {self.text}{cursor}"
