"""Finding secrets in text and masking them: ``find_secrets`` gives each secret's span and kind,
``mask_secrets`` replaces each by ``[redacted: <kind>]`` and says how many of each kind it masked.

Fast: each rule names literal text every match of it contains (``anchors``, or case-insensitive
``keywords``); one Aho-Corasick pass (``ahocorasick-rs``, the Rust ``aho-corasick`` crate with its
SIMD prefilter) finds them all, and a rule's pattern runs only
around them (a private key's, over what may be its body). A rule read at its name (an assignment, a
config's name/value pair) counts its keyword only inside a name followed as it says (by ``=`` or ``:``,
a value field...), and is matched from that name's start. A mask replaces the secret only
(``password=`` and a URL's user stay); overlapping finds keep the longer one.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass

import ahocorasick_rs

from core.secrets.rules import Rule, our_rules
from core.spans import merged_spans

MASK = "[redacted: {kind}]"
"""What a secret becomes."""

PEM_REACH = 12_000
"""Characters after a private key's header that may still be its body (a 4096-bit key is ~3,300)."""


@dataclass(frozen=True, slots=True)
class Secret:
    """One secret found: where it is (``text[start:end]``) and what kind it is."""

    start: int
    end: int
    kind: str


_NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
"""What a name is made of (``_KEYWORD``'s ``[A-Za-z0-9_.\\-]``)."""
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
"""What a key's word is made of (a match that stops inside one takes the rest of it)."""
_SURROGATE = re.compile("[\ud800-\udfff]")
_VALUE = re.compile(r"[^\s\"'`,;)}\]]*")
"""The rest of a value that ran past its window."""
UNBOUNDED = frozenset({"assigned-secret", "authorization-header", "cli-password", "said-secret"})
"""Kinds whose value is masked to its end wherever that is (an 884-character session token)."""
REACHING = frozenset({"private-key", "netrc-password"})
"""Kinds whose match may run over several lines (a key's body, a ``.netrc`` entry)."""
"""A lone surrogate: one character, replaced by one for the scan (positions stay the same)."""
BACK, AHEAD = 160, 480
"""Characters before and after an anchor a rule's match may reach (within its line)."""


@functools.cache
def _scanner() -> tuple[ahocorasick_rs.AhoCorasick, list[tuple[int, list[tuple[int, bool]]]], list[Rule]]:
    """One Aho-Corasick automaton over every rule's anchors (as written) and keywords (in lower, upper
    and title case: ``api_key``, ``API_KEY``, ``apiKey``): one pass over the text finds them all.
    With it, per needle: its length and the rules it stands for (``(rule number, is a keyword)``);
    and the rules: ours by shape, ours by where a value is written (``written_rules``), then the
    field's (``field_rules``). Made at the first scan, not at import."""
    from core.secrets.field_rules import field_rules
    from core.secrets.written_rules import written_rules

    rules = [*our_rules(), *written_rules(), *field_rules()]
    needles: dict[str, list[tuple[int, bool]]] = {}
    for number, rule in enumerate(rules):
        for anchor in rule.anchors:
            needles.setdefault(anchor, []).append((number, False))
        for keyword in rule.keywords:
            for spelling in {keyword, keyword.upper(), keyword.capitalize()}:
                needles.setdefault(spelling, []).append((number, True))
    words = sorted(needles)
    # A DFA: with the field's hundreds of keywords, a third faster over a store than the default.
    automaton = ahocorasick_rs.AhoCorasick(words, implementation=ahocorasick_rs.Implementation.DFA)
    return automaton, [(len(word), needles[word]) for word in words], rules


def _window(text: str, position: int, rule: Rule) -> tuple[int, int]:
    """Where ``rule`` may match around a needle at ``position``: its line, at most ``BACK`` before
    and ``AHEAD`` after (a private key's body, ``PEM_REACH``)."""
    line_start = text.rfind("\n", max(0, position - BACK), position) + 1
    start = max(line_start, position - BACK)
    if rule.kind in REACHING:
        return start, min(len(text), position + PEM_REACH)
    if rule.reach:
        return start, min(len(text), position + rule.reach)
    line_end = text.find("\n", position, position + AHEAD)
    return start, (line_end if line_end >= 0 else min(len(text), position + AHEAD))


