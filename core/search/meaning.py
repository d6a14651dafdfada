"""Search by meaning: what turns text into vectors, and how the index keeps them.

An ``Embedder`` turns texts into unit vectors. Two ship:

- ``LocalEmbedder``, the default: wordllama's 256-dimension model, which its wheel carries; loaded
  offline (never a download) on first use, in about 0.1-0.3 s.
- ``EndpointEmbedder``: a user's own OpenAI-compatible ``/v1/embeddings`` endpoint, set in the
  config profile (``embeddings_url``, ``embeddings_model``, ``embeddings_key_env``).

The index keeps one vector per message (the words of its first ``MEANING_CHARS`` characters), quantized to four
bits a dimension with a per-vector scale: 128 bytes for 256 dimensions. On the retrieval benchmark
that loses nothing against 32-bit floats (the figures are in docs/search.md).

How a search uses them (``finder``): the sessions the words found best (``MEANING_POOL``) are ranked
again by their best message's cosine to the question, and the two orders are fused by reciprocal
rank, meaning weighing ``MEANING_WEIGHT``; when the words find fewer sessions than a page, the
sessions nearest in meaning fill it. Measured on the tuning half of the retrieval benchmark only.
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from core.errors import SessionrefError
from core.search.words import MAX_WORD

if TYPE_CHECKING:  # numpy is imported when vectors are first made or read, never at start-up
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

MEANING_CHARS = 2000
"""A message's first characters that make its vector (more adds nothing measurable, and costs)."""
MEANING_POOL = 30
"""The sessions the words rank best that meaning ranks again (beyond them it cannot change a page)."""
MEANING_WEIGHT = 0.25
"""Meaning's weight in the reciprocal rank fusion (the words weigh 1; an equal weight measured worse)."""
FUSION_K = 60
"""The usual constant of reciprocal rank fusion: 1 / (FUSION_K + rank)."""
MEANING_WORDS = 2
"""Words (beyond the common ones) a query needs for its meaning to count: one word's vector is
near too much (a made-up token is as near its look-alikes as a question to its answer)."""
MEANING_FLOOR = 0.45
"""The cosine below which a session the words did not find is not offered for its meaning alone."""
MEANING_BUDGET = 0.5
"""Seconds a search may spend scoring every session by meaning (a page the words left short)."""
LEVELS = 7
"""A dimension is kept as an integer in -LEVELS..LEVELS (four bits)."""
EMBED_BATCH = 256
"""Texts embedded in one call."""
WORD_CACHE = 200_000
"""Distinct words whose tokens the local model keeps (some 30 MB); past it the cache starts again."""
ENDPOINT_TIMEOUT = 30.0
"""Seconds an embeddings endpoint may take to answer one batch."""

MEANING_UNAVAILABLE = "SEARCH_MEANING_UNAVAILABLE"
_MEANING_WORD = re.compile(r"[^\W_]+")
"""What a text's vector is made of (``LocalEmbedder``): its runs of letters and digits."""
"""The embedder cannot be loaded or reached: word search answers alone."""


class MeaningUnavailable(SessionrefError):
    """The embedder failed (``code`` is ``MEANING_UNAVAILABLE``); searches go on by words alone."""

    def __init__(self, message: str) -> None:
        super().__init__(message, MEANING_UNAVAILABLE)


class Embedder(Protocol):
    """Turns texts into unit vectors, all of one dimension."""

    @property
    def name(self) -> str:
        """What made the vectors (an index made by another embedder is embedded again)."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit vector (float32) per text, in order.

        Raises:
            MeaningUnavailable: the model cannot be loaded or the endpoint answered badly.
        """
        ...


_SPACES_AS_MARKS = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    ],
}
"""The shipped tokenizer's normalizing (a ``▁`` before a text and for each space), done before it."""


