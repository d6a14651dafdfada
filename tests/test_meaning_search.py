"""Search by meaning: the shipped offline model, a user's own embeddings endpoint, the vectors kept
in the index beside the words (incrementally, per chunk), and what they add to a search: the words'
best sessions ranked again, and sessions said in other words found at all.

Every test indexes a real ``JsonlSessionStore`` on disk; the endpoint is a real HTTP server.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.search import meaning
from core.search.finder import FIRST_BUDGET
from core.search.meaning import (
    MEANING_CHARS,
    MEANING_FLOOR,
    MEANING_UNAVAILABLE,
    EndpointEmbedder,
    LocalEmbedder,
    MeaningUnavailable,
    embedder_for,
    pack,
    packed_size,
    unpack,
)
from core.search.words import MAX_WORD, raw_words
from tests.conftest import compact, say_assistant, say_user
from tests.support.indexed_store import Indexed, title

ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


def shard_rows(indexed: Indexed, sql: str) -> list[Any]:
    """The rows of ``sql`` in every shard (a row id is a shard's own: ``keyed`` adds the shard)."""
    rows: list[Any] = []
    for shard in indexed.index.shards:
        assert shard.path is not None
        with sqlite3.connect(shard.path) as connection:
            rows += connection.execute(sql).fetchall()
    return rows


def vector_rows(indexed: Indexed) -> dict[tuple[str, int], bytes]:
    """(shard file, chunk row id) -> packed vectors."""
    found: dict[tuple[str, int], bytes] = {}
    for shard in indexed.index.shards:
        assert shard.path is not None
        with sqlite3.connect(shard.path) as connection:
            for rowid, data in connection.execute("SELECT rowid, data FROM vectors"):
                found[(shard.path.name, rowid)] = data
    return found


# -- vectors ------------------------------------------------------------------------------------------


def test_four_bit_vectors_keep_the_cosines() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, 257)).astype(np.float32)  # an odd width is padded
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[3] = 0.0  # an empty text's vector stays zero, never NaN
    blob = pack(vectors)
    assert len(blob) == 200 * packed_size(257) == 200 * 129
    back = unpack(blob, 257)
    assert back.shape == (200, 257) and not np.isnan(back).any() and not back[3].any()
    query = vectors[10]
    exact = vectors @ query
    kept = back @ query
    assert float(np.abs(exact - kept).max()) < 0.12
    assert int(np.argmax(kept)) == 10  # the nearest stays the nearest


def test_the_shipped_model_loads_offline_and_knows_meaning(local: LocalEmbedder) -> None:
    vectors = local.embed(
        [
            "The car broke down on the highway and we called a tow truck.",
            "Rotate the TLS certificates before they expire next month.",
            "automobile trouble roadside",
        ]
    )
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[2] @ vectors[0] > MEANING_FLOOR > vectors[2] @ vectors[1]
    assert local.embed([]).shape == (0, 256)


