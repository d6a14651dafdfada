"""Finding a session by what the user sees or remembers: one search for the `@` picker, the sidebar,
the model's ``search_sessions``, ``sessionref mcp`` and ``sessionref search``.

``SessionReferenceService.list_candidates`` stays exactly the contract's (ids and cwds). This is the
extended search: ``SessionSearch.search`` takes a query in the search language (``search_query``),
scores every listed session by its words (BM25 over its projected conversation through a
``MessageIndex``, its title from memory counting more, ``ranking``), finds quoted phrases and
identifiers as typed (``substring``), and orders the sessions found in the contract's groups (this
cwd, no cwd, elsewhere), best first inside each, newest first among equals. Every hit says why it
matched and carries its best-matching messages (position, role, a snippet with the words marked).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from core.abort import AbortSignal
from core.errors import INVALID_REFERENCE, SessionReferenceError
from core.search import ranking
from core.search.fusion import MeaningStep
from core.search.index_values import INDEX_DISK_FULL, IndexStatus, IndexUnavailable
from core.search.listing_match import MatchField, candidate_of, field_match, group_of
from core.search.listing_memory import ListingMemory
from core.search.matching import MIN_BODY_QUERY, Snippet
from core.search.meaning import MEANING_BUDGET, MEANING_POOL, MEANING_WORDS
from core.search.message_index import MessageIndex
from core.search.ranking import PASSAGES, Passage, RankedWords, idf
from core.search.search_config import SearchConfig
from core.search.search_query import SearchQuery, parse_query, typed_stem
from core.search.search_result import BodyState, SearchHit, SearchResult
from core.search.substring import sessions_containing
from core.search.words import word_spans
from core.sessions.models import SessionRecord

__all__ = ["BodyState", "MatchField", "SearchConfig", "SearchHit", "SearchResult"]
FIRST_BUDGET = 0.006
"""Seconds a keystroke's search may spend verifying body matches before it answers with what it
has (``SearchResult.complete`` is then false and a host searches again with ``FULL_BUDGET``)."""
FULL_BUDGET = 0.5
"""Seconds a follow-up search may spend verifying body matches."""
HOLDERS_CHECKED = 3
"""A phrase or identifier most sessions may hold is checked in this many times a page's best scored."""
QUICK_BUDGET = 0.05
"""A budget below this (seconds) is a keystroke's first answer: an index may read less for it."""
QUICK_SNIPPETS = 4
"""The hits whose snippets a keystroke's first answer to one word reads: the picker's eight lines show
four hits and their snippets."""
SUBSTRING_SCORE = 0.5
"""The score of a session that holds a one-word query only inside a longer word."""


