"""What the session tools' results say: the frame their data travels in, and the lines outside it
that tell the model what a result holds of a session (their descriptions are in ``tool_specs``).

Every promise a description makes is kept by the result it describes (``tests/test_tool_texts.py``
reads each one against real results): the model knows nothing else about the tools.

A text is built from our own words and JSON. Data from sessions appears only inside a frame, as
tag-safe JSON (no raw ``<``); session ids outside it are JSON strings. Then, as the app's display
does (``core.display``), the characters a terminal or a reader could be fooled by (C1 controls such
as U+009B, DEL, bidi overrides and isolates, invisible format characters, lone surrogates) are
spelled as JSON ``\\uXXXX`` escapes: inside the frame's strings they read back as the same value, and
an MCP client that prints a result prints no terminal control and no reordering.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from core.display import UNSAFE_FORMAT
from core.reference.service import REFERENCED_SESSIONS_HEADER
from core.search.finder import SearchResult
from core.serialization import stringify_tag_safe_json

_UNSAFE = re.compile(f"[\x7f-\x9f{UNSAFE_FORMAT}]")


def escape_unsafe(text: str) -> str:
    """``text`` with every C1 control, DEL and reordering or invisible character as ``\\uXXXX``
    (C0 controls never appear raw: JSON escapes them, and our own words have none but newlines)."""
    return _UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def spelled(value: Any) -> str:
    """``value`` as a frame spells it: tag-safe JSON with the unsafe characters escaped."""
    return escape_unsafe(stringify_tag_safe_json(value))


def framed(tag: str, value: Any) -> str:
    """Data from sessions inside one frame, as a snapshot is framed: the warning, then tag-safe JSON."""
    return f"{REFERENCED_SESSIONS_HEADER}<{tag}>\n{spelled(value)}\n</{tag}>"


def _span(total: int) -> str:
    return "at position 0" if total == 1 else f"at positions 0–{total - 1}"


def _named(session_id: str) -> str:
    return stringify_tag_safe_json(session_id)


def _runs(indices: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted positions as runs of consecutive ones: ``(first, last)`` each."""
    runs: list[tuple[int, int]] = []
    for index in indices:
        if runs and index == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return runs


def positions(indices: Sequence[int]) -> str:
    """Sorted positions as ranges: ``0–763``, ``3``, ``0–2, 5, 9–11``."""
    return ", ".join(str(first) if first == last else f"{first}–{last}" for first, last in _runs(indices))


def _messages(count: int) -> str:
    return f"{count} message" if count == 1 else f"{count} messages"


def snapshot_notice(session_id: str, total: int, kept: Sequence[int], cut: Sequence[int]) -> str:
    """The lines before a ``reference_session`` snapshot: the session's size, which positions the
    snapshot kept, omitted and cut, and the ``read_session`` call that reads what it lacks."""
    named = _named(session_id)
    if total == 0:
        return f"Session {named} has no messages: the snapshot below holds none, and omits or cuts nothing."
    kept_set = set(kept)
    omitted = [index for index in range(total) if index not in kept_set]
    lines = [
        f"Session {named} has {_messages(total)}, {_span(total)} (0 is the first; read_session counts the same way)."
    ]
    held = "all of them" if not omitted else f"{len(kept)} of them"
    lines.append(f"The snapshot below keeps {held}: {positions(kept)}.")
    if omitted:
        lines.append(f"It omits {_messages(len(omitted))}: {positions(omitted)}.")
    if cut:
        lines.append(
            f"It cuts {'message' if len(cut) == 1 else 'messages'} {positions(cut)} to fit "
            "(the text then shows an '[… omitted N UTF-8 bytes …]' notice)."
        )
    if not omitted and not cut:
        lines.append("Nothing is omitted or cut.")
        return "\n".join(lines)
    first, last = _runs(omitted)[0] if omitted else (cut[0], cut[0])
    stop = last + 1
    call = stringify_tag_safe_json({"session": session_id, "from_message": first, "to_message": stop})
    lines.append(f"read_session reads {'them' if len(omitted) + len(cut) > 1 else 'it'}, e.g. {call}.")
    return "\n".join(lines)


def page_notice(session_id: str, total: int, start: int, stop: int, cut: int | None) -> str:
    """The lines before a ``read_session`` page: the session's size, the positions the page holds,
    how many come before and after it, and where the next page starts."""
    named = _named(session_id)
    if total == 0:
        return f"Session {named} has no messages."
    lines = [f"Session {named} has {_messages(total)}, {_span(total)} (0 is the first)."]
    if stop <= start:
        lines.append("This page holds no messages.")
    else:
        lines.append(f"This page holds {positions(range(start, stop))}: {start} before it, {total - stop} after it.")
    if cut is not None:
        lines.append(
            f"Message {cut} is longer than a page: it is cut to fit "
            "(its text shows an '[… omitted N UTF-8 bytes …]' notice)."
        )
    if stop < total:
        lines.append(f"The next page: from_message {stop}.")
    return "\n".join(lines)


def search_note(result: SearchResult) -> str | None:
    """What a search result says when the words said in sessions were not searched in full."""
    searched = "titles, ids and folders were searched"
    status = result.status
    if result.body == "off":
        return f"message search is off here: {searched}, not what was said"
    if result.body == "short":
        return f"what was said is searched for words of two characters or more: {searched}"
    if result.body == "unavailable":
        code = f" ({status.code})" if status is not None and status.code else ""
        return f"message search is unavailable right now{code}: {searched}, not what was said"
    if result.body == "indexing":
        done = (
            f": {status.indexed:,} of {status.total:,} sessions indexed" if status is not None and status.total else ""
        )
        return f"message search is not ready yet{done}; {searched}, and what was said in the sessions indexed so far"
    if not result.complete:
        return "message search ran out of time: more sessions may hold these words (search again)"
    return None


_FRAME = re.compile(r"<([a-z][a-z-]*)>\n(.*)\n</\1>\s*\Z", re.S)


def frame_data(text: str) -> Any:
    """The data a tool's result carries in its frame (``framed``), parsed; ``None`` for a result
    without one (an error, another tool's, a shape this version did not write)."""
    at = text.rfind(REFERENCED_SESSIONS_HEADER)
    if at < 0:
        return None
    match = _FRAME.match(text, at + len(REFERENCED_SESSIONS_HEADER))
    if match is None:
        return None
    try:
        return json.loads(match.group(2))
    except ValueError:
        return None
