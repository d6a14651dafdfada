"""A record too large to parse whole (a 20 MB line of a transcript, an 8 MB database value), read in
pieces and kept in shape: each long string in it is cut to its head and ends with the contract's
omission notice, so the message it holds still reads, says what was left out, and costs bounded
memory. Nothing is guessed: the record's own structure is what the reader maps, as for any other.

``cut_json`` streams the JSON text in slices of ``SLICE`` bytes: outside strings it copies the bytes
(the structure, bounded by ``STRUCTURE_BYTES``); inside a string it keeps the first ``STRING_KEEP``
bytes (whole escapes, whole characters) and counts the UTF-8 bytes all of it decodes to, exactly and
at the regular-expression engine's speed (an escape-dense string, ``\\u00e9`` after ``\\u00e9``, as
Python tools write them, costs no Python step per escape).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator

from core.serialization import omission_notice, utf8_length

STRING_KEEP = 64 * 1024
"""The bytes of a long string's head that are kept (a reference's whole budget is usually less)."""
STRUCTURE_BYTES = 8 * 1024 * 1024
"""The most a cut record may hold in all: a record that is large for its number of values, not
for one long string, is beyond this and left out as malformed."""
SLICE = 1024 * 1024
"""The bytes handled at a time (a piece larger than this is taken in slices)."""

_CONTENT = re.compile(rb'(?:[^"\\]++|\\u[0-9a-fA-F]{4}|\\[^u])*+')
"""A run of a string's content in whole escapes: it ends at the closing quote, at an escape the
slice cuts (or a malformed one), or at the slice's end."""
_HIGH_AT_END = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")

# Each escape replaced by as many bytes as it decodes to in UTF-8, one kind at a time (escaped
# backslashes first: after them, every backslash starts an escape). A pair of surrogates is one
# character of four bytes; a lone surrogate counts three, as U+FFFD does in JavaScript.
_DECODED_WIDTHS = [
    (re.compile(rb"\\\\"), b"x"),
    (re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"), b"xxxx"),
    (re.compile(rb"\\u00[0-7][0-9a-fA-F]"), b"x"),
    (re.compile(rb"\\u0[0-7][0-9a-fA-F]{2}"), b"xx"),
    (re.compile(rb"\\u[0-9a-fA-F]{4}"), b"xxx"),
    (re.compile(rb"\\[^u]"), b"x"),
]


def _decoded_bytes(content: bytes) -> int:
    """The UTF-8 bytes ``content`` (whole escapes of a valid string) decodes to."""
    if b"\\" not in content:
        return len(content)
    for pattern, width in _DECODED_WIDTHS:
        content = pattern.sub(width, content)
    return len(content)


class _TooLarge(Exception):
    """The structure outside long strings passed ``STRUCTURE_BYTES``."""


class _String:
    """One string being read: its kept head (raw JSON bytes) and the decoded UTF-8 bytes of all of it."""

    __slots__ = ("decoded", "full", "head")

    def __init__(self) -> None:
        self.head = bytearray()
        self.full = False
        self.decoded = 0

    def add(self, content: bytes) -> None:
        """Content in whole escapes (no pair of surrogates split)."""
        self.decoded += _decoded_bytes(content)
        if self.full:
            return
        room = STRING_KEEP - len(self.head)
        if len(content) <= room:
            self.head += content
            return
        self.full = True
        kept = content[: _content_end(content, 0, room)]  # whole escapes
        high = _HIGH_AT_END.search(kept)
        if high is not None and not _escaped_backslash_before(kept, high.start()):
            kept = kept[: high.start()]  # never half a pair
        self.head += kept
        drop_part_character(self.head)

    def json(self) -> bytes:
        """The string as JSON: verbatim when whole, else its head and the omission notice."""
        if not self.full:
            return b'"' + bytes(self.head) + b'"'
        try:
            head = json.loads(b'"' + bytes(self.head) + b'"')
        except ValueError:
            return b'"' + bytes(self.head)  # (a control character, bad UTF-8: malformed as it was)
        cut = json.dumps(head + omission_notice(self.decoded - utf8_length(head)), ensure_ascii=False)
        return cut.encode("utf-8", "surrogatepass")


def _content_end(data: bytes, at: int, end: int) -> int:
    """Where the run of whole string content from ``at`` (up to ``end``) ends."""
    found = _CONTENT.match(data, at, end)
    return at if found is None else found.end()


def _escaped_backslash_before(data: bytes, at: int) -> bool:
    """Whether the backslash at ``at`` is itself escaped (an odd run of backslashes before it)."""
    run = 0
    while at - run - 1 >= 0 and data[at - run - 1] == 0x5C:
        run += 1
    return run % 2 == 1


def drop_part_character(head: bytearray) -> None:
    """Drop an incomplete UTF-8 character the cut left at the end of ``head``."""
    lead = len(head) - 1
    while lead >= 0 and lead >= len(head) - 4 and 0x80 <= head[lead] < 0xC0:
        lead -= 1
    if lead >= 0 and head[lead] >= 0x80:
        width = 2 if head[lead] < 0xE0 else 3 if head[lead] < 0xF0 else 4
        if lead + width > len(head):
            del head[lead:]


def _slices(pieces: Iterable[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        if len(piece) <= SLICE:
            yield piece
        else:
            for start in range(0, len(piece), SLICE):
                yield piece[start : start + SLICE]


def cut_json(pieces: Iterable[bytes], limit: int = STRUCTURE_BYTES) -> bytes | None:
    """The JSON text whose bytes come in ``pieces``, each string longer than ``STRING_KEEP`` bytes cut
    to its head plus the omission notice (the UTF-8 bytes it left out); ``None`` when even so it is
    longer than ``limit``. Malformed JSON comes back malformed (its parse fails)."""
    out = bytearray()
    string: _String | None = None
    pending = b""
    try:
        for piece in _slices(pieces):
            chunk = pending + piece if pending else piece
            pending = b""
            at, size = 0, len(chunk)
            while at < size:
                if string is None:
                    quote = chunk.find(b'"', at)
                    end = size if quote < 0 else quote
                    if len(out) + end - at > limit:
                        raise _TooLarge
                    out += chunk[at:end]
                    if quote < 0:
                        break
                    string, at = _String(), quote + 1
                    continue
                end = _content_end(chunk, at, len(chunk))
                if end < size and chunk[end] == 0x22:  # the closing quote
                    string.add(chunk[at:end])
                    value = string.json()
                    if len(out) + len(value) > limit:
                        raise _TooLarge
                    out += value
                    string, at = None, end + 1
                    continue
                if end < size and size - end >= 6:  # a malformed escape: the parse will refuse it
                    string.add(chunk[at:end])
                    out += b'"' + bytes(string.head) + chunk[end:]
                    return bytes(out)
                high = _HIGH_AT_END.search(chunk, at, end)
                if high is not None and not _escaped_backslash_before(chunk, high.start()):
                    end = high.start()  # the low half may come in the next slice
                string.add(chunk[at:end])
                pending = chunk[end:]  # an escape the slice cut, read again with the next one
                break
    except _TooLarge:
        return None
    if string is not None:  # unterminated: malformed whatever follows
        out += b'"' + bytes(string.head)
    out += pending
    return bytes(out)
