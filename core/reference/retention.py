"""Fitting one source into its byte budget (CONTRACT §6), in near-linear time.

The literal algorithm re-serialises the whole data object after every change. The serialised size
is additive, though: ``size = fixed + sum(item sizes) + commas``, where ``fixed`` is the data object
with an empty conversation and an item's size is the length of its own tag-safe JSON (the ``<``
escape is character-local). So phase 1 becomes "keep the longest run of newest droppable items that
fits next to the protected ones", and phase 2 a heap of current text lengths. The output is
bit-identical to the literal algorithm (the tests keep a literal copy to prove it).
"""

from __future__ import annotations

import heapq
from typing import Any

from core.collector import collector_paused
from core.constants import OMISSION_NOTICE_HEAD, OMISSION_NOTICE_TAIL
from core.reference.projection import project_conversation
from core.serialization import js_json_stringify, omission_notice, tag_safe_json_length, utf8_encode, utf8_length
from core.sessions.models import ProjectedItem, RetainedSource, SurfaceSnapshot

_NOTICE_BYTES = utf8_length(OMISSION_NOTICE_HEAD) + utf8_length(OMISSION_NOTICE_TAIL)


def _head_tail_span(data: bytes, head: int, tail: int) -> tuple[int, int]:
    """``(prefix_end, suffix_start)`` of the head/tail retainer on valid UTF-8 ``data``.

    The prefix is ``data[:prefix_end]`` and the suffix ``data[suffix_start:]``; when nothing is
    omitted the result is ``(total, total)``.
    """
    total = len(data)
    prefix_end = min(total, head)
    suffix_length = min(total - prefix_end, tail)
    if total <= head + tail:
        return total, total
    # Drop a trailing incomplete sequence from the prefix: find the last lead byte in its final
    # three bytes and cut there unless its whole sequence is inside the prefix.
    index = prefix_end - 1
    while index >= 0 and index >= prefix_end - 4 and 0x80 <= data[index] < 0xC0:
        index -= 1
    if index >= 0 and data[index] >= 0x80:
        lead = data[index]
        width = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        if index + width > prefix_end:
            prefix_end = index
    suffix_start = total - suffix_length
    while suffix_start < total and 0x80 <= data[suffix_start] < 0xC0:
        suffix_start += 1
    return prefix_end, suffix_start


_BOM = b"\xef\xbb\xbf"


def _bom_at(data: bytes, start: int, end: int) -> int:
    """3 when ``data[start:end]`` starts with a UTF-8 byte-order mark, else 0."""
    return 3 if end - start >= 3 and data.startswith(_BOM, start) else 0


def _decoded(data: bytes, start: int, end: int) -> str:
    """``new TextDecoder().decode(data[start:end])``: UTF-8 with one leading BOM dropped (the
    WHATWG decoder's default, which dsh's retainer uses for each of the prefix and the suffix)."""
    return data[start:end].decode("utf-8-sig")


def retain_head_tail(text: str, head_bytes: int, tail_bytes: int) -> tuple[str, int]:
    """Keep the first ``head_bytes`` and last ``tail_bytes`` UTF-8 bytes of ``text`` on whole
    characters, as dsh's ``TextRetainer`` does (``finish()``).

    Returns ``(kept text, omitted bytes)``. The kept text is decoded as the WHATWG ``TextDecoder``
    does: a lone surrogate reads as U+FFFD, and a byte-order mark (U+FEFF) at the start of the
    prefix or of the suffix is dropped (its bytes still count as kept, not omitted).
    """
    data = utf8_encode(text)
    total = len(data)
    if total <= head_bytes + tail_bytes:
        return _decoded(data, 0, total), 0
    prefix_end, suffix_start = _head_tail_span(data, head_bytes, tail_bytes)
    kept = _decoded(data, 0, prefix_end) + _decoded(data, suffix_start, total)
    return kept, total - prefix_end - (total - suffix_start)