def find_secrets(text: str) -> list[Secret]:
    """Every secret in ``text``, in order, none overlapping."""
    if not text:
        return []
    automaton, needles, rules = _scanner()
    windows: dict[int, list[tuple[int, int]]] = {}
    try:
        matches = automaton.find_matches_as_indexes(text, overlapping=True)
    except UnicodeEncodeError:  # a lone surrogate (JavaScript strings may hold one): scanned as U+FFFD
        matches = automaton.find_matches_as_indexes(_SURROGATE.sub("\ufffd", text), overlapping=True)
    found: list[Secret] = []
    named: set[tuple[int, int]] = set()
    for needle, position, _end in matches:
        length, users = needles[needle]
        for number, keyword in users:
            rule = rules[number]
            if keyword and rule.follows:
                # A name holding the word, followed as the rule says (by = or :, ...), read from where
                # the name starts: not a window searched for names, the same find without trying every
                # word of it.
                if (
                    _follows(rule.follows).match(text, position + length) is not None
                    and (number, position) not in named
                ):
                    named.add((number, position))
                    _named(text, position, rule, found)
                continue  # (else a word in a sentence, not a name followed by = or :)
            windows.setdefault(number, []).append(_window(text, position, rule))
    for number, spans in windows.items():
        rule = rules[number]
        for start, window_end in merged_spans(spans):
            for match in rule.pattern.finditer(text, start, window_end):
                _take(text, match, rule, window_end, found)
    return _without_overlaps(found)


@functools.cache
def _follows(expression: str) -> re.Pattern[str]:
    return re.compile(expression)


def _named(text: str, position: int, rule: Rule, found: list[Secret]) -> None:
    """What ``rule`` finds at the name holding the word at ``position``: matched from the name's
    start, or from its opening quote (JSON-escaped or not) or a Ruby symbol's colon."""
    start = position
    while start > 0 and text[start - 1] in _NAME:
        start -= 1
    starts = [start]
    if start > 0 and text[start - 1] == ":":
        start -= 1
    if start > 0 and text[start - 1] in "\"'":
        start -= 1
        if start > 0 and text[start - 1] == "\\":
            start -= 1
    if start != starts[0]:
        starts.insert(0, start)
    _line_start, end = _window(text, position, rule)
    for start in starts:
        match = rule.pattern.match(text, start, end)  # type: ignore[attr-defined]
        if match is not None:
            _take(text, match, rule, end, found)
            return


def _take(text: str, match: re.Match[str], rule: Rule, window_end: int, found: list[Secret]) -> None:
    """Keep what ``match`` of ``rule`` found, when its value passes the rule's check."""
    groups = 0 if rule.whole else match.re.groups
    group = next((index for index in range(1, groups + 1) if match.group(index)), 0)
    value = match.group(group)
    if not value or (rule.check is not None and not rule.check(value)):
        return
    start, end = match.start(group), match.end(group)
    if rule.kind not in GENERIC:  # a key's whole word: never leave a tail of it behind
        while end < len(text) and text[end] in _WORD:
            end += 1
    elif end == window_end and rule.kind in UNBOUNDED:
        rest = _VALUE.match(text, end)  # a value past the window: masked whole, however long
        end = rest.end() if rest is not None else end
    found.append(Secret(start, end, rule.kind))


GENERIC = frozenset(
    {
        "assigned-secret",
        "connection-password",
        "authorization-header",
        "url-password",
        "aws-secret-key",
        "cli-password",
        "netrc-password",
        "sas-signature",
        "said-secret",
    }
)
"""Kinds found by where a value is written, not by its own shape: a shape's kind wins on a tie."""


def _without_overlaps(found: list[Secret]) -> list[Secret]:
    """The finds in order; of two that overlap, the longer stays (on a tie, the more telling kind:
    one named by its shape, then one named by where it is written, then a bare assignment or sentence)."""
    kept: list[Secret] = []
    for secret in sorted(found, key=lambda s: (s.start, -(s.end - s.start), _vagueness(s.kind))):
        if kept and secret.start < kept[-1].end:
            last = kept[-1]
            longer = secret.end - secret.start > last.end - last.start
            same = secret.end - secret.start == last.end - last.start
            if longer or (same and _vagueness(secret.kind) < _vagueness(last.kind)):
                kept[-1] = secret
            continue
        kept.append(secret)
    return kept


def _vagueness(kind: str) -> int:
    return 2 if kind in VAGUE else 1 if kind in GENERIC else 0


VAGUE = frozenset({"assigned-secret", "said-secret"})
"""Kinds that say least: a value assigned to a secret's name, or said in a sentence."""


@dataclass(frozen=True, slots=True)
class Masked:
    """``text`` with its secrets masked, and how many of each kind were."""

    text: str
    kinds: Counter[str]


def mask_secrets(text: str, secrets: list[Secret] | None = None) -> Masked:
    """``text`` with each secret replaced by ``[redacted: <kind>]`` (the same string when none)."""
    if secrets is None:
        secrets = find_secrets(text)
    if not secrets:
        return Masked(text, Counter())
    pieces: list[str] = []
    position = 0
    for secret in secrets:
        pieces.append(text[position : secret.start])
        pieces.append(MASK.format(kind=secret.kind))
        position = secret.end
    pieces.append(text[position:])
    return Masked("".join(pieces), Counter(secret.kind for secret in secrets))