def test_the_vectors_are_the_mean_of_the_tokens_of_the_text_s_words(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A text's vector is the mean of the tokenizer's own tokens for its words (runs of letters and
    # digits up to MAX_WORD long, in its first MEANING_CHARS characters) said with single spaces:
    # each word tokenized once and kept gives exactly those tokens, for prose, code, CJK, emoji,
    # the tokenizer's own marks and the special tokens' spellings, and again once the cache is full.
    texts = [
        "The car broke down on the highway",
        "    def retry(self, budget=3):\n        return  self._frame[:-1]  # a  comment",
        "  leading and trailing  ",
        "中文的日志 在哪里",
        "naïve café — “quoted” ﬁle 🎉 \t tab\r\n",
        "▁literal▁marks ▁",
        "a <s> inside, and </s> and <unk>",
        "sha " + "f" * 64 + " done",
        "x " * 1500,
        "",
        " ",
        "!!! --- ...",
    ]
    wordllama = pytest.importorskip("wordllama")
    import tokenizers

    folder = Path(str(wordllama.__file__)).parent
    model = wordllama.WordLlama.load(cache_dir=folder, disable_download=True)
    tokenizer = tokenizers.Tokenizer.from_str(model.tokenizer.to_str())

    def expected(batch: list[str]) -> np.ndarray:
        rows = []
        for text in batch:
            words = [word for word in re.findall(r"[^\W_]+", text[:MEANING_CHARS]) if len(word) <= MAX_WORD]
            ids = tokenizer.encode(" ".join(words), add_special_tokens=False).ids if words else []
            vector = model.embedding[ids].sum(axis=0) if ids else np.zeros(256, np.float32)
            norm = np.linalg.norm(vector)
            rows.append(vector / norm if norm else vector)
        return np.asarray(rows, np.float32)

    assert np.allclose(local.embed(texts), expected(texts), atol=1e-5)
    assert np.allclose(local.embed(texts), expected(texts), atol=1e-5)  # (from the cache)
    monkeypatch.setattr(meaning, "WORD_CACHE", 8)  # full at every batch: it starts again
    fresh = LocalEmbedder()
    assert np.allclose(fresh.embed(texts), expected(texts), atol=1e-5)
    assert not np.any(fresh.embed(["!!!", ""]))  # no word: no direction


def test_threads_share_the_word_cache_while_it_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # A search embeds its question while the indexer embeds messages: a cache replaced by one
    # thread never leaves another without a word it was about to read.
    monkeypatch.setattr(meaning, "WORD_CACHE", 50)
    shared = LocalEmbedder()
    texts = [f"word{n} other{n % 7} the same words again {n * 31}" for n in range(400)]
    alone = LocalEmbedder().embed(texts)
    results: list[np.ndarray] = []
    failures: list[BaseException] = []

    def embed() -> None:
        try:
            results.append(shared.embed(texts))
        except BaseException as error:  # (reported below)
            failures.append(error)

    threads = [threading.Thread(target=embed) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert len(results) == 4 and all(np.allclose(result, alone, atol=1e-6) for result in results)


def test_the_settings_choose_the_embedder() -> None:
    assert embedder_for(False, "http://x/v1", None, None) is None
    assert isinstance(embedder_for(True, None, None, None), LocalEmbedder)
    endpoint = embedder_for(True, "http://localhost:9/v1/", "nomic", "EMB_KEY")
    assert isinstance(endpoint, EndpointEmbedder)
    assert endpoint.name == "endpoint:http://localhost:9/v1#nomic"


# -- in a search ----------------------------------------------------------------------------------------


def seed_other_words(indexed: Indexed) -> None:
    car = indexed.session("car", created_at=1)
    title(car, "Weekend trip")
    say_user(car, "Any plans for the weekend?")
    say_assistant(car, "The car broke down on the highway and we had to call a tow truck.")
    cat = indexed.session("cat", created_at=2)
    say_user(cat, "Our cat refuses to eat the new food we bought yesterday.")
    tls = indexed.session("tls", created_at=3)
    say_user(tls, "We should rotate the TLS certificates before they expire next month.")
    deploy = indexed.session("deploy", created_at=4)
    say_user(deploy, "Deploy the frontend to production on Friday.")


def test_a_question_in_other_words_finds_the_session_and_where(tmp_path: Path, local: LocalEmbedder) -> None:
    indexed = Indexed(tmp_path / "store", embedder=local)
    seed_other_words(indexed)
    indexed.sync()
    query = "automobile trouble roadside"
    assert not set(raw_words(query)) & {word for text in ("car broke down highway tow truck",) for word in text.split()}
    words_only = Indexed(tmp_path / "store", index_path=tmp_path / "words-only")
    words_only.sync()
    assert words_only.ids(query) == []  # no word in common: words alone find nothing
    result = indexed.find(query, passages=3)
    assert [hit.candidate.session_id for hit in result.hits] == ["car"]
    hit = result.hits[0]
    assert hit.field == "body" and hit.snippet is not None
    assert hit.snippet.message == 1 and hit.snippet.role == "assistant"
    assert hit.snippet.text.startswith("The car broke down") and hit.snippet.marks == () and hit.snippet.by_meaning
    # In the picker, a keystroke's first answer is words (and prefixes) only; the full answer that
    # follows once typing pauses adds meaning, as everywhere.
    assert indexed.ids("automobile trouble roadside", typing=True, budget=FIRST_BUDGET) == []
    assert indexed.ids("automobile trouble roadside", typing=True) == ["car"]
    # Nonsense is near nothing: no session is offered for it.
    assert indexed.ids("qwxz plorb") == []


def test_meaning_ranks_the_words_best_sessions_again(tmp_path: Path, local: LocalEmbedder) -> None:
    indexed = Indexed(tmp_path / "store", embedder=local)
    # Every session holds "server" (and no other word of the question); only one is about an outage,
    # and it is the longest.
    outage = indexed.session("outage", created_at=0)
    say_user(outage, "The server went down overnight and every customer request failed until the morning shift.")
    for number in range(14):
        moving = indexed.session(f"moving-{number:02}", created_at=number + 1)
        say_user(moving, f"We carried server {number} down the stairs.")
    indexed.sync()
    words_only = Indexed(tmp_path / "store", index_path=tmp_path / "words-only")
    words_only.sync()
    question = "server crash last night"
    by_words = words_only.ids(question)
    assert by_words[-1] == "outage"  # the same words in a longer message: last
    by_both = indexed.ids(question)
    assert sorted(by_both) == sorted(by_words)  # the same sessions, in another order
    # Meaning moves it up past sessions it only shares words with (how far depends on how the
    # near-equal others fall among themselves: a light weight).
    assert by_both.index("outage") <= len(by_words) - 3
    assert by_both[0] == by_words[0]  # a light weight: meaning alone never overturns the words' best


def test_a_failing_embedder_leaves_word_search(tmp_path: Path) -> None:
    class Broken:
        name = "broken"

        def embed(self, texts: Any) -> Any:
            raise MeaningUnavailable("the meaning model cannot be loaded: gone")

    indexed = Indexed(tmp_path / "store", embedder=Broken())
    seed_other_words(indexed)
    with pytest.raises(MeaningUnavailable) as raised:
        indexed.sync()
    assert raised.value.code == MEANING_UNAVAILABLE
    assert indexed.ids("tow truck") == ["car"]  # the words were indexed before the vectors
    assert indexed.index.meaning is not None and indexed.index.meaning.failure is not None


# -- the index keeps up ---------------------------------------------------------------------------------


def test_vectors_follow_appends_rewrites_and_removals(tmp_path: Path, local: LocalEmbedder) -> None:
    indexed = Indexed(tmp_path / "store", embedder=local)
    seed_other_words(indexed)
    indexed.sync()
    meaning = indexed.index.meaning
    assert meaning is not None and meaning.progress().complete
    before = vector_rows(indexed)
    assert sum(len(data) for data in before.values()) == 5 * packed_size(256)  # one vector a message
    # An append re-embeds only the session's last chunk.
    say_assistant(indexed.writer.get("cat"), "Try mixing the new food with the old one for a week.")
    indexed.sync()
    after = vector_rows(indexed)
    changed = {key for key in after if before.get(key) != after[key]}
    assert len(changed) == 1 and len(after[changed.pop()]) == 2 * packed_size(256)
    question = meaning.ask("blend old and fresh meals over seven days")
    assert question is not None
    assert meaning.scores(question, ["cat"])["cat"].message == 1  # the appended message, by meaning
    # A removed session's vectors go with it.
    indexed.writer.close()
    (folder,) = [path for path in indexed.root.rglob("*") if path.is_dir() and "tls" in path.name]
    shutil.rmtree(folder)
    indexed.sync()
    assert len(shard_rows(indexed, "SELECT rowid FROM vectors")) == 3
    assert meaning.progress().complete


def test_vectors_another_embedder_made_are_made_again(tmp_path: Path, local: LocalEmbedder) -> None:
    with Endpoint() as endpoint:
        indexed = Indexed(tmp_path / "store", embedder=EndpointEmbedder(endpoint.url, "hashing"))
        seed_other_words(indexed)
        indexed.sync()
        assert len(shard_rows(indexed, "SELECT rowid FROM vectors")) == 4
        assert {len(data) for (data,) in shard_rows(indexed, "SELECT data FROM vectors")} <= {
            packed_size(64),
            2 * packed_size(64),
        }
        # While that process keeps the index, another embedder reads its vectors as not its own.
        other = Indexed(tmp_path / "store", embedder=local)
        other.sync()
        assert other.ids("automobile trouble roadside") == []
        other.index.close()
        indexed.index.close()
    again = Indexed(tmp_path / "store", embedder=local)
    again.sync()
    assert {value for (value,) in shard_rows(again, "SELECT value FROM meta WHERE key = 'meaning'")} == {local.name}
    assert {len(data) % packed_size(256) for (data,) in shard_rows(again, "SELECT data FROM vectors")} == {0}
    assert again.ids("automobile trouble roadside") == ["car"]


def test_an_index_of_the_older_layout_gains_its_vectors(tmp_path: Path, local: LocalEmbedder) -> None:
    words = Indexed(tmp_path / "store")
    seed_other_words(words)
    words.sync()
    for shard in words.index.shards:
        assert shard.path is not None
        with sqlite3.connect(shard.path) as connection:
            connection.execute("DROP TABLE vectors")  # as an index written before vectors were
    words.index.close()
    indexed = Indexed(tmp_path / "store", embedder=local)
    report = indexed.sync()
    assert report.indexed == 0  # the words were kept; only the vectors were made
    assert indexed.ids("automobile trouble roadside") == ["car"]


def test_the_builder_process_embeds_after_the_words(tmp_path: Path) -> None:
    indexed = Indexed(tmp_path / "store")
    seed_other_words(indexed)
    indexed.writer.close()
    done = subprocess.run(
        [sys.executable, "-m", "core.search.builder", str(tmp_path / "store"), "--meaning", "--nice", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert len(shard_rows(indexed, "SELECT rowid FROM vectors")) == 4
    assert {value for (value,) in shard_rows(indexed, "SELECT value FROM meta WHERE key = 'meaning'")} == {
        LocalEmbedder.name
    }


# -- a user's own endpoint ------------------------------------------------------------------------------


class Endpoint:
    """A real OpenAI-compatible ``/v1/embeddings`` server on localhost: 64 dimensions, each word
    hashed into one (so texts sharing words are near), with the requests it got."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                endpoint.requests.append(({key.lower(): value for key, value in self.headers.items()}, body))
                if self.path != "/v1/embeddings" or endpoint.status != 200:
                    self.send_response(endpoint.status if endpoint.status != 200 else 404)
                    self.end_headers()
                    return
                data = [
                    {"object": "embedding", "index": index, "embedding": hashed(text)}
                    for index, text in reversed(list(enumerate(body["input"])))  # any order: "index" says
                ]
                answer = json.dumps({"object": "list", "data": data, "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Endpoint:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def hashed(text: str) -> list[float]:
    vector = [0.0] * 64
    for word in raw_words(text):
        vector[hashlib.blake2b(word.encode(), digest_size=2).digest()[0] % 64] += 1.0
    return vector


def test_a_users_endpoint_embeds_with_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMB_KEY", "sk-test-123")
    with Endpoint() as endpoint:
        embedder = EndpointEmbedder(endpoint.url, "hashing", "EMB_KEY")
        indexed = Indexed(tmp_path / "store", embedder=embedder)
        seed_other_words(indexed)
        indexed.sync()
        headers, body = endpoint.requests[0]
        assert headers["authorization"] == "Bearer sk-test-123" and body["model"] == "hashing"
        assert sum(len(body["input"]) for _headers, body in endpoint.requests) == 5  # each message once
        assert all(headers["authorization"] == "Bearer sk-test-123" for headers, _body in endpoint.requests)
        vectors = embedder.embed(["tow truck", "truck tow"])
        assert vectors.shape == (2, 64) and float(vectors[0] @ vectors[1]) == pytest.approx(1.0)
        assert indexed.ids("tow truck")[0] == "car"


def test_what_the_endpoint_is_sent_has_its_secrets_masked(tmp_path: Path) -> None:
    from core.search.meaning import builder_arguments

    key = "AKIAZ3QXKVBW7HNLP4RT"
    with Endpoint() as endpoint:
        indexed = Indexed(tmp_path / "store", embedder=EndpointEmbedder(endpoint.url, "hashing"))
        say_user(indexed.session("keys"), f"the deploy user is {key}, keep it out of the logs")
        indexed.sync()
        sent = [text for _headers, body in endpoint.requests for text in body["input"]]
        assert sent and not any(key in text for text in sent)
        assert "[redacted: " in sent[0] and "keep it out of the logs" in sent[0]
        plain = EndpointEmbedder(endpoint.url, "hashing", redact=False)  # --no-redaction: as written
        plain.embed([f"id {key}"])
        assert endpoint.requests[-1][1]["input"] == [f"id {key}"]
        assert "--no-redaction" in builder_arguments(plain)
        assert "--no-redaction" not in builder_arguments(EndpointEmbedder(endpoint.url, "hashing"))


def test_a_failing_endpoint_says_why_and_words_still_answer(tmp_path: Path) -> None:
    with Endpoint(status=500) as endpoint:
        embedder = EndpointEmbedder(endpoint.url, "hashing")
        with pytest.raises(MeaningUnavailable, match="HTTP 500"):
            embedder.embed(["x"])
        indexed = Indexed(tmp_path / "store", embedder=embedder)
        seed_other_words(indexed)
        with pytest.raises(MeaningUnavailable):
            indexed.sync()
        assert indexed.ids("tow truck") == ["car"]
    gone = EndpointEmbedder(endpoint.url, "hashing")  # the server is shut: nothing listens
    with pytest.raises(MeaningUnavailable, match="cannot be reached"):
        gone.embed(["x"])


@pytest.mark.parametrize(
    "answer",
    [
        {"data": "nope"},
        {"data": [{"index": 0, "embedding": [1.0, "x"]}]},
        {"data": [{"index": 5, "embedding": [1.0]}]},
        [1, 2],
    ],
)
def test_a_bad_endpoint_answer_is_a_clear_error(answer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    def post(_self: Any, _url: str, **_options: Any) -> httpx.Response:
        return httpx.Response(200, json=answer)

    monkeypatch.setattr(httpx.Client, "post", post)
    with pytest.raises(MeaningUnavailable, match="answered badly"):
        EndpointEmbedder("http://127.0.0.1:9/v1", "m").embed(["one"])


# -- settings -------------------------------------------------------------------------------------------


def test_the_config_profile_names_the_endpoint(tmp_path: Path) -> None:
    from core.settings import ConfigError, effective_settings, embedder_of, load_config

    path = tmp_path / "config.toml"
    path.write_text(
        'default_profile = "local"\n'
        "[profiles.local]\n"
        'embeddings_url = "http://127.0.0.1:8080/v1"\n'
        'embeddings_model = "nomic-embed-text"\n'
        'embeddings_key_env = "EMB_KEY"\n'
        "[search]\n"
        "meaning = true\n"
    )
    embedder = embedder_of(effective_settings(load_config(str(path)), {}, {}).settings)
    assert isinstance(embedder, EndpointEmbedder)
    assert (embedder.base_url, embedder.model, embedder.key_env) == (
        "http://127.0.0.1:8080/v1",
        "nomic-embed-text",
        "EMB_KEY",
    )
    assert embedder_of(effective_settings(load_config(str(path)), {"meaning": False}, {}).settings) is None
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert isinstance(embedder_of(effective_settings(load_config(str(empty)), {}, {}).settings), LocalEmbedder)
    path.write_text('[profiles.local]\nembeddings_url = "ftp://x"\n')
    with pytest.raises(ConfigError) as bad:
        effective_settings(load_config(str(path)), {"profile": "local"}, {})
    assert "embeddings_url" in str(bad.value) and "http" in str(bad.value)


def test_sessionref_search_with_and_without_meaning(tmp_path: Path) -> None:
    indexed = Indexed(tmp_path / "store")
    seed_other_words(indexed)
    indexed.writer.close()

    def run(*options: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tui.cli", "search", "automobile trouble roadside", "--json"]
        return subprocess.run(
            [*command, "--root", str(tmp_path / "store"), "--no-external", *options],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )

    words_only = run("--no-meaning")
    assert words_only.returncode == 1 and json.loads(words_only.stdout)["sessions"] == []
    found = run()
    assert found.returncode == 0, found.stderr
    (session,) = json.loads(found.stdout)["sessions"]
    assert session["session"] == "car"
    assert session["messages"] == [
        {"message": 1, "role": "assistant", "text": "The car broke down on the highway and we had to call a tow truck."}
    ]


def test_a_chunks_vectors_in_parts_keep_each_messages_position(tmp_path: Path, local: LocalEmbedder) -> None:
    indexed = Indexed(tmp_path / "store", embedder=local)
    long = indexed.session("long")
    for number in range(20):  # one chunk, its vectors in three rows (7 + 7 + 6)
        say_user(long, f"status update {number}: nothing new on the build")
    say_user(long, "The car broke down on the highway and we had to call a tow truck.")  # message 20
    indexed.sync()
    assert shard_rows(indexed, "SELECT count(*) FROM vectors") in ([(3,), (0,)], [(0,), (3,)])
    assert shard_rows(indexed, "SELECT count(*) FROM embed_queue") == [(0,), (0,)]
    meaning = indexed.index.meaning
    assert meaning is not None
    question = meaning.ask("automobile trouble roadside")
    assert question is not None
    assert meaning.scores(question, ["long"])["long"].message == 20
    # An append queues the session's last chunk alone, and embedding takes it off the queue.
    say_user(indexed.writer.get("long"), "one more")
    indexed.writer.close()
    assert indexed.index.sync(indexed.sources(), indexed.read).indexed == 1
    assert sorted(shard_rows(indexed, "SELECT count(*) FROM embed_queue")) == [(0,), (1,)]
    assert meaning.progress().pending == 1
    assert meaning.embed_pending() == 1 and meaning.progress().complete


def test_meaning_alone_is_narrowed_by_each_sessions_mean(
    tmp_path: Path, local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.search.meaning_index as meaning_index

    indexed = Indexed(tmp_path / "store", embedder=local)
    seed_other_words(indexed)
    for number in range(30):
        say_user(indexed.session(f"filler-{number:02}"), f"Deploy build {number} to the staging cluster tonight.")
    indexed.sync()
    assert sorted(shard_rows(indexed, "SELECT count(*) FROM session_vectors")) != [(0,), (0,)]
    assert sum(count for (count,) in shard_rows(indexed, "SELECT count(*) FROM session_vectors")) == 34
    monkeypatch.setattr(meaning_index, "NARROWED", 2)  # only the likeliest few are scored message by message
    assert indexed.ids("automobile trouble roadside") == ["car"]
    # A session losing chunks (a compaction) has its mean made again from what stays.
    compact(indexed.writer.get("car"), "The car broke down on the highway; a tow truck came.")
    indexed.sync()
    assert indexed.ids("automobile trouble roadside") == ["car"]
    meaning = indexed.index.meaning
    assert meaning is not None
    question = meaning.ask("automobile trouble roadside")
    assert question is not None
    assert meaning.scores(question, ["car"])["car"].message == 0  # the summary, all that stays
    assert shard_rows(indexed, "SELECT count(*) FROM embed_queue") == [(0,), (0,)]


def test_a_large_backlog_of_vectors_is_made_by_the_builder_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index of words alone (made before vectors, or with meaning off) gains its vectors in the
    builder process, not in the thread of the app or the server."""
    import core.search.index_keeper as index_keeper
    from core.catalog import SessionCatalog
    from core.folder.jsonl_store import JsonlSessionStore
    from core.mcp.server import SessionToolServer

    words = Indexed(tmp_path / "store")
    seed_other_words(words)
    words.sync()
    words.index.close()
    monkeypatch.setattr(index_keeper, "MEANING_BUILDER_THRESHOLD", 1)
    store = JsonlSessionStore(tmp_path / "store")
    server = SessionToolServer(SessionCatalog(store), "/work/app", embedder=LocalEmbedder())
    try:
        server.wait_for_index()
        assert server.keeper is not None and server.keeper._builder_finished  # the builder ran, and exited 0
        assert server.body_index is not None and server.body_index.meaning is not None
        assert server.body_index.meaning.progress().complete
        assert len(shard_rows(words, "SELECT rowid FROM vectors")) == 4
    finally:
        server.close()
        store.close()