class SessionSearch:
    """The search every surface uses: words ranked, phrases and identifiers as typed, titles, ids
    and folders from memory, what was said through a message index.

    Args:
        index: the message index (``None``: titles, ids and folders only).
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
        self.listing = ListingMemory()

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
        typing: bool = False,
        passages: int = 1,
    ) -> SearchResult:
        """Sessions other than ``target`` matching ``query``, at most ``limit``, in picker order.

        ``records`` is the listing (newest first, as ``list_sessions`` returns it) and ``titles``
        the known title of each session (a session missing from it is labelled with its id and
        matched by id and cwd only). Hosts that pass the same two objects again reuse the
        in-memory search text built for them. Only sessions in ``records`` are ever returned,
        whatever the message index still holds. With an empty query every session is listed, in
        the order ``list_candidates`` gives. ``typing``: the query's last word is still being
        typed (the picker) and matches as a prefix. ``passages``: best-matching messages each hit
        carries at most. ``budget`` bounds the seconds spent reading messages (finding phrases
        and identifiers, making snippets); a result cut short by it says so (``complete``).

        Raises:
            SessionReferenceError: ``INVALID_REFERENCE`` for a bad limit, ``CANCELLED`` when
                ``signal`` aborts (checked between the steps of a message search).
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise SessionReferenceError("candidate limit must be a positive safe integer", INVALID_REFERENCE)
        parsed = parse_query(query or "", typing=typing)
        if parsed.empty and not parsed.text.strip():
            return self._everything(target, records, titles, limit)
        deadline = time.perf_counter() + budget
        body, status = self._body_state(parsed)
        run = _Run(self, target, parsed, records, titles, limit, signal, deadline)
        run.match_listing()
        if body in ("indexing", "ready"):
            try:
                run.match_messages()
                if budget >= QUICK_BUDGET:  # (a keystroke's first answer is words; its full answer follows)
                    run.match_meaning()
            except IndexUnavailable as problem:
                if signal is not None:
                    signal.throw_if_aborted()  # interrupted by a newer search, not broken
                body, status = "unavailable", IndexStatus("failed", code=problem.code, message=problem.message)
                run.forget_messages()
        hits = run.hits(passages if body in ("indexing", "ready") else 0)
        return SearchResult(hits=hits, body=body, status=status, complete=run.complete)

    def _everything(
        self, target: Any, records: Sequence[SessionRecord], titles: Mapping[str, str | None], limit: int
    ) -> SearchResult:
        groups: tuple[list[int], list[int], list[int]] = ([], [], [])
        for position, record in enumerate(records):
            if record.header.id != target.id:
                groups[group_of(record.header.cwd, target.cwd)].append(position)
                if len(groups[0]) >= limit:
                    break
        hits: list[SearchHit] = []
        for group in groups:
            for position in group[: limit - len(hits)]:
                header = records[position].header
                hits.append(SearchHit(candidate_of(header, titles.get(header.id))))
        body, status = self._body_state(SearchQuery(""))
        return SearchResult(hits=hits, body="short" if body in ("indexing", "ready") else body, status=status)

    def _body_state(self, query: SearchQuery) -> tuple[BodyState, IndexStatus | None]:
        if not self.config.body_search or self.index is None:
            return "off", None
        status = self.index.status
        if status.state == "failed" and status.code != INDEX_DISK_FULL:
            return "unavailable", status
        if query.empty or (len(query.text.strip()) < MIN_BODY_QUERY and not (query.terms or query.prefix)):
            return "short", status
        return ("ready" if status.complete else "indexing"), status


def _fresh(count: int) -> tuple[Any, Any, Any, Any]:
    """A search's arrays by listing position: scores, scored, said, every word (see ``_Run``)."""
    import numpy as np

    return np.zeros(count), np.zeros(count, bool), np.zeros(count, bool), np.zeros(count, bool)


