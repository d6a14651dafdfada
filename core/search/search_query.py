"""What a search asks for: the query language every search speaks (the picker, the sidebar, the
model's ``search_sessions``, ``sessionref mcp``, ``sessionref search``).

- **Words**, in any order: a session holding any of them is found, ranked by how well it matches
  (``fsync crash`` finds a session that says "crashed ... fsync"). Case, accents and word forms
  are folded (``words.py``); the commonest English words are ignored, so a whole question works.
- ``"quoted words"`` must occur as written (case-insensitively): a phrase, matched as a substring.
- An **identifier** (a word with ``_``, ``.``, ``-``, ``/``, ``:``, ``#`` or ``\\`` inside it, or a
  ``--flag``) is looked for as typed, as a substring: ``retry_budget.py``, ``--max-references``,
  ``SESSION_REFERENCE_BUDGET_EXCEEDED``. A session holding it ranks high; it is not required.
- While typing in the picker, the **last word** matches as a prefix (``corru`` finds "corrupted").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.search.matching import MIN_BODY_QUERY, fold
from core.search.words import MAX_WORD, STOP_WORDS, fold_text, raw_words, stem, terms_of

_QUOTED = re.compile(r'"([^"]*)"?')
_EDGE = "\"'`()[]{}<>,;!?。，、？！：；（）「」"
_IDENTIFIER = re.compile(r"[\w\d][_./:#\\-]+[\w\d]|^--?[\w\d]")
MAX_TERMS = 32
"""Words of a query used at most (a pasted page must not turn into a thousand lookups)."""
MIN_WORD_STEM = 4
"""A word being typed whose stem is shorter is only a prefix (see ``typed_stem``)."""
MIN_PREFIX = 2
"""A word being typed matches as a prefix from this many characters."""


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A parsed query (see the module docstring).

    ``text`` is the whole query folded as titles are matched (``matching.fold``); ``terms`` the
    indexed forms (stems) of its words; ``prefix`` the folded word being typed, if it is to match
    as a prefix; ``phrases`` the folded quoted phrases (required); ``literals`` the folded
    identifiers (substring matches, not required).
    """

    text: str
    terms: tuple[str, ...] = ()
    prefix: str | None = None
    phrases: tuple[str, ...] = ()
    literals: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Whether nothing searchable was asked (an empty query lists every session)."""
        return not (self.terms or self.prefix or self.phrases or self.literals)

    @property
    def needles(self) -> tuple[str, ...]:
        """What must be found as a substring: the phrases, then the identifiers."""
        return self.phrases + self.literals

    @property
    def words(self) -> tuple[str, ...]:
        """The terms, with the stem of the word being typed."""
        stemmed = typed_stem(self.prefix) if self.prefix is not None else None
        if stemmed is None:
            return self.terms
        return tuple(dict.fromkeys((*self.terms, stemmed)))


def typed_stem(prefix: str) -> str | None:
    """The stem of the word being typed, if it is taken as a complete word too (``corrupting`` ->
    ``corrupt``): from ``MIN_WORD_STEM`` letters on, as ``webs`` is more likely the start of
    ``website`` than the word ``web``."""
    stemmed = stem(prefix)
    return stemmed if len(stemmed) >= MIN_WORD_STEM else None


def parse_query(query: str, *, typing: bool = False) -> SearchQuery:
    """``query`` in the search language; ``typing``: the last word is still being typed (the picker)
    and matches as a prefix unless a space or a quote follows it."""
    text = fold(query or "")
    phrases: list[str] = []
    words: list[str] = []
    literals: list[str] = []
    rest = query or ""
    for match in _QUOTED.finditer(rest):
        phrase = fold(match.group(1)).strip()
        if len(phrase) >= MIN_BODY_QUERY and phrase not in phrases:
            phrases.append(phrase)
        elif phrase:
            words.extend(raw_words(phrase))
    unquoted = _QUOTED.sub(" ", rest)
    for token in unquoted.split():
        token = token.strip(_EDGE).rstrip(".:")
        if not token:
            continue
        if _is_literal(token):
            literal = fold(token)
            if literal not in literals:
                literals.append(literal)
            continue
        words.extend(raw_words(token))
    # A phrase's or an identifier's words rank too: they find the sessions to check it in first.
    support = [word for needle in (*phrases, *literals) for word in raw_words(needle)]
    prefix = None
    ends_open = typing and unquoted.strip() and not (query or "").endswith((" ", '"', "\t", "\n"))
    last_token = unquoted.split()[-1].strip(_EDGE) if ends_open else ""
    if ends_open and words and last_token and not _is_literal(last_token):
        last = words[-1]
        if len(last) >= MIN_PREFIX and not last.isdigit():
            prefix = last
            words = words[:-1]
    terms = terms_of(words)
    terms += [term for term in terms_of(support) if term not in terms]
    if not terms and words and prefix is None and not literals and not phrases:
        # Only common words ("how do we"): search them after all (titles, the substring index).
        terms = [stem(word) for word in dict.fromkeys(words) if len(word) <= MAX_WORD]
    # A single letter, digit or character tells no session apart (CJK is indexed in pairs).
    terms = [term for term in terms if len(term) > 1][:MAX_TERMS]
    if prefix is not None and prefix in STOP_WORDS and terms:
        prefix = None  # "... and" while typing the next word: nothing to expand yet
    return SearchQuery(text, tuple(terms), prefix, tuple(phrases), tuple(literals[:MAX_TERMS]))


def _is_literal(token: str) -> bool:
    """An identifier, a path or a flag: looked for as typed."""
    if len(token) < MIN_BODY_QUERY or len(token) > 200:
        return False
    if _IDENTIFIER.search(token) is None:
        return False
    return fold_text(token) != " ".join(raw_words(token))  # something besides letters and digits
