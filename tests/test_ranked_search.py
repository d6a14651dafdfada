"""Ranked search: a query is words, found in any order and form, ranked by BM25 with each session's
best messages; the word index kept exactly in line with the store on every append, rewrite and
removal; `sessionref search` and the model's tool on the demo store.

Every test indexes a real ``JsonlSessionStore`` on disk through the reader the app uses.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from core import project_conversation
from core.search import vocabulary
from core.search.matching import marked_text
from core.search.search_query import parse_query
from core.search.words import fold_text, raw_words, term_counts
from tests.conftest import compact, say_assistant, say_user
from tests.support.indexed_store import Indexed, Target, title
from tests.test_mcp import _client as mcp_client
from tests.test_session_tools import frame_text

ROOT = Path(__file__).parent.parent


# -- words ------------------------------------------------------------------------------------------


def test_case_accents_and_word_forms_are_folded() -> None:
    assert term_counts("The CRASHED logs; crash! Résumé résumés") == Counter({"crash": 2, "log": 1, "resum": 2})
    assert fold_text("Straße İstanbul") == "strasse istanbul"
    # CJK has no spaces: pairs of characters; Hangul is put back together after the accents go.
    assert raw_words("我们用中文写 한국어") == ["我们", "们用", "用中", "中文", "文写", "한국", "국어"]


def test_the_query_language() -> None:
    query = parse_query('how do we avoid "torn frames" in retry_budget.py --max-references')
    assert query.phrases == ("torn frames",)
    assert query.literals == ("retry_budget.py", "--max-references")
    assert query.terms[:2] == ("avoid", "torn")  # the question's words, its common ones left out
    assert parse_query("corru", typing=True).prefix == "corru"
    assert parse_query("corru ", typing=True).prefix is None  # a space ends the word
    assert parse_query("the").terms == ("the",)  # only common words: searched after all


# -- ranking ----------------------------------------------------------------------------------------


def seed_ranked(indexed: Indexed) -> None:
    storage = indexed.session("storage", created_at=10)
    title(storage, "Storage design")
    say_user(storage, "Where should sessions live on disk?")
    say_assistant(storage, "One file per session, zstd frames with checksums.")
    say_user(storage, "And how do we keep a crash from corrupting a log?")
    say_assistant(storage, "Write each batch as one frame and fsync; readers ignore a torn last frame.")
    crash = indexed.session("crash-only", created_at=20)
    say_user(crash, "the build crashed again on the runner")
    for number in range(3):
        other = indexed.session(f"other-{number}", created_at=30 + number)
        say_user(other, f"planning notes {number}: nothing about disks")


def test_words_in_any_order_and_form_rank_the_session_holding_all_of_them_first(indexed: Indexed) -> None:
    seed_ranked(indexed)
    indexed.sync()
    for query in ("fsync crash", "crash fsync", "corrupting crash", "how do we avoid corrupting logs on crash"):
        assert indexed.ids(query)[0] == "storage", query
    # Holding only some of the words: still found, below.
    assert indexed.ids("fsync crash") == ["storage", "crash-only"]


def test_a_result_carries_its_best_messages_with_the_words_marked(indexed: Indexed) -> None:
    seed_ranked(indexed)
    indexed.sync()
    hit = indexed.find("how do we avoid corrupting logs on crash", passages=3).hits[0]
    assert hit.candidate.session_id == "storage" and hit.field == "body"
    best = hit.snippets[0]
    assert (best.message, best.role) == (2, "user")  # the position read_session counts
    assert marked_text(best) == "And how do we keep a **crash** from **corrupting** a **log**?"
    assert all(len(snippet.text) <= 162 for snippet in hit.snippets)
    scores = [snippet.score for snippet in hit.snippets]
    assert scores == sorted(scores, reverse=True) and len({s.message for s in hit.snippets}) == len(scores)


def test_a_title_counts_more_and_recency_breaks_ties(indexed: Indexed) -> None:
    said = indexed.session("said", created_at=1)
    say_user(said, "we talked about the quokka migration")
    titled = indexed.session("titled", created_at=2)
    title(titled, "Quokka migration")
    say_user(titled, "we talked about the quokka migration")
    for number in range(2):
        twin = indexed.session(f"twin-{number}", created_at=10 + number)
        say_user(twin, "a wombat census")
    indexed.sync()
    assert indexed.ids("quokka migration")[:2] == ["titled", "said"]
    assert indexed.ids("wombat census") == ["twin-1", "twin-0"]  # equal: the newer first


def test_identifiers_and_cjk_are_found_as_typed(indexed: Indexed) -> None:
    code = indexed.session("code", created_at=1)
    say_user(code, "SESSION_REFERENCE_BUDGET_EXCEEDED came from retry_budget.py with --max-references 3")
    words = indexed.session("words", created_at=2)
    say_user(words, "the session reference budget was exceeded; retry the budget; max references")
    chinese = indexed.session("chinese", created_at=3)
    say_user(chinese, "我们用中文写设计文档")
    indexed.sync()
    for identifier in ("SESSION_REFERENCE_BUDGET_EXCEEDED", "retry_budget.py", "--max-references", "BUDGET_EXC"):
        assert indexed.ids(identifier)[0] == "code", identifier
    assert indexed.ids("中文") == ["chinese"]
    assert indexed.ids("设计文档") == ["chinese"]


def test_every_word_of_a_long_message_is_found(indexed: Indexed) -> None:
    say_user(indexed.session("long"), "lorem ipsum dolor sit amet " * 8_000 + "the zanzibarite clue")
    indexed.sync()
    hit = indexed.find("zanzibarite", passages=1).hits[0]
    assert hit.candidate.session_id == "long"
    assert hit.snippet is not None and marked_text(hit.snippet).endswith("the **zanzibarite** clue")
    assert indexed.ids('"zanzibarite clue"') == ["long"]


def test_the_contract_groups_stay_and_the_target_is_never_offered(indexed: Indexed) -> None:
    here = indexed.session("here", cwd="/work/app", created_at=1)
    say_user(here, "one fsync")
    away = indexed.session("away", cwd="/elsewhere", created_at=2)
    say_user(away, "fsync fsync crash crash: the best match, elsewhere")
    loose = indexed.session("loose", cwd=None, created_at=3)
    say_user(loose, "fsync")
    target = indexed.session("target", created_at=4)
    say_user(target, "fsync crash")
    indexed.sync()
    assert indexed.ids("fsync crash") == ["here", "loose", "away"]


# -- the word index kept in line with the store ------------------------------------------------------


def postings_of(indexed: Indexed) -> dict[str, Counter[str]]:
    """Session id -> its word counts, as the index files hold them."""
    found: dict[str, Counter[str]] = {}
    for shard in indexed.index.shards:
        assert shard.path is not None
        with sqlite3.connect(shard.path) as connection:
            ids = dict(connection.execute("SELECT key, id FROM sessions").fetchall())
            lengths = dict(connection.execute("SELECT id, words FROM sessions").fetchall())
            for word, key, count in connection.execute("SELECT word, key, count FROM postings"):
                found.setdefault(ids[key], Counter())[word] = count
            for session_id, length in lengths.items():
                assert sum(found.get(session_id, Counter()).values()) == length
            assert vocabulary_of(connection) == dict(
                connection.execute("SELECT word, count(*) FROM postings GROUP BY word").fetchall()
            )
    return found


def edit_shards(indexed: Indexed, *statements: str) -> None:
    """Close the index and run ``statements`` on each of its files (an older or stopped writer's)."""
    indexed.index.close()
    for shard in indexed.index.shards:
        assert shard.path is not None
        with sqlite3.connect(shard.path) as connection:
            for statement in statements:
                connection.execute(statement)


def vocabulary_of(connection: sqlite3.Connection) -> dict[str, int]:
    """The shard's vocabulary (word -> sessions holding it), which must be current."""
    assert connection.execute("SELECT value FROM meta WHERE key = 'vocabulary'").fetchone() == ("fresh",)
    return dict(connection.execute("SELECT word, sessions FROM words").fetchall())


def expected_postings(indexed: Indexed) -> dict[str, Counter[str]]:
    """Session id -> its word counts, read from the store."""
    expected: dict[str, Counter[str]] = {}
    for record in indexed.records:
        stored = indexed.reader.read_stored(record.header)
        counts: Counter[str] = Counter()
        for item in project_conversation(stored.surface):
            counts.update(term_counts(item.text))
        if counts:
            expected[record.header.id] = counts
    return expected


def test_appends_rewrites_and_removals_keep_the_word_counts_exact(indexed: Indexed) -> None:
    grows = indexed.session("grows", created_at=1)
    for number in range(40):  # several chunks
        say_user(grows, f"message {number} about checksums and frames " + "padding words here " * 20)
    gone = indexed.session("gone", created_at=2)
    say_user(gone, "the ocelot protocol")
    rewritten = indexed.session("rewritten", created_at=3)
    say_user(rewritten, "the aardvark plan, first draft")
    say_assistant(rewritten, "aardvark aardvark")
    indexed.sync()
    assert postings_of(indexed) == expected_postings(indexed)
    # An append (the last chunk re-indexed), a compaction (the surface replaced), a removal.
    say_user(indexed.writer.get("grows"), "and one more about the pangolin checksum")
    compact(indexed.writer.get("rewritten"), "Summary: the pangolin plan replaced the first draft.")
    indexed.writer.close()
    (folder,) = [path for path in indexed.root.rglob("*") if path.is_dir() and "gone" in path.name]
    shutil.rmtree(folder)
    indexed.sync()
    assert postings_of(indexed) == expected_postings(indexed)
    assert set(indexed.ids("pangolin")) == {"grows", "rewritten"}
    assert indexed.ids("aardvark") == [] and indexed.ids("ocelot") == []


def test_a_big_batch_makes_the_vocabulary_again_and_a_file_without_one_is_searched(
    indexed: Indexed, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vocabulary, "STALE_AFTER", 2)  # every batch here is "big"
    for number in range(6):
        say_user(indexed.session(f"s{number}", created_at=number), f"retry number {number} readme")
    say_user(indexed.session("rare", created_at=9), "the rebase of retry_budget")
    indexed.sync()
    assert postings_of(indexed) == expected_postings(indexed)  # (the vocabulary made again, exact)
    # The word being typed becomes the most widespread words it starts, whatever their order.
    assert indexed.index.words._expand("re", 2) == ["retri", "readm"]
    monkeypatch.setattr(vocabulary, "STALE_AFTER", 200)
    say_user(indexed.writer.get("rare"), "a rebase again")  # a small batch keeps it row by row
    indexed.writer.close()
    indexed.sync()
    assert postings_of(indexed) == expected_postings(indexed)
    # A file written before the vocabulary existed (or mid-build): counted from the postings.
    edit_shards(indexed, "DELETE FROM meta WHERE key = 'vocabulary'", "DELETE FROM words")
    reopened = Indexed(indexed.root)
    reopened.index.open()
    ranked = reopened.index.rank(parse_query("retry rebas", typing=True))
    assert set(ranked.scores) == {"rare", *(f"s{number}" for number in range(6))}
    assert ranked.stats.df == {"retri": 7, "rebas": 1} and ranked.prefix_terms[0] == "rebas"
    reopened.sync()  # the next sync makes it again
    assert postings_of(reopened) == expected_postings(reopened)


def test_a_big_batch_merges_the_substring_index_lazily_and_leaves_it_as_usual(
    indexed: Indexed, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.search import shard_writes

    def merging(connection: sqlite3.Connection) -> dict[str, int]:
        rows = connection.execute("SELECT k, v FROM terms_config WHERE k IN ('automerge', 'crisismerge')")
        return dict(rows.fetchall())

    seen: list[dict[str, int]] = []
    write = shard_writes.ShardWriter._write_session

    def watched(self: shard_writes.ShardWriter, connection: sqlite3.Connection, prepared: object) -> None:
        seen.append(merging(connection))
        write(self, connection, prepared)  # type: ignore[arg-type]

    monkeypatch.setattr(shard_writes.ShardWriter, "_write_session", watched)
    monkeypatch.setattr(vocabulary, "STALE_AFTER", 2)  # every batch here is "big"
    for number in range(8):
        say_user(indexed.session(f"s{number}", created_at=number), f"the retry_budget{number} of the pangolin")
    indexed.sync()
    assert seen and all(during == {"automerge": 0, "crisismerge": 64} for during in seen)
    for shard in indexed.index.shards:
        assert shard.path is not None
        with sqlite3.connect(shard.path) as connection:
            assert merging(connection) == {"automerge": 8, "crisismerge": 16}  # as usual again
    assert set(indexed.ids("retry_budget")) == {f"s{number}" for number in range(8)}
    assert indexed.ids("budget3") == ["s3"]


def test_an_index_of_the_older_layout_is_rebuilt(indexed: Indexed) -> None:
    say_user(indexed.session("s"), "the marmot decision")
    indexed.sync()
    edit_shards(indexed, "UPDATE meta SET value = '4' WHERE key = 'schema'", "DROP TABLE postings")
    reopened = Indexed(indexed.root)
    reopened.sync()
    assert reopened.ids("marmot") == ["s"]


# -- every surface on the demo store -----------------------------------------------------------------


def run_search(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "search", *args, "--root", str(root), "--no-external"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture
def demo_store(demo_template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(demo_template, root)
    return root


def test_sessionref_search_ranks_the_demo_store(demo_store: Path) -> None:
    done = run_search(demo_store, "fsync crash")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("1. Storage design  [design-notes]")
    assert lines[1] == "   #2 you: And how do we keep a crash from corrupting a log?"  # not a terminal: no bold
    done = run_search(demo_store, "how do we avoid corrupting logs on crash", "--json", "--limit", "2")
    body = json.loads(done.stdout)
    first = body["sessions"][0]
    assert first["label"] == "Storage design" and len(body["sessions"]) <= 2
    assert first["messages"][0] == {
        "message": 2,
        "role": "user",
        "text": "And how do we keep a **crash** from **corrupting** a **log**?",
    }
    nothing = run_search(demo_store, "xylophonist")
    assert nothing.returncode == 1 and nothing.stdout.startswith('no session matches "xylophonist"')
    bad = run_search(demo_store, "x", "--limit", "0")
    assert bad.returncode == 2 and bad.stderr.strip() == "sessionref search: --limit must be from 1 to 200"


def test_text_from_sessions_never_reaches_the_terminal_raw(demo_store: Path) -> None:
    done = run_search(demo_store, "emoji bell")
    assert done.returncode == 0, done.stderr
    assert "\x07" not in done.stdout and "\\x07" in done.stdout  # the id's bell, escaped


def test_the_models_tool_answers_the_same_on_the_demo_store(demo_store: Path) -> None:
    # The real `sessionref mcp` over stdio, as an agent starts it (asked until its index is ready).
    calls = [("search_sessions", {"query": "how do we avoid corrupting logs on crash"})] * 5
    _tools, results = asyncio.run(mcp_client(demo_store, calls))
    answers = [json.loads(frame_text(result.content[0].text, "session-search-results")) for result in results]
    found = next(answer for answer in answers if "note" not in answer)
    first = found["sessions"][0]
    assert first["label"] == "Storage design"
    assert first["messages"][0]["message"] == 2 and "**crash**" in first["messages"][0]["text"]


def test_a_search_of_an_index_not_open_finds_titles_only(tmp_path: Path) -> None:
    indexed = Indexed(tmp_path / "store")
    say_user(indexed.session("s"), "the marmot decision")
    indexed.writer.close()
    indexed.sources()
    result = indexed.find("marmot")
    assert result.hits == [] and result.body in ("indexing", "ready")
    assert indexed.find("s", target=Target(session_id="other")).hits[0].candidate.session_id == "s"


def test_a_long_session_s_best_messages_are_found_whatever_its_words_stem_or_fold_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long session is read through the chunks that may hold the query's words. A stem need not be
    # in the text ("retry" is indexed as "retri", "happy" as "happi") and ranking folds accents and
    # ligatures ("résumé", "ﬁnale"): those chunks are found by what scoring looks for.
    import core.search.word_ranking as word_ranking

    monkeypatch.setattr(word_ranking, "WHOLE_SESSION_WORDS", 0)  # every session is long
    indexed = Indexed(tmp_path / "store")
    session = indexed.session("long")
    said = {
        "retry": "We retry the upload twice before giving up.",
        "happy": "The customer was happy with the fix.",
        "resume": "Attach the résumé to the application.",
        "finale": "The ﬁnale of the migration is tonight.",
        "naive": "A naïve parser splits on commas.",
    }
    for number in range(40):  # other chunks, none of those words
        say_user(session, f"Filler message {number}: " + "nothing to see in this line at all. " * 30)
        if number % 8 == 0:
            say_assistant(session, said[list(said)[number // 8]])
    indexed.sync()
    index = indexed.index
    for word, message in said.items():
        query = parse_query(word)
        ranked = index.rank(query)
        passages = index.passages("long", query, ranked, 3)
        assert passages and passages[0].text == message, word


def test_a_common_word_read_whole_or_looked_up_session_by_session_scores_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A word most sessions hold, once rarer words have chosen the sessions, is read only for those:
    # its postings looked up one by one, or all read and the others dropped (cheaper when many).
    import core.search.word_ranking as word_ranking

    indexed = Indexed(tmp_path / "store")
    for number in range(12):
        session = indexed.session(f"s{number}", created_at=number)
        say_user(session, "alpha " * (1 + number % 3) + ("beta gamma" if number % 4 == 0 else "delta"))
    indexed.sync()
    monkeypatch.setattr(word_ranking, "COMMON_TERM", 4)  # "alpha" (12 sessions) is common, "beta" (3) not
    query = parse_query("beta alpha")
    found = []
    for lookups in (0, 1000):  # looked up, then read whole
        monkeypatch.setattr(word_ranking, "LOOKUPS_PER_ROW", lookups)
        ranked = indexed.index.rank(query)
        found.append((ranked.scores, ranked.covered))
    assert found[0] == found[1]
    assert found[0][1] == {"s0": 2, "s4": 2, "s8": 2}  # only the sessions "beta" chose, with "alpha" added


def test_a_common_word_after_the_newest_sessions_are_chosen_reads_only_their_run_of_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every word common: the first chooses the newest sessions holding it, and the next is read
    # only between the first and the last key chosen (a word's postings are kept in key order),
    # scoring exactly what looking each one up scores.
    import core.search.word_ranking as word_ranking
    from core.search.shard_reads import ShardReader

    indexed = Indexed(tmp_path / "store")
    for number in range(40):
        session = indexed.session(f"s{number}", created_at=number)
        say_user(session, "alpha " * (1 + number % 3) + "omega " * (1 + number % 2))
    indexed.sync()
    shards = len(indexed.index.shards)
    monkeypatch.setattr(word_ranking, "COMMON_TERM", 4 * shards)  # both words common: the newest 4 a shard
    spans: list[tuple[int, int] | None] = []
    read = ShardReader.posting_arrays

    def spying(self: ShardReader, word: str, keys: object = None, **options: object) -> object:
        spans.append(options.get("span"))  # type: ignore[arg-type]
        return read(self, word, keys, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(ShardReader, "posting_arrays", spying)
    query = parse_query("alpha omega")
    found = []
    for lookups in (0, 1000):  # looked up one by one, then their run of keys read
        monkeypatch.setattr(word_ranking, "LOOKUPS_PER_ROW", lookups)
        spans.clear()
        ranked = indexed.index.rank(query)
        found.append((ranked.scores, ranked.covered))
    assert found[0] == found[1]
    assert len(found[1][0]) == 4 * shards and set(found[1][1].values()) == {2}
    read_spans = [span for span in spans if span is not None]
    assert len(read_spans) == shards and all(high - low == 3 for low, high in read_spans)