def truncate_with_notice(text: str, max_bytes: int) -> tuple[str, int]:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes, ending with an exact omission notice.

    The literal binary search of the original over the retained byte count, evaluated on byte
    offsets so that each probe costs O(1). Returns ``(text, omitted bytes)``; a text that already
    fits comes back unchanged with 0 omitted, and when not even the notice fits the result is
    ``("", total)``. As in dsh, a byte-order mark starting the kept head or tail is dropped from
    the text (found by differential fuzzing against the npm package).
    """
    data = utf8_encode(text)
    total = len(data)
    if total <= max_bytes:
        return text, 0
    low, high = 0, max_bytes
    best: tuple[int, int] | None = None
    while low <= high:
        retained = (low + high) // 2
        head, tail = (retained + 1) // 2, retained // 2
        if total <= head + tail:
            span = (total, total)
            shown, omitted = total - _bom_at(data, 0, total), 0
        else:
            span = _head_tail_span(data, head, tail)
            omitted = span[1] - span[0]
            shown = total - omitted - _bom_at(data, 0, span[0]) - _bom_at(data, span[1], total)
        if shown + _NOTICE_BYTES + len(str(omitted)) <= max_bytes:
            best = span
            low = retained + 1
        else:
            high = retained - 1
    if best is None:
        return "", total
    prefix_end, suffix_start = best
    if prefix_end == total:
        return _decoded(data, 0, total) + omission_notice(0), 0
    omitted = suffix_start - prefix_end
    kept_text = _decoded(data, 0, prefix_end) + _decoded(data, suffix_start, total)
    return kept_text + omission_notice(omitted), omitted


_ITEM_OVERHEAD = {role: tag_safe_json_length({"role": role, "text": ""}) - 2 for role in ("user", "assistant")}


def _item_size(role: str, text: str) -> int:
    """Bytes of ``stringify_tag_safe_json({"role": role, "text": text})``."""
    encoded = js_json_stringify(text)
    return _ITEM_OVERHEAD[role] + utf8_length(encoded) + 5 * encoded.count("<")


def _total(fixed: int, items: int, payload: int) -> int:
    """Serialised size of a data object with ``items`` conversation entries of ``payload`` bytes."""
    return fixed + payload + max(items - 1, 0)


def retain_referenced_session(
    snapshot: SurfaceSnapshot, label: str, max_bytes: int, items: list[ProjectedItem] | None = None
) -> RetainedSource | None:
    """Fit one source into ``max_bytes`` (CONTRACT §6); ``None`` when its fixed fields cannot fit.

    Phase 1 drops the oldest messages that are neither checkpoints nor the newest; phase 2 cuts the
    longest remaining text with ``truncate_with_notice`` until the data object fits. ``items``: the
    snapshot's projected conversation when the caller already has it (with its secrets masked).
    """
    if items is not None:
        original = items
    else:
        with collector_paused():
            original = project_conversation(snapshot)
    header = snapshot.session
    fixed_object: dict[str, Any] = {
        "sessionId": header.id,
        "label": label,
        "cwd": header.cwd,
        "capturedThroughSeq": snapshot.captured_through_seq,
        "conversation": [],
    }
    fixed = tag_safe_json_length(fixed_object)
    count = len(original)
    newest = count - 1

    # Phase 1. Protected items always stay; droppable ones are taken newest-first while they fit,
    # which is exactly the set the oldest-first drop loop stops at (size only falls as it drops).
    sizes: dict[int, int] = {}
    payload = 0
    for index, item in enumerate(original):
        if item.checkpoint or index == newest:
            sizes[index] = _item_size(item.role, item.text)
            payload += sizes[index]
    for index in range(newest - 1, -1, -1):
        item = original[index]
        if item.checkpoint:
            continue
        size = _item_size(item.role, item.text)
        if _total(fixed, len(sizes) + 1, payload + size) > max_bytes:
            break
        sizes[index] = size
        payload += size
    kept_indices = sorted(sizes)
    kept = [original[index] for index in kept_indices]
    kept_sizes = [sizes[index] for index in kept_indices]
    omitted_messages = count - len(kept)
    dropped_bytes = 0
    if omitted_messages:
        dropped_bytes = sum(utf8_length(item.text) for index, item in enumerate(original) if index not in sizes)

    # Phase 2.
    texts = [item.text for item in kept]
    cut = [0] * len(kept)
    lengths = [utf8_length(text) for text in texts]
    heap = [(-length, position) for position, length in enumerate(lengths)]
    heapq.heapify(heap)
    current = _total(fixed, len(kept), payload)
    while current > max_bytes:
        while heap and -heap[0][0] != lengths[heap[0][1]]:
            heapq.heappop(heap)
        if not heap or heap[0][0] == 0:
            return None
        longest, position = -heap[0][0], heap[0][1]
        target = max(0, longest - (current - max_bytes))
        shortened, omitted = truncate_with_notice(kept[position].text, target)
        if shortened == texts[position]:
            return None
        new_size = _item_size(kept[position].role, shortened)
        current += new_size - kept_sizes[position]
        kept_sizes[position] = new_size
        texts[position] = shortened
        cut[position] = omitted
        lengths[position] = utf8_length(shortened)
        heapq.heappush(heap, (-lengths[position], position))

    data = dict(fixed_object)
    data["conversation"] = [{"role": item.role, "text": text} for item, text in zip(kept, texts, strict=False)]
    omitted_bytes = dropped_bytes + sum(cut)
    stats = {
        "compacted": any(item.checkpoint for item in original),
        "originalMessages": count,
        "retainedMessages": len(kept),
        "omittedMessages": omitted_messages,
        "omittedBytes": omitted_bytes,
        "truncated": omitted_messages > 0 or omitted_bytes > 0,
    }
    shortened_at = tuple(kept_indices[position] for position, text in enumerate(texts) if text != kept[position].text)
    return RetainedSource(data=data, stats=stats, size=current, kept=tuple(kept_indices), cut=shortened_at)
