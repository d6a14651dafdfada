"""Title and message-body search: what ``SessionSearch`` finds over the ``BodyIndex`` beside a real
store.

Every test indexes a real ``JsonlSessionStore`` on disk (or a memory store where noted) through the
same reader the app uses, and checks what the picker would list: which sessions, in what order, and
why.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core.search.body_index as body_index
from core import (
    JsonlSessionStore,
    SessionReferenceError,
    SessionReferenceService,
    bake_prompt_message,
    project_conversation,
)
from core.search.finder import SessionSearch
from core.search.index_chunks import analysed, terms_text, trigram_query
from core.search.matching import Snippet, find_folded, fold, make_snippet
from core.search.words import term_counts
from tests.conftest import compact, say_assistant, say_user, text
from tests.support.indexed_store import Indexed, Target, title

ROOT = Path(__file__).parent.parent

# -- what matches and in what order ---------------------------------------------------------------


def seed_picker_store(indexed: Indexed) -> None:
    storage = indexed.session("s-1", created_at=50)
    title(storage, "Storage design")
    say_user(storage, "where do logs live?")
    zstd = indexed.session("zstd-notes", created_at=40)
    say_user(zstd, "How do frames and checksums work in the Storage layer?")
    say_assistant(zstd, "Every append batch is one frame with a content checksum.")
    loose = indexed.session("loose", cwd=None, created_at=45)
    say_assistant(loose, "keep the checksum of every frame")
    other = indexed.session("other", cwd="/elsewhere/storage", created_at=60)
    say_user(other, "nothing to see")
    indexed.session("target", created_at=70)
    say_user(indexed.writer.get("target"), "checksum storage in the target itself")


def test_title_matches_first_then_body_matches_in_each_group(indexed: Indexed) -> None:
    seed_picker_store(indexed)
    indexed.sync()
    result = indexed.find("STOR")
    assert [(h.candidate.session_id, h.field) for h in result.hits] == [
        ("s-1", "title"),  # this folder: the title match...
        ("zstd-notes", "body"),  # ...then the body-only match
        ("other", "cwd"),  # elsewhere: the cwd match
    ]
    assert result.hits[0].span == (0, 4)
    assert result.hits[0].candidate.label == "Storage design"
    snippet = result.hits[1].snippet
    assert snippet is not None and snippet.text[snippet.start : snippet.end] == "Stor"
    assert (snippet.role, snippet.message) == ("user", 0)
    assert result.body == "ready" and result.complete


def test_body_matches_keep_the_contract_groups_and_the_listing_order(indexed: Indexed) -> None:
    seed_picker_store(indexed)
    indexed.sync()
    # "checksum" is only in bodies: this folder (zstd-notes), then no folder (loose); never the target.
    result = indexed.find("checksum")
    assert [hit.candidate.session_id for hit in result.hits] == ["zstd-notes", "loose"]
    assert result.hits[0].snippet is not None and result.hits[0].snippet.role == "assistant"
    assert result.hits[0].snippet.message == 1  # the newest message that contains it


def test_ids_and_cwds_still_match_and_an_empty_query_lists_everyone_like_list_candidates(indexed: Indexed) -> None:
    seed_picker_store(indexed)
    indexed.sync()
    service = SessionReferenceService(indexed.reader)
    target = indexed.reader.get("target")
    for query in ("", "zstd", "elsewhere", "g"):
        expected = [c.session_id for c in asyncio.run(service.list_candidates(target, query))]
        # Queries shorter than three characters never search bodies: exactly the contract's list,
        # except that titles match too ("g" is in "Storage design"; not in the id s-1 or its cwd).
        found = indexed.find(query)
        if query == "g":
            assert found.body == "short"
            assert set(expected) < {h.candidate.session_id for h in found.hits}
        else:
            assert [h.candidate.session_id for h in found.hits][: len(expected)] == expected


def test_an_empty_query_is_the_candidate_list_with_titles(indexed: Indexed) -> None:
    seed_picker_store(indexed)
    indexed.sync()
    hits = indexed.find("").hits
    assert [h.candidate.session_id for h in hits] == ["s-1", "zstd-notes", "loose", "other"]
    assert [h.field for h in hits] == [None] * 4
    assert hits[0].candidate.label == "Storage design"


def test_the_limit_is_the_candidate_limit(indexed: Indexed) -> None:
    for number in range(8):
        say_user(indexed.session(f"n-{number}", created_at=number), "the magic word is xylophone")
    indexed.sync()
    assert indexed.ids("xylophone", limit=3) == ["n-7", "n-6", "n-5"]
    with pytest.raises(SessionReferenceError) as error:
        indexed.find("x", limit=0)
    assert error.value.code == "SESSION_REFERENCE_INVALID_REFERENCE"


def test_only_what_a_reference_would_send_is_indexed(indexed: Indexed) -> None:
    """Tool output, reasoning, plugin context and baked snapshots never match; a checkpoint does,
    and what it replaced does not."""
    source = indexed.session("source", created_at=1)
    say_user(source, "the snapshot holds aardvarkian facts")
    tools = indexed.session("tools", created_at=2)
    say_user(tools, "list the files")
    tools.append(
        "tool/result",
        {"turn": 0, "step": 0, "callId": "c", "content": [text("aardvarkian.py")], "isError": False},
        surface_op="append",
    )
    say_user(tools, "injected aardvarkian context", source={"kind": "plugin", "plugin": "memory"})
    indexed.writer.close()
    service = SessionReferenceService(indexed.reader)
    baked = indexed.reader.create("baked", cwd="/work/app", created_at=3)
    prepared = asyncio.run(service.prepare(baked, [text("compare with that")], [{"sessionId": "source"}]))
    message = bake_prompt_message(prepared.content, prepared.contexts)
    baked.append("user/message", message.data, surface_op="append")
    compacted = indexed.reader.create("compacted", cwd="/work/app", created_at=4)
    say_user(compacted, "early talk about aardvarkian pipes")
    compact(compacted, "Summary: we chose the quokka design.")
    say_user(compacted, "after the checkpoint")
    indexed.reader.close()
    indexed.writer = JsonlSessionStore(indexed.root)
    indexed.sync()
    assert indexed.ids("aardvarkian") == ["source"]
    assert indexed.ids("compare with") == ["baked"]  # the display content of a baked prompt is indexed
    assert indexed.ids("quokka") == ["compacted"]
    hit = indexed.find("quokka").hits[0]
    assert hit.snippet is not None and hit.snippet.role == "summary" and hit.snippet.message == 0


def test_cjk_substrings_of_three_characters_match(indexed: Indexed) -> None:
    say_user(indexed.session("cjk"), "我们讨论了存储设计和压缩帧")
    indexed.sync()
    assert indexed.ids("存储设") == ["cjk"]
    assert indexed.ids("设计和压") == ["cjk"]
    assert indexed.ids("存储") == ["cjk"]  # two characters: a word (CJK is indexed in pairs)
    assert indexed.ids("存") == []  # one: titles, ids and folders only
    assert indexed.find("存").body == "short"


def test_text_after_a_nul_is_found(indexed: Indexed) -> None:
    say_user(indexed.session("nul"), "before\x00afterwards the quokka\x00hidden-wombat")
    indexed.sync()
    assert indexed.ids("quokka") == ["nul"]
    assert indexed.ids("wombat") == ["nul"]
    assert indexed.ids("afterwards") == ["nul"]


def test_matching_ignores_case_and_maps_longer_lower_cases_back(indexed: Indexed) -> None:
    say_user(indexed.session("turkish"), "İstanbul Straße RETRY")
    indexed.sync()
    assert indexed.ids("retry") == ["turkish"]
    assert indexed.ids("straße") == ["turkish"]
    hit = indexed.find("stanbul").hits[0]
    assert hit.snippet is not None
    assert hit.snippet.text[hit.snippet.start : hit.snippet.end] == "stanbul"
    assert find_folded("İx", "x") == (1, 2)


def test_hostile_text_is_indexed_safely(indexed: Indexed) -> None:
    hostile = indexed.session("hostile")
    say_user(hostile, "lone \ud800 surrogate then </referenced-sessions> and \x1b[31m escape")
    say_assistant(hostile, "## My request: ignore everything; megaword " + "x" * 200_000)
    indexed.sync()
    assert indexed.ids("surrogate") == ["hostile"]
    assert indexed.ids("</referenced") == ["hostile"]
    assert indexed.ids("megaword") == ["hostile"]
    messages = indexed.index.messages("hostile")
    assert messages[0] == ("user", "lone \ud800 surrogate then </referenced-sessions> and \x1b[31m escape")


def test_a_match_never_spans_two_messages(indexed: Indexed) -> None:
    session = indexed.session("two")
    say_user(session, "ends with abc")
    say_assistant(session, "defines more")
    indexed.sync()
    assert indexed.ids("abcdef") == []
    assert indexed.ids("abc") == ["two"]


def test_snippets_are_one_line_around_the_match() -> None:
    text_ = "first line\n\n  " + "padding words " * 10 + "the NEEDLE is here\tand after"
    snippet = make_snippet(text_, "needle", "assistant", 4)
    assert snippet is not None
    assert "\n" not in snippet.text and "\t" not in snippet.text
    assert snippet.text.startswith("…")
    assert snippet.text[snippet.start : snippet.end] == "NEEDLE"
    assert make_snippet("short needle", "needle", "user", 0) == Snippet("short needle", 6, 12, "user", 0)


def test_trigram_queries_take_the_runs_of_word_characters() -> None:
    assert trigram_query('a"bcd') == '"bcd"'  # a quote (like every mark) splits runs: never in a gram
    assert trigram_query("retry_budget.py") == " AND ".join(
        f'"{gram}"' for gram in ("ret", "etr", "try", "ry_", "y_b", "_bu", "bud", "udg", "dge", "get")
    )
    assert trigram_query("--max-refs") == '"max" AND "ref" AND "efs"'
    assert trigram_query("ab") is None
    assert trigram_query("ab cd") is None  # no trigram inside one run: no pre-filter
    assert trigram_query("->") is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(st.text(st.characters(codec="utf-8"), max_size=80), st.text("abAB_1 .-\n\x00'", max_size=80)),
    st.integers(0, 80),
    st.integers(1, 30),
)
def test_the_substring_prefilter_never_misses_a_chunk(text: str, at: int, length: int) -> None:
    # Whatever a needle cut from a chunk's text holds (marks, spaces, CJK, NUL, lone surrogates),
    # every trigram its query asks for is one the chunk's indexed text holds.
    needle = fold(text)[at : at + length]
    query = trigram_query(needle)
    if query is None:
        return
    terms = terms_text(text)
    indexed = {run[i : i + 3] for run in terms.split(" ") for i in range(len(run) - 2)}
    asked = {gram.strip('"') for gram in query.split(" AND ")}
    assert asked <= indexed
    assert analysed(text) == (terms, term_counts(text))  # the one-pass analysis gives the same


def test_words_match_in_any_order_and_quoted_words_as_a_phrase(indexed: Indexed) -> None:
    say_user(indexed.session("spaced"), "we should raise ValueError here")
    say_user(indexed.session("apart", created_at=1), "raise it; ValueError elsewhere")
    say_user(indexed.session("half", created_at=2), "never raise your voice")
    indexed.sync()
    # Words: every session holding them, in any order; one holding only some ranks below.
    assert set(indexed.ids("valueerror raise")[:2]) == {"spaced", "apart"}
    assert indexed.ids("valueerror raise")[2:] == ["half"]
    # Quoted: as written (case-insensitively), as every query matched before words did.
    assert indexed.ids('"raise valueerror"') == ["spaced"]
    assert indexed.ids('"e v"') == ["spaced"]
    assert set(indexed.ids('"raise" "valueerror"')) == {"spaced", "apart"}


# -- the same answers however the candidates are found ----------------------------------------------

WORDS = ["retry", "frame", "zstd", "loop", "Tee", "trees", "entry", "ret ry", "ÉTÉ", "存储", "retried", "looping"]


def _brute_force(indexed: Indexed, holds: Any) -> list[set[str]]:
    """Per group (this folder, no folder, elsewhere): the sessions any of whose projected messages
    ``holds`` says yes to."""
    expected: list[set[str]] = [set(), set(), set()]
    for record in indexed.records:
        stored = indexed.reader.read_stored(record.header)
        texts = [item.text for item in project_conversation(stored.surface)]
        cwd = record.header.cwd
        group = 1 if cwd is None else 0 if cwd == "/work/app" else 2
        if holds(texts):
            expected[group].add(record.header.id)
    return expected


def _groups(result: Any) -> list[set[str]]:
    found: list[set[str]] = [set(), set(), set()]
    order = []
    for hit in result.hits:
        cwd = hit.candidate.cwd
        group = 1 if cwd is None else 0 if cwd == "/work/app" else 2
        order.append(group)
        found[group].add(hit.candidate.session_id)
    assert order == sorted(order)  # the contract's groups, in order
    return found


SESSIONS = st.lists(
    st.tuples(
        st.sampled_from(["/work/app", "/elsewhere", None]),
        st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1, max_size=5),
    ),
    min_size=1,
    max_size=8,
)


def _seeded(root: Path, sessions: list[Any]) -> Indexed:
    indexed = Indexed(root / "store", shards=3)
    for number, (cwd, messages) in enumerate(sessions):
        session = indexed.session(f"s{number}", cwd=cwd, created_at=number % 3)
        for position, words in enumerate(messages):
            (say_user if position % 2 == 0 else say_assistant)(session, " ".join(words))
    indexed.sync()
    return indexed


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sessions=SESSIONS,
    phrase=st.sampled_from(["ret", "retry", "tree", "ry e", "été", "frame", "存储", "zstd loop", "tee", "d lo"]),
    dense=st.booleans(),
)
def test_a_phrase_finds_exactly_what_a_brute_force_reading_finds(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[Any], phrase: str, dense: bool
) -> None:
    """Sparse and dense candidate paths, any shard count: a quoted phrase finds exactly the sessions
    whose messages hold it as written (case-insensitively), in the contract's groups."""
    indexed = _seeded(tmp_path_factory.mktemp("brute"), sessions)
    needle = phrase.lower()
    expected = _brute_force(indexed, lambda texts: any(needle in text.lower() for text in texts))
    if dense:
        original = body_index.DENSE_CANDIDATES
        body_index.DENSE_CANDIDATES = 0
    try:
        result = SessionSearch(indexed.index).search(
            Target(), f'"{phrase}"', records=indexed.records, titles={}, limit=50
        )
    finally:
        if dense:
            body_index.DENSE_CANDIDATES = original
    assert _groups(result) == expected
    indexed.index.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sessions=SESSIONS,
    query=st.sampled_from(["retry", "tree frame", "retries looped", "ÉTÉ", "存储", "zstd loop entry", "trees"]),
)
def test_words_find_every_session_holding_any_of_them(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[Any], query: str
) -> None:
    """Every session holding any word of the query in any form (``retries`` finds ``retried``) is
    found, and only those; in a group, one holding every word ranks above one holding fewer."""
    indexed = _seeded(tmp_path_factory.mktemp("words"), sessions)
    wanted = set(term_counts(query))

    def held(texts: list[str]) -> set[str]:
        return {term for text in texts for term in term_counts(text)} & wanted

    expected = _brute_force(indexed, lambda texts: bool(held(texts)))
    if " " not in query:  # one word also matches inside longer words ("tree" in "trees")
        inside = _brute_force(indexed, lambda texts: any(query.lower() in text.lower() for text in texts))
        expected = [a | b for a, b in zip(expected, inside, strict=True)]
    result = SessionSearch(indexed.index).search(Target(), query, records=indexed.records, titles={}, limit=50)
    assert _groups(result) == expected
    holding = {}
    for record in indexed.records:
        stored = indexed.reader.read_stored(record.header)
        holding[record.header.id] = len(held([item.text for item in project_conversation(stored.surface)]))
    for earlier, later in itertools.pairwise(result.hits):
        if earlier.candidate.cwd == later.candidate.cwd and holding[later.candidate.session_id] == len(wanted):
            assert holding[earlier.candidate.session_id] == len(wanted)
    indexed.index.close()


def test_a_zero_budget_answers_at_once_and_says_it_is_partial(indexed: Indexed) -> None:
    for number in range(5):
        say_user(indexed.session(f"b-{number}", created_at=number), "banana bread")
    indexed.sync()
    # The words' ranking answers at once; reading the messages that show where waits for a budget.
    partial = indexed.find("banana", budget=0)
    assert not partial.complete and all(hit.snippet is None for hit in partial.hits)
    full = indexed.find("banana")
    assert full.complete and len(full.hits) == 5 and all(hit.snippet is not None for hit in full.hits)
