"""Spans of a text (``(start, end)`` offsets): what secret masking and search marking both join."""

from __future__ import annotations

from collections.abc import Iterable


def merged_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` in order, overlapping (and touching) ones joined."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
