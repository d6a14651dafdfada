"""How the app spells values on screen: safe text, short paths, ages, sizes, bars and token estimates.

Pure functions, no Textual import, so the picker, the sidebar and the preview agree and tests can pin them.
"""

from __future__ import annotations

import math
import os

from rich.cells import cell_len, get_character_cell_size

from core.agent.tokens import ESTIMATOR as ESTIMATOR  # the app's one estimate
from core.agent.tokens import estimate_tokens as estimate_tokens
from core.display import visible as visible  # the app's one way to show data text
from core.display import visible_lines as visible_lines
from core.sessions.sources.registry import badge_of


def markup_escape(text: str) -> str:
    """Data text for the few places Textual insists on a markup string (the palette's help line):
    control characters escaped (``visible``) and every ``[`` escaped, so no tag can open."""
    return visible(text).replace("[", "\\[")


def elide_middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters by replacing its middle with ``…``."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width == 1:
        return "…"
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def fit_cells(text: str, width: int) -> str:
    """``text`` cut (ending in ``…``) or padded with spaces to exactly ``width`` terminal cells.

    Linear in the text: a picker paint fits a hundred snippets per keystroke.
    """
    if text.isascii() and text.isprintable():  # one cell per character
        if len(text) > width:
            text = text[: max(0, width - 1)] + "…"
        return text + " " * max(0, width - len(text))
    if cell_len(text) > width:
        # The longest prefix that leaves a cell for the ellipsis (zero-width characters included).
        used = 0
        for at, character in enumerate(text):
            used += get_character_cell_size(character)
            if used > width - 1:
                text = text[:at]
                break
        text += "…"
    return text + " " * max(0, width - cell_len(text))


def short_cwd(cwd: str | None, width: int = 40, home: str | None = None) -> str:
    """A cwd for a row: home as ``~``, control characters escaped, middle-elided to ``width``.

    ``None`` is spelt ``(no cwd)``.
    """
    if cwd is None:
        return "(no cwd)"
    home = os.path.expanduser("~") if home is None else home
    if home and home != "/" and (cwd == home or cwd.startswith(home.rstrip("/") + "/")):
        cwd = "~" + cwd[len(home.rstrip("/")) :]
    return elide_middle(visible(cwd), width)


def age(created_at: int, now: int) -> str:
    """A compact age: ``now``, ``42s``, ``5m``, ``3h``, ``2d``, ``6w``, ``1y`` (times in epoch ms)."""
    seconds = max(0, (now - created_at) // 1000)
    if seconds < 10:
        return "now"
    for unit, size in (("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def kib(size: int) -> str:
    """Bytes as KiB with one decimal (``41.2 KiB``), plain bytes under 1 KiB."""
    if size < 1024:
        return f"{size} B"
    return f"{size / 1024:.1f} KiB"


def bar(used: int, total: int, width: int = 10) -> str:
    """A block bar of ``width`` cells, ``█`` for the used share, ``░`` for the rest."""
    if total <= 0 or width <= 0:
        return ""
    filled = min(width, math.ceil(width * used / total)) if used > 0 else 0
    return "█" * filled + "░" * (width - filled)


OWNER_BADGE_CELLS = 10


def owner_badge(owner: str) -> str:
    """A teammate's session's badge: ``@name`` (control characters shown as escapes), at most
    ``OWNER_BADGE_CELLS`` terminal cells."""
    name = "@" + visible(owner)
    return fit_cells(name, min(cell_len(name), OWNER_BADGE_CELLS))


def tool_badge(session_id: str) -> str | None:
    """The badge of a session another agent wrote (``CC`` for Claude Code's, ``CX`` for Codex's…: the
    agents' table, ``core.sessions.sources.registry``), ``None`` for a session of this store."""
    return badge_of(session_id)


def session_badge(session_id: str, owner: str | None) -> str | None:
    """The badge a row shows before a session's title: another tool's, a teammate's name, or none."""
    badge = tool_badge(session_id)
    if badge is None and owner is not None:
        badge = owner_badge(owner)
    return badge
