"""Words as search sees them: folding (case, accents, word forms), CJK bigrams, stop words.

The same analysis runs on what is indexed and on what is asked, so ``crash`` finds ``crashed``,
``resume`` finds ``Résumé`` and ``中文`` finds ``我们用中文写``:

- text is case-folded and its accents dropped (NFKD, combining marks removed);
- a word is a run of letters and digits (``_``, ``-``, ``.`` and every other mark split words, so
  ``retry_budget.py`` holds ``retry``, ``budget`` and ``py``; the identifier itself is found as
  typed through the substring index);
- an English word is reduced to its stem by the Snowball stemmer (``PyStemmer``), the algorithm
  PostgreSQL's ``english`` configuration uses;
- Chinese, Japanese and Korean text has no spaces: each run of it is indexed as its overlapping
  pairs of characters (bigrams), a lone character as itself;
- the commonest English words (``the``, ``how``, ``do``...) are not indexed, and are dropped from a
  question unless it holds nothing else.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping

import Stemmer

from core.spans import merged_spans

MAX_WORD = 40
"""Longer runs of letters and digits (hashes, base64) are not words: the substring index finds them."""

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\u3131-\u318e"
_TOKEN = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")
_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during each
    few for from further had hadn has hasn have haven having he her here hers herself him himself his how
    i if in into is isn it its itself let me more most mustn my myself no nor not of off on once only or
    other ought our ours ourselves out over own same shan she should shouldn so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was
    wasn we were weren what when where which while who whom why will with won would wouldn you your yours
    yourself yourselves s t d ll m re ve y also just us""".split()
)
"""English words too common to tell sessions apart (Snowball's English stop list, contractions split)."""

_local = threading.local()
_CACHE_LIMIT = 500_000


def _stems() -> tuple[Stemmer.Stemmer, dict[str, str]]:
    # A stemmer is not safe to share between threads: one per thread, with its own cache.
    found: tuple[Stemmer.Stemmer, dict[str, str]] | None = getattr(_local, "stemmer", None)
    if found is None:
        found = _local.stemmer = (Stemmer.Stemmer("english"), {})
    return found


def fold_text(text: str) -> str:
    """``text`` case-folded with its accents dropped (``Résumé`` -> ``resume``)."""
    if text.isascii():
        return text.lower()
    # NFC after the marks are gone puts Hangul syllables back together (NFKD split them into jamo).
    return unicodedata.normalize("NFC", _MARKS.sub("", unicodedata.normalize("NFKD", text))).casefold()


def stem(word: str) -> str:
    """The stem of one folded word (``crashed`` -> ``crash``); CJK pairs and numbers as they are."""
    stemmer, cache = _stems()
    found = cache.get(word)
    if found is None:
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        found = cache[word] = stemmer.stemWord(word) if word.isascii() and not word.isdigit() else word
    return found


_ASCII_WORD = re.compile(r"[a-z0-9]+")
_WORD = re.compile(r"[^\W_]+")
_HAS_CJK = re.compile(f"[{_CJK}]")


def _raw_words(folded: str) -> list[str]:
    """The words of folded text, before stemming, CJK as pairs (longer runs than ``MAX_WORD`` kept:
    callers drop them once, per distinct word)."""
    if folded.isascii():
        return _ASCII_WORD.findall(folded)
    words: list[str] = _WORD.findall(folded)
    if _HAS_CJK.search(folded) is None:
        return words
    split: list[str] = []
    for token in words:
        if token.isascii() or _HAS_CJK.search(token) is None:
            split.append(token)
            continue
        for match in _TOKEN.finditer(token):
            run = match.group("cjk")
            if run is None:
                split.append(match.group())
            elif len(run) == 1:
                split.append(run)
            else:
                split.extend(run[at : at + 2] for at in range(len(run) - 1))
    return split


def raw_words(text: str) -> list[str]:
    """The words of ``text`` as typed but folded (no stemming), stop words included."""
    return [word for word in _raw_words(fold_text(text)) if len(word) <= MAX_WORD]


def term_counts(text: str) -> Counter[str]:
    """How often each indexed term (stem) occurs in ``text``, stop words left out."""
    counts = Counter(_raw_words(fold_text(text)))
    terms = _indexed_terms()
    stemmed: dict[str, int] = {}
    for word, count in counts.items():
        term = terms.get(word)
        if term is None:
            term = _new_term(terms, word)
        if term:  # ("": a stop word, or a run too long to be a word)
            stemmed[term] = stemmed.get(term, 0) + count
    return Counter(stemmed)


def run_term_counts(runs: Mapping[str, int]) -> Counter[str]:
    """``term_counts`` of ASCII text from how often each lowered run of word characters occurs in it
    (``\\w+``, what the substring index splits text into): a run's words are its parts between ``_``.
    The same counts, with each distinct run analysed once."""
    terms = _indexed_terms()
    stemmed: dict[str, int] = {}
    for run, count in runs.items():
        for word in run.split("_") if "_" in run else (run,):
            term = terms.get(word)
            if term is None:
                if not word:
                    continue
                term = _new_term(terms, word)
            if term:
                stemmed[term] = stemmed.get(term, 0) + count
    return Counter(stemmed)


def _new_term(terms: dict[str, str], word: str) -> str:
    """``word``'s indexed term ("" for none), kept in this thread's ``terms`` (``_indexed_terms``)."""
    if len(terms) > _CACHE_LIMIT:
        terms.clear()
    term = terms[word] = "" if word in STOP_WORDS or len(word) > MAX_WORD else stem(word)
    return term


def _indexed_terms() -> dict[str, str]:
    """This thread's word -> indexed term ("" for none), beside the stemmer's own cache (which may
    hold a stop word a question looked up)."""
    found: dict[str, str] | None = getattr(_local, "terms", None)
    if found is None:
        found = _local.terms = {}
    return found


def terms_of(words: Iterable[str]) -> list[str]:
    """The distinct terms of folded words, in order, stop words left out."""
    return list(dict.fromkeys(stem(word) for word in words if word not in STOP_WORDS))


def word_spans(text: str, terms: Iterable[str], prefix: str | None = None) -> list[tuple[int, int]]:
    """Where the words of ``text`` whose stem is one of ``terms`` (or that start with ``prefix``)
    are, as spans of ``text`` itself (for marking them in a snippet)."""
    wanted = frozenset(terms)
    if not wanted and not prefix:
        return []
    starts = {term[:3] for term in wanted} | ({prefix[:3]} if prefix else set())
    if text.isascii() and all(start.isascii() and start.isalnum() for start in starts):
        # Only the words starting as a wanted one does are stemmed (the common case, and fast).
        pattern = re.compile(r"(?i)(?<![a-z0-9])(?:" + "|".join(sorted(starts, key=len, reverse=True)) + r")[a-z0-9]*")
        spans = []
        for match in pattern.finditer(text):
            word = match.group().lower()
            if stem(word) in wanted or (prefix is not None and word.startswith(prefix)):
                spans.append(match.span())
        return merged_spans(spans)
    spans = []
    for match in _TOKEN.finditer(text):
        word = fold_text(match.group())
        if match.group("cjk") is not None:
            for at in range(len(word) - 1 if len(word) > 1 else 1):
                if word[at : at + 2] in wanted or (prefix and word[at:].startswith(prefix)):
                    spans.append((match.start() + at, match.start() + min(len(word), at + 2)))
            continue
        if stem(word) in wanted or (prefix is not None and word.startswith(prefix)):
            spans.append(match.span())
    return merged_spans(spans)