class LocalEmbedder:
    """wordllama's shipped 256-dimension model, loaded offline on first use (thread-safe).

    The model is the mean of a text's token vectors. Here a text's vector is the mean of its
    words' tokens: its runs of letters and digits, case kept, up to ``MAX_WORD`` long. Punctuation,
    indentation and markup say little of what a message means and are most of code's tokens; on the
    retrieval benchmark the words alone rank as the whole text did (docs/search.md). Each distinct
    word is tokenized once, as ``▁word`` (the tokenizer splits a text at its ``▁`` marks: the same
    tokens as in a whole text), and its tokens kept, so a message costs lookups rather than the
    tokenizer: a third of the CPU. No batch is padded to its longest text (what wordllama's
    ``embed`` does).
    """

    name = "wordllama/l2_supercat_256/words"

    def __init__(self) -> None:
        self._model: tuple[Any, bool, Any] | None = None
        self._lock = threading.Lock()
        self._tokens: dict[str, list[int]] = {}
        """Word -> its tokens (at most ``WORD_CACHE``; replaced whole when full, so a thread still
        reading the old one is never disturbed)."""

    def _load(self) -> tuple[Any, bool, Any]:
        """The tokenizer, whether its words are to be given their ``▁`` here, and the matrix."""
        with self._lock:
            if self._model is None:
                try:
                    wordllama = importlib.import_module("wordllama")
                    tokenizers = importlib.import_module("tokenizers")
                    # The wheel ships its tokenizer in ``tokenizers/`` and the weights beside it;
                    # loading from the package folder never downloads.
                    folder = Path(str(wordllama.__file__)).parent
                    model = wordllama.WordLlama.load(cache_dir=folder, disable_download=True)
                    spelled = model.tokenizer.to_str()
                    tokenizer = tokenizers.Tokenizer.from_str(spelled)
                    tokenizer.no_padding()
                    tokenizer.no_truncation()
                    marks = json.loads(spelled).get("normalizer") == _SPACES_AS_MARKS
                    if marks:  # (its normalizing is a ``▁`` before each word: done here)
                        tokenizer.normalizer = None
                    self._model = (tokenizer, marks, model.embedding)
                except Exception as error:  # a broken install: words answer alone
                    raise MeaningUnavailable(f"the meaning model cannot be loaded: {error}") from error
            return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        tokenizer, marks, matrix = self._load()
        vectors = np.zeros((len(texts), matrix.shape[1]), np.float32)
        for start in range(0, len(texts), EMBED_BATCH):
            said = [
                [word for word in _MEANING_WORD.findall(text[:MEANING_CHARS]) if len(word) <= MAX_WORD]
                for text in texts[start : start + EMBED_BATCH]
            ]
            tokens = self._tokens_of(said, tokenizer, marks)
            for number, words in enumerate(said, start):
                ids = list(itertools.chain.from_iterable(map(tokens.__getitem__, words)))
                if ids:
                    np.sum(matrix.take(ids, axis=0), axis=0, out=vectors[number])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)

    def _tokens_of(self, said: list[list[str]], tokenizer: Any, marks: bool) -> dict[str, list[int]]:
        """A word -> tokens map holding every word of ``said``: the cache, the new words tokenized
        together (the tokenizer's own threads, without the offsets a mean does not need)."""
        cache = self._tokens
        new = {word for words in said for word in words if word not in cache}
        if new:
            if len(cache) + len(new) > WORD_CACHE:
                cache = self._tokens = {}
                new = {word for words in said for word in words}
            ordered = list(new)
            spelled = ["\u2581" + word for word in ordered] if marks else ordered
            for word, encoding in zip(
                ordered, tokenizer.encode_batch_fast(spelled, add_special_tokens=False), strict=True
            ):
                cache[word] = encoding.ids
        return cache


class EndpointEmbedder:
    """An OpenAI-compatible embeddings endpoint: ``POST {base_url}/embeddings``.

    Args:
        base_url: the API's base URL, e.g. ``http://localhost:8080/v1``.
        model: the embedding model's name.
        key_env: the environment variable holding the API key (none sent when unset or empty).
        redact: mask the secrets in what is sent (as everything that leaves a session is); the
            vectors of a masked key are no worse for finding the conversation around it.
    """

    def __init__(self, base_url: str, model: str, key_env: str | None = None, *, redact: bool = True) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.key_env = key_env
        self.redact = redact
        self.name = f"endpoint:{self.base_url}#{model}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        import httpx
        import numpy as np

        headers = {"content-type": "application/json"}
        key = os.environ.get(self.key_env, "") if self.key_env else ""
        if key:
            headers["authorization"] = f"Bearer {key}"
        rows: list[list[float]] = []
        try:
            with httpx.Client(timeout=ENDPOINT_TIMEOUT) as client:
                for start in range(0, len(texts), EMBED_BATCH):
                    batch = [self._sent(text) for text in texts[start : start + EMBED_BATCH]]
                    response = client.post(
                        f"{self.base_url}/embeddings", json={"model": self.model, "input": batch}, headers=headers
                    )
                    if response.status_code != 200:
                        raise MeaningUnavailable(
                            f"the embeddings endpoint answered HTTP {response.status_code} ({self.base_url})"
                        )
                    rows.extend(_vectors_of(response.json(), len(batch)))
        except httpx.HTTPError as error:
            raise MeaningUnavailable(f"the embeddings endpoint cannot be reached ({self.base_url}): {error}") from error
        except ValueError as error:
            raise MeaningUnavailable(f"the embeddings endpoint answered badly ({self.base_url}): {error}") from error
        if not rows:
            return np.zeros((0, 1), np.float32)
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    def _sent(self, text: str) -> str:
        """What of a message is sent: its first ``MEANING_CHARS`` characters, secrets masked."""
        text = text[:MEANING_CHARS]
        if self.redact:
            from core.secrets.finder import mask_secrets

            text = mask_secrets(text).text
        return text or " "


