"""The fuzz target of a record too long to parse whole (``core.sessions.sources.oversized``).

``oversized_record`` reads the input (or a record holding its text) as one JSON record in pieces
split where the input's CRC says, each string over 16 bytes cut: whenever the input is JSON, the cut
is JSON of the same shape, each string (a key too) whole or its head followed by the omission notice
with the exact UTF-8 bytes it left out; whatever the input, nothing but a result comes out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.serialization import utf8_length
from core.sessions.sources import oversized
from fuzz.kit import check, rng_of, text_of

_NOTICE = re.compile(r"\n\[… omitted (\d+) UTF-8 bytes …\]\Z")
_KEEP = 16


def _pairs(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return pairs  # (objects as their pairs, in order: a cut key never merges two)


def _same_or_cut(whole: Any, cut: Any) -> bool:
    if type(whole) is list and type(cut) is list:
        return len(whole) == len(cut) and all(_same_or_cut(a, b) for a, b in zip(whole, cut, strict=True))
    if type(whole) is tuple and type(cut) is tuple:
        return _same_or_cut(whole[0], cut[0]) and _same_or_cut(whole[1], cut[1])
    if type(whole) is str and type(cut) is str and whole != cut:
        found = _NOTICE.search(cut)
        head = cut[: found.start()] if found else ""
        return found is not None and whole.startswith(head) and int(found[1]) == utf8_length(whole) - utf8_length(head)
    return bool(whole == cut or (whole != whole and cut != cut))  # (NaN is not itself)


def oversized_record(data: bytes) -> str:
    rng = rng_of(data)
    if rng.random() < 0.5:  # the input's text in a record (a JSON text always), else the input as it is
        texts = text_of(data).split("\n")
        record = {"type": "user", "message": {"content": texts, texts[0]: rng.choice(texts)}}
        try:
            data = json.dumps(record, ensure_ascii=rng.random() < 0.5).encode()
        except UnicodeEncodeError:  # (a lone surrogate: written as an escape)
            data = json.dumps(record).encode()
    pieces, at = [], 0
    while at < len(data):
        width = rng.choice([1, 2, 3, 5, 7, 12, 64])
        pieces.append(data[at : at + width])
        at += width
    kept, oversized.STRING_KEEP = oversized.STRING_KEEP, _KEEP
    try:
        cut = oversized.cut_json(pieces)
    finally:
        oversized.STRING_KEEP = kept
    try:
        whole = json.loads(data.decode("utf-8"), object_pairs_hook=_pairs)
    except (ValueError, RecursionError):
        return "unreadable"  # (not JSON: only that nothing else came out)
    check(cut is not None, "a small record was refused as too large")
    try:
        parsed = json.loads((cut or b"").decode("utf-8", "surrogatepass"), object_pairs_hook=_pairs)
    except (ValueError, RecursionError) as error:
        raise AssertionError(f"the cut of a JSON record is not JSON: {error}: {cut!r}") from None
    check(_same_or_cut(whole, parsed), f"the cut differs beyond its strings: {cut!r}")
    return "ok:whole" if parsed == whole else "ok:cut"


def oversized_seeds() -> list[bytes]:
    return [
        json.dumps({"message": {"role": "user", "content": "x" * 40}}).encode(),
        json.dumps(["é" * 30, "🎉" * 9, '\\"' * 12], ensure_ascii=False).encode(),
        json.dumps(["é" * 30, "🎉" * 9, "\ud83d" * 4]).encode(),
        b'{"a": "\\u00e9\\u00e9\\u00e9\\u00e9\\ud83c\\udf89\\ud83c\\udf89\\n\\t\\\\\\"x"}',
    ]


OVERSIZED_TOKENS = [b'"', b"\\", b"\\u", b"\\ud83c\\udf89", b"\\u00e9", b"\\\\", b'\\"', "é".encode(), "🎉".encode()]
