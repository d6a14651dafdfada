"""Finding a session by what the user sees or remembers: titles, ids, cwds and message bodies.

``SessionReferenceService.list_candidates`` stays exactly the contract's (ids and cwds). This is the
extended search the app's `@` picker uses: ``SessionSearch.search`` matches the title, the id and
the cwd case-insensitively (from memory), then the message bodies through a ``MessageIndex``, and
orders the hits in the contract's groups (this cwd, no cwd, elsewhere); inside a group, title/id/cwd
matches come before body-only matches, each in listing order. Every hit says why it matched.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from core.abort import AbortSignal
from core.errors import INVALID_CONFIG, INVALID_REFERENCE, SessionReferenceError
from core.search.index_values import INDEX_DISK_FULL, IndexStatus, IndexUnavailable
from core.search.matching import MIN_BODY_QUERY, Snippet, find_folded, fold
from core.search.message_index import MessageIndex
from core.sessions.models import Candidate, SessionRecord

MatchField = Literal["title", "id", "cwd", "body"]
BodyState = Literal["off", "short", "indexing", "ready", "unavailable"]
FIRST_BUDGET = 0.006
"""Seconds a keystroke's search may spend verifying body matches before it answers with what it
has (``SearchResult.complete`` is then false and a host searches again with ``FULL_BUDGET``)."""
FULL_BUDGET = 0.5
"""Seconds a follow-up search may spend verifying body matches."""


class SearchConfig(BaseModel):
    """Settings of ``SessionSearch``: ``bodySearch`` (``body_search``) turns message search on or off.

    Raises:
        SessionReferenceError: ``SESSION_REFERENCE_INVALID_CONFIG`` naming the offending key.
    """

    model_config = ConfigDict(frozen=True)

    body_search: bool = True

    @model_validator(mode="before")
    @classmethod
    def _check(cls, raw: Any) -> Any:
        if not isinstance(raw, Mapping):
            raise SessionReferenceError("search: config must be a mapping", INVALID_CONFIG)
        values: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in ("body_search", "bodySearch"):
                raise SessionReferenceError(f"search: unknown config key {key!r}", INVALID_CONFIG)
            if value is None:
                continue
            if not isinstance(value, bool):
                raise SessionReferenceError("search: bodySearch must be true or false", INVALID_CONFIG)
            values["body_search"] = value
        return values


# -- results ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One session the picker lists and why.

    ``field`` is what matched (``None`` for an empty query); for ``"title"``, ``"id"`` and ``"cwd"``,
    ``span`` is the match inside that field's text; for ``"body"``, ``snippet`` shows it.
    """

    candidate: Candidate
    field: MatchField | None = None
    span: tuple[int, int] | None = None
    snippet: Snippet | None = None


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What ``SessionSearch.search`` found.

    ``body`` says what the message search did: ``"off"`` (switched off or no index), ``"short"``
    (the query has fewer than ``MIN_BODY_QUERY`` characters), ``"indexing"`` (searched what is
    indexed so far), ``"ready"`` or ``"unavailable"`` (the index failed; ``status`` says why).
    """

    hits: list[SearchHit]
    body: BodyState
    status: IndexStatus | None = None
    complete: bool = True
    """False when the verification budget ran out before the list was full: more body matches may
    exist (search again with a larger ``budget``)."""


class _MetaIndex:
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
                if _field_match(record, self.titles.get(record.header.id), needle) is not None:
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


def _field_match(record: SessionRecord, title: str | None, needle: str) -> tuple[MatchField, tuple[int, int]] | None:
    header = record.header
    fields: list[tuple[MatchField, str | None]] = [("title", title), ("id", header.id), ("cwd", header.cwd)]
    for name, value in fields:
        if value:
            span = find_folded(value, needle)
            if span is not None:
                return name, span
    return None


def _group(cwd: str | None, target_cwd: str | None) -> int:
    if cwd is None:
        return 1
    return 0 if cwd == target_cwd else 2


class SessionSearch:
    """The `@` picker's search: titles, ids and cwds from memory, then message bodies.

    Args:
        index: the body index (``None``: titles, ids and cwds only).
        config: a ``SearchConfig`` or a mapping of its keys.

    Raises:
        SessionReferenceError: ``SESSION_REFERENCE_INVALID_CONFIG`` for a bad config.
    """

    def __init__(
        self, index: MessageIndex | None = None, config: SearchConfig | Mapping[str, Any] | None = None
    ) -> None:
        self.index = index
        if config is None:
            config = SearchConfig()
        elif not isinstance(config, SearchConfig):
            config = SearchConfig.model_validate(config)
        self.config = config
        self._meta: tuple[Sequence[SessionRecord], Mapping[str, str | None], _MetaIndex] | None = None
        self._groups: tuple[Sequence[SessionRecord], str | None, tuple[list[int], list[int], list[int]]] | None = None
        self._positions: tuple[Sequence[SessionRecord], dict[str, int]] | None = None

    def search(
        self,
        target: Any,
        query: str,
        *,
        records: Sequence[SessionRecord],
        titles: Mapping[str, str | None],
        limit: int,
        signal: AbortSignal | None = None,
        budget: float = FULL_BUDGET,
    ) -> SearchResult:
        """Sessions other than ``target`` matching ``query``, at most ``limit``, in picker order.

        ``records`` is the listing (newest first, as ``list_sessions`` returns it) and ``titles``
        the known title of each session (a session missing from it is labelled with its id and
        matched by id and cwd only). Hosts that pass the same two objects again reuse the
        in-memory search text built for them. Only sessions in ``records`` are ever returned,
        whatever the body index still holds. With an empty query every session is listed, in the
        order ``list_candidates`` gives. ``budget`` bounds the seconds spent verifying body matches;
        a result cut short by it says so (``complete``) and holds the best matches found so far,
        in order.

        Raises:
            SessionReferenceError: ``INVALID_REFERENCE`` for a bad limit, ``CANCELLED`` when
                ``signal`` aborts (checked between the steps of a body search).
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise SessionReferenceError("candidate limit must be a positive safe integer", INVALID_REFERENCE)
        needle = fold(query or "")
        target_id, target_cwd = target.id, target.cwd
        meta: tuple[list[int], list[int], list[int]] = ([], [], [])
        matched: set[str] = {target_id}  # never offered as a body match either
        positions: Iterable[int] = (
            self._meta_index(records, titles).matching(records, needle) if needle else range(len(records))
        )
        for position in positions:
            header = records[position].header
            if header.id == target_id:
                continue
            meta[_group(header.cwd, target_cwd)].append(position)
            matched.add(header.id)
            if len(meta[0]) >= limit:
                break  # nothing later can enter
        body, status = self._body_state(needle)
        found: list[list[tuple[int, Snippet]]] = [[], [], []]
        complete = True
        if body in ("indexing", "ready") and len(meta[0]) < limit:
            try:
                found, complete = self._bodies(needle, meta, matched, records, target_cwd, limit, signal, budget)
            except IndexUnavailable as problem:
                if signal is not None:
                    signal.throw_if_aborted()  # interrupted by a newer search, not broken
                body, status = "unavailable", IndexStatus("failed", code=problem.code, message=problem.message)
                found = [[], [], []]
        hits: list[SearchHit] = []
        for group in range(3):
            for position in meta[group]:
                if len(hits) >= limit:
                    break
                header = records[position].header
                title = titles.get(header.id)
                field = _field_match(records[position], title, needle) if needle else None
                if field is None:
                    hits.append(SearchHit(_candidate(header, title)))
                else:
                    hits.append(SearchHit(_candidate(header, title), field[0], field[1]))
            for position, snippet in found[group]:
                if len(hits) >= limit:
                    break
                header = records[position].header
                hits.append(SearchHit(_candidate(header, titles.get(header.id)), "body", None, snippet))
        return SearchResult(hits=hits, body=body, status=status, complete=complete)

    def _body_state(self, needle: str) -> tuple[BodyState, IndexStatus | None]:
        if not self.config.body_search or self.index is None:
            return "off", None
        status = self.index.status
        if status.state == "failed" and status.code != INDEX_DISK_FULL:
            return "unavailable", status
        if len(needle) < MIN_BODY_QUERY:
            return "short", status
        return ("ready" if status.complete else "indexing"), status

    def _bodies(
        self,
        needle: str,
        meta: tuple[list[int], list[int], list[int]],
        matched: set[str],
        records: Sequence[SessionRecord],
        target_cwd: str | None,
        limit: int,
        signal: AbortSignal | None,
        budget: float,
    ) -> tuple[list[list[tuple[int, Snippet]]], bool]:
        """Verified body matches per group, in listing order, as many as can still be shown, and
        whether the search got through (not stopped by ``budget``)."""
        index = self.index
        assert index is not None
        candidates = index.candidates(needle, budget=budget)
        if signal is not None:
            signal.throw_if_aborted()
        if candidates is not None and not candidates:
            return [[], [], []], True
        position_of = self._position_map(records)
        ordered: tuple[list[int], list[int], list[int]]
        if candidates is None:
            # Dense: most chunks may match; walk each group in listing order reading the sessions.
            ordered = self._group_positions(records, target_cwd)
        else:
            ordered = ([], [], [])
            for session_id in candidates:
                position = position_of.get(session_id)
                if position is not None:  # indexed but no longer listed: never offered
                    ordered[_group(records[position].header.cwd, target_cwd)].append(position)
            for members in ordered:
                members.sort()
        found: list[list[tuple[int, Snippet]]] = [[], [], []]
        shown = 0
        deadline = time.perf_counter() + budget
        complete = True
        for group in range(3):
            shown += len(meta[group])
            for position in ordered[group]:
                if shown >= limit:
                    break
                if time.perf_counter() > deadline:
                    complete = False
                    break
                session_id = records[position].header.id
                if session_id in matched:
                    continue
                if signal is not None:
                    signal.throw_if_aborted()
                if candidates is not None:
                    snippet = index.verify(session_id, candidates[session_id], needle)
                else:
                    snippet = index.scan(session_id, needle)
                if snippet is not None:
                    found[group].append((position, snippet))
                    shown += 1
            if shown >= limit or not complete:
                break
        return found, complete

    def _meta_index(self, records: Sequence[SessionRecord], titles: Mapping[str, str | None]) -> _MetaIndex:
        cached = self._meta
        if cached is None or cached[0] is not records or cached[1] is not titles:
            cached = self._meta = (records, titles, _MetaIndex(records, titles))
        return cached[2]

    def _position_map(self, records: Sequence[SessionRecord]) -> dict[str, int]:
        cached = self._positions
        if cached is None or cached[0] is not records:
            cached = self._positions = (records, {record.header.id: i for i, record in enumerate(records)})
        return cached[1]

    def _group_positions(
        self, records: Sequence[SessionRecord], target_cwd: str | None
    ) -> tuple[list[int], list[int], list[int]]:
        cached = self._groups
        if cached is None or cached[0] is not records or cached[1] != target_cwd:
            groups: tuple[list[int], list[int], list[int]] = ([], [], [])
            for position, record in enumerate(records):
                groups[_group(record.header.cwd, target_cwd)].append(position)
            cached = self._groups = (records, target_cwd, groups)
        return cached[2]


def _candidate(header: Any, title: str | None) -> Candidate:
    return Candidate.model_construct(
        session_id=header.id,
        label=title if title is not None else header.id,
        cwd=header.cwd,
        created_at=header.created_at,
    )
