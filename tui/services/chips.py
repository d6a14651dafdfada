"""Mention chips: how the prompt shows a mention as ``@Label`` while the draft stays canonical.

The prompt's document holds each accepted (or typed, or pasted) mention as a *chip*: invisible marks
around a number, then the text the person reads, ``@Label`` (and a badge). The marks are Unicode
tag characters, which take no cell on screen; the number finds the chip's canonical text, the exact
``@[label](dsh-session:...)`` (or bare URI) it stands for, in a ``ChipBook``. What the prompt hands
on (``PromptArea.text``, copy, the preview, the model, the log) is the canonical text, byte for byte.

Pure text rules, no Textual; the prompt widget applies them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from rich.cells import cell_len

from core.errors import SessionReferenceError
from core.reference.uri import find_mention_spans, parse_session_reference_text
from tui.services.text import fit_cells, visible

OPEN = "\U000e0001"
"""Starts a chip (LANGUAGE TAG: a format character, zero cells wide)."""
CLOSE = "\U000e007f"
"""Ends a chip (CANCEL TAG)."""
_DIGITS = "".join(chr(0xE0030 + digit) for digit in range(10))
"""TAG DIGIT ZERO..NINE: a chip's number, invisible."""
_TAGS = re.compile("[\U000e0000-\U000e007f]")
_CHIP = re.compile(OPEN + "([" + _DIGITS + "]+)" + CLOSE + "([^" + OPEN + CLOSE + "]*)" + CLOSE)
_HEAD = re.compile(OPEN + "[" + _DIGITS + "]*" + CLOSE + "?")
"""What is left of a chip whose end is gone: its hidden number (never part of a draft; other tag
characters, an emoji flag's, are kept)."""


def strip_marks(text: str) -> str:
    """``text`` without the chips' invisible marks (what the screen shows of it)."""
    return _TAGS.sub("", text)


def has_marks(text: str) -> bool:
    """Whether ``text`` holds any tag character (a chip's marks among them)."""
    return _TAGS.search(text) is not None


LABEL_CELLS = 32
"""The most cells a chip's label takes; a longer one is cut with an ellipsis (the preview and the
model view show it whole)."""


BadgeOf = Callable[[str], "str | None"]
"""The badge a chip shows after its label: another tool's (``CC``/``CX``) or a teammate's name."""


class Chip(NamedTuple):
    """One chip found in a line: its span there, and the canonical text it stands for."""

    start: int
    end: int
    canonical: str | None


class ChipBook:
    """Every chip a prompt made, by number. Chips are never forgotten while the prompt lives, so
    undo, redo and a cut-and-paste inside the prompt bring a chip back as it was."""

    def __init__(self) -> None:
        self._canonical: list[str] = []
        self._numbers: dict[str, int] = {}

    def chip(self, canonical: str, label: str, badge: str | None = None) -> str:
        """The document text of a chip for ``canonical`` showing ``label`` (and ``badge``)."""
        number = self._numbers.get(canonical)
        if number is None:
            number = self._numbers[canonical] = len(self._canonical)
            self._canonical.append(canonical)
        shown = visible(strip_marks(label))
        shown = fit_cells(shown, min(cell_len(shown), LABEL_CELLS)) or "…"
        if badge:
            shown += " " + strip_marks(badge)
        digits = "".join(_DIGITS[int(digit)] for digit in str(number))
        return f"{OPEN}{digits}{CLOSE}@{shown}{CLOSE}"

    def chips_of(self, text: str) -> list[Chip]:
        """The chips of every line of ``text`` (spans within their own line)."""
        return [chip for line in text.split("\n") for chip in self.chips(line)]

    def chips(self, line: str) -> list[Chip]:
        """The chips of ``line`` this book made (anything else that looks like one is plain text)."""
        return [chip for chip in self._marked(line) if chip.canonical is not None]

    def _marked(self, line: str) -> list[Chip]:
        """Every chip-shaped run of ``line``: a chip of this book with its canonical text, or one
        it never made (pasted from another prompt, forged) with ``None``."""
        found = []
        for match in _CHIP.finditer(line):
            number = int("".join(str(ord(digit) - 0xE0030) for digit in match.group(1)))
            canonical = self._canonical[number] if number < len(self._canonical) else None
            found.append(Chip(match.start(), match.end(), canonical))
        return found

    def canonical(self, text: str) -> str:
        """``text`` with every chip replaced by its canonical text; a chip-shaped run this book did
        not make keeps only what it shows, and what is left of a chip whose end is gone loses its
        hidden number (no chip's marks ever reach a draft)."""
        return self._resolve(text, _HEAD.sub)

    def _resolve(self, text: str, rest: Callable[[str, str], str] | None = None) -> str:
        """``text`` with this book's chips as their canonical text (``rest`` cleans what is between)."""
        clean = (lambda part: rest("", part)) if rest is not None else (lambda part: part)
        out: list[str] = []
        for row, line in enumerate(text.split("\n")):
            if row:
                out.append("\n")
            position = 0
            for chip in self._marked(line):
                out.append(clean(line[position : chip.start]))
                out.append(chip.canonical if chip.canonical is not None else strip_marks(line[chip.start : chip.end]))
                position = chip.end
            out.append(clean(line[position:]))
        return "".join(out)

    def chipify(self, text: str, badge_of: BadgeOf | None = None, *, complete_only: bool = False) -> str:
        """``text`` with every mention (and bare URI) that parses turned into a chip; one that does
        not parse stays as it is. Chip-shaped runs this book did not make keep only what they show
        (pasted text cannot forge a chip). With ``complete_only``, a bare URI at the very end of a
        line stays text (it may still be being typed)."""
        lines = []
        for line in self._resolve(text).split("\n"):
            parts: list[str] = []
            position = 0
            for start, end in find_mention_spans(line):
                source = line[start:end]
                if complete_only and not source.startswith("@") and end == len(line):
                    continue
                try:
                    parsed = parse_session_reference_text(source)
                except SessionReferenceError:
                    continue
                (reference,) = parsed.references
                label = reference.label if reference.label is not None else reference.session_id
                badge = badge_of(reference.session_id) if badge_of is not None else None
                parts.append(line[position:start])
                parts.append(self.chip(source, label, badge))
                position = end
            parts.append(line[position:])
            lines.append("".join(parts))
        return "\n".join(lines)
