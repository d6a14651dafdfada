"""How text that comes from data is shown: never raw terminal control, never markup.

Titles, ids, cwds, file names, message text, server errors and other tools' transcripts are
written by other programs. Before any of it reaches a terminal (the app's widgets, the CLI's
output, a pre-filled input field) it goes through ``visible`` (one line) or ``visible_lines``
(keeps line breaks): C0 and C1 control characters (ESC, BEL, CSI, OSC introducers...) become
``\\xNN``, and the characters that reorder or hide text become ``\\uXXXX``: bidi overrides,
embeddings and isolates (the "Trojan Source" characters), the directional marks, line and
paragraph separators, zero-width and invisible format characters, the byte-order mark and lone
surrogates. What remains is printable text that reads the same as it displays.
"""

from __future__ import annotations

import re

UNSAFE_FORMAT = (
    "\u00ad"  # soft hyphen (invisible)
    "\u061c"  # Arabic letter mark
    "\u180e"  # Mongolian vowel separator
    "\u200b-\u200f"  # zero-width space/joiners, LRM, RLM
    "\u2028\u2029"  # line and paragraph separators
    "\u202a-\u202e"  # bidi embeddings and overrides
    "\u2060-\u2064"  # word joiner, invisible operators
    "\u2066-\u2069"  # bidi isolates
    "\u206a-\u206f"  # deprecated format characters
    "\ufeff"  # byte-order mark / zero-width no-break space
    "\ufff9-\ufffb"  # interlinear annotation
    "\ud800-\udfff"  # lone surrogates
)
"""The reordering and invisible characters ``visible`` escapes, as a regular-expression class body."""
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{UNSAFE_FORMAT}]")
_UNSAFE_KEEP_LINES = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{UNSAFE_FORMAT}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` on one line with every control or reordering character escaped (``\\xNN``, ``\\uXXXX``)."""
    return _UNSAFE.sub(_escape, text)


def visible_lines(text: str) -> str:
    """Like ``visible`` but keeps ``\\n`` line breaks (for message bodies)."""
    return _UNSAFE_KEEP_LINES.sub(_escape, text)