def _vectors_of(answer: object, count: int) -> list[list[float]]:
    """The vectors of an OpenAI-style answer, in input order; ``ValueError`` when it is not one."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise ValueError(f"expected {count} embeddings")
    ordered: list[list[float] | None] = [None] * count
    width: int | None = None
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError("an embedding is not an object")
        index = item.get("index", position)
        vector = item.get("embedding")
        if not isinstance(index, int) or not 0 <= index < count or ordered[index] is not None:
            raise ValueError("embeddings out of order")
        if not isinstance(vector, list) or not vector or not all(isinstance(x, (int, float)) for x in vector):
            raise ValueError("an embedding is not a list of numbers")
        if width is not None and len(vector) != width:
            raise ValueError("embeddings of different dimensions")
        width = len(vector)
        ordered[index] = [float(x) for x in vector]
    return [vector for vector in ordered if vector is not None]


def embedder_for(
    enabled: bool, url: str | None, model: str | None, key_env: str | None, *, redact: bool = True
) -> Embedder | None:
    """The embedder the settings ask for: none when meaning search is off, the endpoint when one is
    set (``redact``: secrets masked in what it is sent), else the shipped model."""
    if not enabled:
        return None
    if url:
        return EndpointEmbedder(url, model or "text-embedding-3-small", key_env, redact=redact)
    return LocalEmbedder()


def builder_arguments(embedder: Embedder | None) -> list[str]:
    """The builder process's options that make the same embedder (its key stays in the environment)."""
    if isinstance(embedder, EndpointEmbedder):
        arguments = ["--embeddings-url", embedder.base_url, "--embeddings-model", embedder.model]
        arguments += [] if embedder.redact else ["--no-redaction"]
        return arguments + (["--embeddings-key-env", embedder.key_env] if embedder.key_env else [])
    return ["--meaning"] if embedder is not None else []


# -- how the index keeps vectors ----------------------------------------------------------------------


def pack(vectors: Vectors) -> bytes:
    """Unit vectors as four bits a dimension (a per-vector scale; cosine ignores it), two a byte."""
    import numpy as np

    if vectors.shape[0] == 0:
        return b""
    if vectors.shape[1] % 2:
        vectors = np.pad(vectors, ((0, 0), (0, 1)))
    peaks = np.abs(vectors).max(axis=1, keepdims=True)
    scaled = vectors * (LEVELS / np.where(peaks > 0, peaks, 1.0))
    levels = (np.clip(np.rint(scaled), -LEVELS, LEVELS) + 8).astype(np.uint8)
    return ((levels[:, 0::2] << 4) | levels[:, 1::2]).tobytes()


def unpack(blob: bytes, dims: int) -> Vectors:
    """Packed vectors back as unit float32 rows (a zero vector stays zero)."""
    import numpy as np

    levels = _levels(blob, dims)
    norms = np.sqrt(np.einsum("ij,ij->i", levels, levels))[:, None]
    return (levels / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def cosines(blob: bytes, dims: int, question: Vectors) -> Vectors:
    """The cosine of each packed vector to the unit ``question`` (what a search computes: the
    vectors are never normalized one by one). Their levels are small integers, exact in float32, so
    each norm is exact too."""
    import numpy as np

    levels = _levels(blob, dims)
    dots: Vectors = levels @ question
    norms = np.sqrt(np.einsum("ij,ij->i", levels, levels))
    return (dots / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def _levels(blob: bytes, dims: int) -> Vectors:
    """Packed vectors as float32 rows of their levels (-8..7), ``dims`` wide."""
    import numpy as np

    width = dims + dims % 2
    packed = np.frombuffer(blob, np.uint8).reshape(-1, width // 2)
    levels = np.empty((packed.shape[0], width), np.float32)
    np.right_shift(packed, 4, out=levels[:, 0::2], casting="unsafe")
    np.bitwise_and(packed, 15, out=levels[:, 1::2], casting="unsafe")
    levels -= 8
    return levels[:, :dims]


def packed_size(dims: int) -> int:
    """Bytes one packed vector of ``dims`` dimensions takes."""
    return (dims + 1) // 2
