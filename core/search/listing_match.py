"""Matching what the listing holds in memory: titles, ids and folders as typed (a substring), and
a listing's groups (the contract's order: this folder, no folder, elsewhere)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from core.search.matching import find_folded, fold
from core.sessions.models import Candidate, SessionRecord

MatchField = Literal["title", "id", "cwd", "body"]


class MetaIndex:
    """Every record's folded ``title NUL id NUL cwd`` in one text, searched with ``str.find``."""

    def __init__(self, records: Sequence[SessionRecord], titles: Mapping[str, str | None]) -> None:
        self.titles = titles
        lines: list[str] = []
        self.starts: list[int] = []
        position = 0
        self.text: str | None = None
        for record in records:
            header = record.header
            title = titles.get(header.id)
            line = "\x00".join((fold(title or ""), fold(header.id), fold(header.cwd or "")))
            if "\n" in line or line.count("\x00") != 2:
                return  # separators inside a field: search record by record
            self.starts.append(position)
            lines.append(line)
            position += len(line) + 1
        self.text = "\n".join(lines)

    def matching(self, records: Sequence[SessionRecord], needle: str) -> Iterable[int]:
        """Positions of the records whose title, id or cwd contains ``needle``, in listing order."""
        text = self.text
        if text is None or "\n" in needle or "\x00" in needle:
            for position, record in enumerate(records):
                if field_match(record, self.titles.get(record.header.id), needle) is not None:
                    yield position
            return
        starts = self.starts
        at = text.find(needle)
        while at >= 0:
            line = bisect.bisect_right(starts, at) - 1
            yield line
            following = line + 1
            if following >= len(starts):
                return
            at = text.find(needle, starts[following])


def field_match(record: SessionRecord, title: str | None, needle: str) -> tuple[MatchField, tuple[int, int]] | None:
    header = record.header
    fields: list[tuple[MatchField, str | None]] = [("title", title), ("id", header.id), ("cwd", header.cwd)]
    for name, value in fields:
        if value:
            span = find_folded(value, needle)
            if span is not None:
                return name, span
    return None


def group_of(cwd: str | None, target_cwd: str | None) -> int:
    if cwd is None:
        return 1
    return 0 if cwd == target_cwd else 2


def candidate_of(header: Any, title: str | None) -> Candidate:
    return Candidate.model_construct(
        session_id=header.id,
        label=title if title is not None else header.id,
        cwd=header.cwd,
        created_at=header.created_at,
    )