class _Run:
    """One search: the scores of the listed sessions, built up from each kind of match."""

    def __init__(
        self,
        search: SessionSearch,
        target: Any,
        query: SearchQuery,
        records: Sequence[SessionRecord],
        titles: Mapping[str, str | None],
        limit: int,
        signal: AbortSignal | None,
        deadline: float,
    ) -> None:
        self.search, self.target, self.query = search, target, query
        self.records, self.titles, self.limit = records, titles, limit
        self.signal, self.deadline = signal, deadline
        self.budget = max(0.0, deadline - time.perf_counter())
        self.position_of = search.listing.position_map(records)
        self.own = self.position_of.get(target.id)
        self.scores, self.scored, self.said, self.every_word = _fresh(len(records))
        """By listing position: each session's score, whether it scored (whatever its score), whether
        the message index found a word of the query in it, whether it holds every word."""
        self.meta: set[int] = set()
        self.titled: set[int] = set()
        self.found: dict[int, Snippet] = {}  # a phrase's or identifier's newest message
        self.required: set[int] | None = None
        self.read: dict[int, tuple[Passage, ...]] = {}  # best messages already read (re-ranking)
        self.ranked: RankedWords | None = None
        self.meaning: MeaningStep | None = None  # what search by meaning adds, when it is on
        self.complete = True

    def add(self, position: int, score: float) -> None:
        self.scores[position] += score
        self.scored[position] = True

    def match_listing(self) -> None:
        """Titles, ids and folders, from memory: the whole query as typed, then the title's words."""
        query = self.query
        if query.text.strip():
            listing = self.search.listing
            groups = listing.groups(self.records, self.target.cwd)
            first_group = 0
            for position in listing.meta_index(self.records, self.titles).matching(self.records, query.text):
                self.meta.add(position)
                self.add(position, ranking.META_BONUS)
                if groups[position] == 0 and position != self.own:
                    first_group += 1
                    if first_group > self.limit:
                        break  # a page of this folder's title/id/folder matches, the newest: none later shows
        if query.terms or query.prefix:
            title_index = self.search.listing.title_index(self.records, self.titles)
            expanded = title_index.expand(query.prefix) if query.prefix else []
            stemmed = typed_stem(query.prefix) if query.prefix else None
            if stemmed is not None and stemmed not in expanded:
                expanded.append(stemmed)
            titled = title_index.scores(query.terms, expanded)
            self.titled.update(titled)
            self._add_many(titled.keys(), (ranking.TITLE_WEIGHT * score for score in titled.values()), len(titled))

    def match_messages(self) -> None:
        """What was said: ranked words, then phrases (required) and identifiers as typed."""
        index = self.search.index
        assert index is not None
        query = self.query
        if query.terms or query.prefix:
            quick = self.budget < QUICK_BUDGET
            self.ranked = index.rank(query, quick=quick, signal=self.signal)
            if quick:
                self.complete = False  # the full answer reads every session holding the words
            if self.signal is not None:
                self.signal.throw_if_aborted()
            self._add_words(self.ranked, max(self.ranked.wanted(query), 1))
        total = max(len(self.records), 1)
        for phrase in query.phrases:
            held = self._holders(phrase, self.required)
            self.required = set(held) if self.required is None else self.required & set(held)
            for position, snippet in held.items():
                self.found.setdefault(position, snippet)
                self.add(position, ranking.LITERAL_WEIGHT * idf(len(held), total))
        for literal in query.literals:
            held = self._holders(literal, self.required)
            for position, snippet in held.items():
                self.found.setdefault(position, snippet)
                self.add(position, ranking.LITERAL_WEIGHT * idf(len(held), total))
        typed = query.text.strip()
        others = int(self.scored.sum()) - (1 if self.own is not None and self.scored[self.own] else 0)
        long_enough = len(typed) >= (MIN_BODY_QUERY if typed.isascii() else 2)  # two CJK characters are a word
        if not query.needles and long_enough and len(typed.split()) == 1 and others < self.limit:
            # One word, too few sessions: also as typed inside longer words ("ueerr" in
            # "ValueError", "日志" in "日志在哪里"), ranked below the sessions that say the word itself.
            order = self._unscored()
            for position, snippet in self._containing(typed, order, self.limit - others).items():
                self.found.setdefault(position, snippet)
                self.add(position, SUBSTRING_SCORE)

    def _add_words(self, ranked: RankedWords, wanted: int) -> None:
        """Add the message index's word scores (thousands of sessions: as arrays), a session's
        scaled by the share of the query's words it holds, to the power ``COVERAGE_POWER``."""
        import numpy as np

        for part in ranked.found:
            positions = self.search.listing.positions(self.records, part)
            listed = positions >= 0  # (indexed but no longer listed: never offered)
            positions, scores, held = positions[listed], part.scores[listed], part.covered[listed]
            whole = held >= wanted
            scores = np.where(whole, scores, scores * (np.minimum(held, wanted) / wanted) ** ranking.COVERAGE_POWER)
            np.add.at(self.scores, positions, scores)
            self.scored[positions] = True
            self.said[positions] = True
            self.every_word[positions[whole]] = True

    def _add_many(self, positions: Iterable[int], scores: Iterable[float], count: int) -> None:
        import numpy as np

        at = np.fromiter(positions, np.int64, count)
        np.add.at(self.scores, at, np.fromiter(scores, np.float64, count))
        self.scored[at] = True

    def _by_score(self) -> list[int]:
        """The positions that scored, best first (the newest among equals)."""
        import numpy as np

        positions = np.flatnonzero(self.scored)
        best: list[int] = positions[np.lexsort((positions, -self.scores[positions]))].tolist()
        return best

    def _unscored(self) -> list[int]:
        import numpy as np

        unscored: list[int] = np.flatnonzero(~self.scored).tolist()
        return unscored

    def match_meaning(self) -> None:
        """The query's vector, when the index keeps vectors and the query is words enough to mean
        something (``MEANING_WORDS``; one word or an identifier is looked up as typed)."""
        index = self.search.index
        meaning = index.meaning if index is not None else None
        text = self.query.text.strip()
        if meaning is not None and len(self.query.terms) >= MEANING_WORDS and not self.query.phrases:
            began = time.perf_counter()
            question = meaning.ask(text)
            self.deadline += time.perf_counter() - began  # (the budget is for reading messages)
            if question is not None:
                self.meaning = MeaningStep(meaning, question, lambda position: self.records[position].header.id)

    def _holders(self, needle: str, among: set[int] | None) -> dict[int, Snippet]:
        """The sessions holding ``needle`` as typed, best scored first: every one when the substring
        index narrows it down, else as many as a page of results needs (the best scored checked)."""
        order = self._by_score() + self._unscored()
        if among is not None:
            order = [position for position in order if position in among]
        return self._containing(needle, order, HOLDERS_CHECKED * self.limit)

    def _containing(self, needle: str, order: Sequence[int], wanted: int) -> dict[int, Snippet]:
        index = self.search.index
        assert index is not None
        held = sessions_containing(
            index,
            needle,
            self.records,
            self.position_of,
            order=order,
            skip={self.target.id},
            wanted=wanted,
            deadline=self.deadline,
            signal=self.signal,
        )
        if not held.complete:
            self.complete = False
        return held.found

    def forget_messages(self) -> None:
        self.ranked = None
        self.scores, self.scored, self.said, self.every_word = _fresh(len(self.records))
        self.found.clear()
        self.required = None
        self.meta.clear()
        self.titled.clear()
        self.match_listing()

    def hits(self, passages: int) -> list[SearchHit]:
        """The best ``limit`` sessions in the contract's groups, each with what matched."""
        groups = self.search.listing.groups(self.records, self.target.cwd)
        meaning = self.meaning
        ordered = self._best(max(self.limit, ranking.RERANKED, MEANING_POOL if meaning else 0))
        ordered = self._reranked(ordered)
        if meaning is not None:
            began = time.perf_counter()
            ordered = meaning.fused(ordered)
            if len(ordered) < self.limit and self.required is None:
                taken = {position for _key, _negative, position in ordered}
                among = {r.header.id for p, r in enumerate(self.records) if p not in taken and p != self.own}
                ordered, complete = meaning.filled(
                    ordered, self.limit - len(ordered), among, self.position_of.get, groups, began + MEANING_BUDGET
                )
                self.complete = self.complete and complete
            self.deadline += time.perf_counter() - began  # meaning has its own budget; snippets keep theirs
        if passages:
            self._read([position for _group, _negative, position in ordered[: min(self.limit, self._reads())]])
        hits: list[SearchHit] = []
        for rank, (_group, negative, position) in enumerate(ordered[: self.limit]):
            if self.signal is not None:
                self.signal.throw_if_aborted()
            # The best messages are read for the sessions re-ranked by them; below, what was found
            # as typed (a phrase, an identifier) or nothing: a page of results never reads 50 sessions.
            hits.append(self._hit(position, -negative, passages, read=rank < self._reads()))
        return hits

    def _best(self, count: int) -> list[tuple[int, float, int]]:
        """The ``count`` best sessions in the contract's groups, as ordering keys: inside a group,
        the query found whole in a title, id or folder first, then the sessions holding every word,
        then the rest; best first, newest first among equals."""
        import numpy as np

        positions = np.flatnonzero(self.scored)
        if self.own is not None:
            positions = positions[positions != self.own]
        if self.required is not None:
            positions = positions[np.isin(positions, np.fromiter(self.required, np.int64, len(self.required)))]
        tier = np.ones(len(positions), np.int64)
        if ranking.ALL_WORDS_FIRST and self.every_word.any():
            tier[~self.every_word[positions]] = 2
        if self.meta:
            tier[np.isin(positions, np.fromiter(self.meta, np.int64, len(self.meta)))] = 0
        keys = 3 * self.search.listing.group_array(self.records, self.target.cwd)[positions] + tier
        negatives = -self.scores[positions]
        chosen = np.lexsort((positions, negatives, keys))[:count]
        return list(zip(keys[chosen].tolist(), negatives[chosen].tolist(), positions[chosen].tolist(), strict=True))

    def _reranked(self, ordered: list[tuple[int, float, int]]) -> list[tuple[int, float, int]]:
        """The first ``RERANKED`` sessions scored again with their best message's own score."""
        if self.ranked is None or self.search.index is None:
            return ordered
        if self._words() < 2:
            return ordered  # one word: its best message cannot hold it any better than the session does
        head = ordered[: ranking.RERANKED]
        self._read([position for _group, _negative, position in head])
        again: list[tuple[int, float, int]] = []
        for group, negative, position in head:
            best = self.read[position]
            bonus = ranking.PASSAGE_WEIGHT * best[0].score if best else 0.0
            again.append((group, negative - bonus, position))
        return sorted(again) + ordered[len(head) :]

    def _words(self) -> int:
        """How many words the query asks for (the word being typed counts once)."""
        return len(self.query.terms) + (1 if self.query.prefix else 0) + len(self.query.needles)

    def _reads(self) -> int:
        """How many of the best sessions have their best messages read for their snippets (a
        keystroke's first answer to one word: those a picker shows before it scrolls; the full
        answer follows once typing pauses)."""
        if self._words() >= 2:
            return ranking.RERANKED
        return QUICK_SNIPPETS if self.budget < QUICK_BUDGET else ranking.SNIPPETS_OF_ONE_WORD

    def _hit(self, position: int, score: float, passages: int, *, read: bool) -> SearchHit:
        header = self.records[position].header
        title = self.titles.get(header.id)
        candidate = candidate_of(header, title)
        snippets: tuple[Snippet, ...] = ()
        if passages and read and (self.said[position] or position in self.found):
            snippets = self._snippets(position, passages)
        elif passages and position in self.found:
            snippets = (self.found[position],)
        elif passages and self.meaning is not None and position in self.meaning.found:
            snippets = self.meaning.snippet(header.id, position)
        marks: tuple[tuple[int, int], ...] = ()
        if position in self.titled or position in self.meta:
            marks = tuple(word_spans(candidate.label, self.query.words, self.query.prefix))
        field = field_match(self.records[position], title, self.query.text) if position in self.meta else None
        if field is not None:
            return SearchHit(candidate, field[0], field[1], snippets[0] if snippets else None, snippets, score, marks)
        if position in self.titled and (marks or not snippets):
            span = marks[0] if marks else None
            return SearchHit(candidate, "title", span, snippets[0] if snippets else None, snippets, score, marks)
        return SearchHit(candidate, "body", None, snippets[0] if snippets else None, snippets, score, marks)

    def _read(self, positions: Sequence[int]) -> None:
        """Read the best messages of these sessions, in order, until the budget runs out; each is
        kept for its hit."""
        index = self.search.index
        assert index is not None
        for position in positions:
            if position in self.read:
                continue
            found: tuple[Passage, ...] = ()
            if self.ranked is not None and self.said[position]:
                if self.signal is not None:
                    self.signal.throw_if_aborted()  # a newer keystroke: stop between sessions
                if time.perf_counter() < self.deadline:
                    with contextlib.suppress(IndexUnavailable):
                        session_id = self.records[position].header.id
                        found = tuple(index.passages(session_id, self.query, self.ranked, PASSAGES))
                else:
                    self.complete = False  # the budget ran out first
            self.read[position] = found

    def _snippets(self, position: int, count: int) -> tuple[Snippet, ...]:
        """Up to ``count`` snippets of the session's best-matching messages."""
        prefix_terms = self.ranked.prefix_terms if self.ranked is not None else ()
        snippets = []
        if position not in self.read:
            self._read([position])
        for passage in self.read[position][:count]:
            snippet = passage.snippet(self.query, prefix_terms)
            if snippet is not None:
                snippets.append(snippet)
        if not snippets and position in self.found:
            snippets.append(self.found[position])
        return tuple(snippets)
