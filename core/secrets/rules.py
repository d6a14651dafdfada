"""What a secret looks like: the rules of Yelp's ``detect-secrets`` (its plugins' own patterns, kept
current by its maintainers) for the providers it covers, and ours for what it lacks; and what a value
must look like to be one (``random_looking``, ``readable_password``).

Why ``detect-secrets``: a maintained, widely used rule set whose plugins expose their patterns
(``denylist``), so they run inside our single-pass scanner (``core.secrets.finder``) instead of its
line-by-line engine, which is too slow for whole stores. Its keyword and high-entropy plugins are
not used: they flag git SHAs, hashes and identifiers, which must stay. What it lacks is added here:
Anthropic, DeepSeek, current OpenAI and Google API keys, GitHub fine-grained tokens, AWS secret keys
written near their key id, whole PEM private keys (also split over lines or JSON-escaped), age and
PuTTY keys. How a credential is written whatever its provider (assignments, config pairs, command
lines, headers, sentences) is ``written_rules``'.

Each rule has a ``kind`` (what the mask says: ``[redacted: <kind>]``) and a pattern whose first
non-empty group, when it has groups, is the secret (so ``password=`` and a URL's user stay).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol


class Pattern(Protocol):
    """What a rule's expression is asked: its matches between two positions (``re.Pattern``'s)."""

    def finditer(self, string: str, pos: int = ..., endpos: int = ...) -> Iterator[re.Match[str]]: ...


@dataclass(frozen=True)
class Rule:
    """One way a secret is written."""

    kind: str
    pattern: Pattern
    check: Callable[[str], bool] | None = None
    """Whether a found value really is one (entropy, structure); ``None``: every match is."""
    whole: bool = False
    """The whole match is the secret (``detect-secrets``' patterns group their prefixes)."""
    anchors: tuple[str, ...] = ()
    """Literal text every match contains (case-sensitive): only lines that hold one are looked at."""
    keywords: tuple[str, ...] = ()
    """Or lower-case words every match's line contains (lower, upper or title case)."""
    follows: str = ""
    """For a rule read at its name (an assignment, a config's pair): what must follow the keyword and
    the rest of the name it stands in (a regular expression); the pattern is then matched from the
    name's start, never searched for around it."""
    reach: int = 0
    """Characters after a needle its match may reach, over line ends (0: its line only)."""


def _library(
    kind: str, detector: type, anchors: tuple[str, ...] = (), *, only: int | None = None, keywords: tuple[str, ...] = ()
) -> list[Rule]:
    """``detect-secrets``' own patterns of one plugin (``only``: just its ``only``-th)."""
    patterns = list(detector.denylist)  # type: ignore[attr-defined]
    if only is not None:
        patterns = [patterns[only]]
    return [Rule(kind, pattern, whole=True, anchors=anchors, keywords=keywords) for pattern in patterns]


AWS_KEY_IDS = ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")

_B = r"(?<![A-Za-z0-9_\-])"
"""Not inside a longer word (``task-sk-…`` or ``disk-…`` are not keys)."""
_E = r"(?![A-Za-z0-9_\-])"


def make_rule(
    kind: str,
    pattern: str,
    check: Callable[[str], bool] | None = None,
    *,
    anchors: tuple[str, ...] = (),
    keywords: tuple[str, ...] = (),
    follows: str = "",
    reach: int = 0,
) -> Rule:
    return Rule(kind, re.compile(pattern), check, anchors=anchors, keywords=keywords, follows=follows, reach=reach)


PLACEHOLDERS = re.compile(
    r"(?i)^(?:x+|\*+|\.+|-+|_+|0+|changeme|change-me|password|secret|token|your[-_ ]?\w*|example\w*|dummy\w*|"
    r"test|testing|redacted.*|none|null|nil|true|false|undefined|todo|fixme|placeholder|"
    r"<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_]+%|\{\{.*\}\}|os\.environ.*|process\.env.*|getenv.*|env\(.*)$"
)


def entropy(value: str) -> float:
    """Shannon entropy of ``value``, in bits per character."""
    import math

    counts: dict[str, int] = {}
    for character in value:
        counts[character] = counts.get(character, 0) + 1
    length = len(value)
    return -sum(count / length * math.log2(count / length) for count in counts.values())


def random_looking(value: str) -> bool:
    """Whether an assigned value looks generated (a key), not written (a word, a path, a placeholder).
    A dotted or dashed token whose long part looks generated is one (``hvs.CAES…``, ``dp.st.prd.…``)."""
    value = value.strip("\"'`")
    if len(value) < 12 or PLACEHOLDERS.match(value) or (value.isupper() and "_" in value):
        return False
    if "." in value and "(" not in value and "/" not in value:
        parts = value.split(".")
        if any(len(part) >= 20 and _generated(part) for part in parts):
            return True
    return _generated(value)


_CODE_MARKS = frozenset("(){}[]?;,\\<>`'\"")
"""Characters of code and escapes, not of a generated value."""


def _generated(value: str) -> bool:
    if len(value) < 12 or PLACEHOLDERS.match(value) or (value.isupper() and "_" in value):
        return False
    digits = sum(c.isdigit() for c in value)
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", value) and ("_" in value or digits < 3):
        return False  # an identifier (SECRET_KEY_FALLBACKS, HTTP2SETTINGS), not a base32 seed
    if re.fullmatch(r"[a-z]+(?:[-_.][a-z]+)+", value):
        return False  # a dotted/kebab word list
    if re.search(r"[(\[{}<>]|\?\.", value) or re.fullmatch(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+", value):
        return False  # code: a call, an index, a template, an attribute chain (settings.OPENAI_KEY, data?.key)
    if "/" in value and not re.search(r"[A-Za-z0-9+/]{20,}", value):
        return False  # a path
    hexadecimal = re.fullmatch(r"[0-9a-fA-F]+", value) is not None
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value)
    # A password's symbols (``Xk9!…``) count as a kind of character; code's (a call, a brace, an escape) do not.
    symbols = not any(c in _CODE_MARKS for c in value) and any(c in "!#$%^&*@~|" for c in value)
    bits = entropy(value)
    if digits == 0 and not symbols:  # letters only: mixed case and varied enough not to be a word or a camelCase name
        return mixed and len(value) >= 20 and bits >= 4.0
    return bits >= (3.0 if hexadecimal else 3.5) and (digits >= 2 or mixed or symbols)


def generated_base64(value: str) -> bool:
    """A 40-character AWS secret: mixed case, varied (a word list or a path is not one)."""
    return entropy(value) >= 3.8 and any(c.islower() for c in value) and any(c.isupper() for c in value)


def readable_password(value: str) -> bool:
    """A password in a connection string: anything but a placeholder."""
    value = value.strip("\"'")
    return len(value) >= 4 and not PLACEHOLDERS.match(value)


def _jwt(value: str) -> bool:
    """A JSON Web Token: its first part decodes to a JSON header that names an ``alg``."""
    import base64
    import json

    head = value.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(decoded, dict) and "alg" in decoded and value.count(".") >= 2


@functools.cache
def our_rules() -> list[Rule]:
    """Every rule of ours the finder runs (``detect-secrets`` is imported here, at the first scan, not
    when the engine is)."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector

    return [
        # -- detect-secrets' own patterns --------------------------------------------------------------
        *_library("aws-access-key-id", AWSKeyDetector, AWS_KEY_IDS, only=0),
        *_library("azure-storage-key", AzureStorageKeyDetector, ("AccountKey=",)),
        *_library("discord-token", DiscordBotTokenDetector, keywords=("discord", "bot")),
        *_library("github-token", GitHubTokenDetector, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
        *_library(
            "gitlab-token",
            GitLabTokenDetector,
            (
                "glpat-",
                "gldt-",
                "glft-",
                "glsoat-",
                "glrt-",
                "GR1348941",
                "glcbt-",
                "glimt-",
                "glptt-",
                "glagent-",
                "gloas-",
            ),
        ),
        *_library("mailchimp-key", MailchimpDetector, ("-us",)),
        *_library("openai-key", OpenAIDetector, ("T3BlbkFJ",)),
        *_library("pypi-token", PypiTokenDetector, ("pypi-",)),
        *_library("sendgrid-key", SendGridDetector, ("SG.",)),
        *_library("slack-token", SlackDetector, ("xox", "XOX", "hooks.slack.com")),
        *_library("square-token", SquareOAuthDetector, ("sq0csp-",)),
        *_library("stripe-key", StripeDetector, ("k_live_",)),
        *_library("telegram-token", TelegramBotTokenDetector, (":AA",)),
        # -- what it lacks ------------------------------------------------------------------------------
        make_rule(
            "anthropic-key", _B + r"sk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_\-]{60,120}" + _E, anchors=("sk-ant-",)
        ),
        make_rule("openai-key", _B + r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{40,200}" + _E, anchors=("sk-",)),
        make_rule("openai-key", _B + r"sk-[A-Za-z0-9]{48}" + _E, anchors=("sk-",)),
        make_rule("deepseek-key", _B + r"sk-[0-9a-f]{32}" + _E, anchors=("sk-",)),
        # A JSON Web Token with its signature (detect-secrets' pattern stops before it).
        make_rule(
            "jwt",
            _B + r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,}" + _E,
            _jwt,
            anchors=("eyJ",),
        ),
        make_rule("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, anchors=("AIza",)),
        make_rule("github-token", _B + r"github_pat_[A-Za-z0-9_]{70,90}" + _E, anchors=("github_pat_",)),
        make_rule("gitlab-token", _B + r"glpat-[A-Za-z0-9_\-]{20}" + _E, anchors=("glpat-",)),
        make_rule(
            "stripe-key", _B + r"(?:sk|rk|pk)_(?:test|live)_[0-9A-Za-z]{20,99}" + _E, anchors=("_test_", "_live_")
        ),
        # (A Twilio id's own start, AC or SK, is in too many words: found by where it is written.)
        make_rule(
            "twilio-key", _B + r"(?:AC|SK)[0-9a-fA-F]{32}" + _E, keywords=("twilio", "sid", "account", "api_key")
        ),
        make_rule("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E, anchors=("npm_",)),
        make_rule("npm-token", r"_authToken\s*=\s*([^\s\"']{16,})", anchors=("_authToken",)),
        make_rule(
            "slack-webhook",
            r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]{20,}",
            anchors=("hooks.slack.com",),
        ),
        make_rule(
            "aws-secret-key",
            r"(?i)aws.{0,20}?(?:secret|key).{0,20}?[\"'=:\s]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
            keywords=("aws",),
        ),
        # An AWS secret key written on the line of its key id, before or after it.
        make_rule(
            "aws-secret-key",
            r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}[^\n]{0,200}?(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})"
            r"(?![A-Za-z0-9/+=])",
            generated_base64,
            anchors=AWS_KEY_IDS,
        ),
        make_rule(
            "aws-secret-key",
            r"(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])[^\n]{0,200}?(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",
            generated_base64,
            anchors=AWS_KEY_IDS,
        ),
        make_rule(
            "private-key",
            r"-----BEGIN[A-Z ]{0,20}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,12000}?-----END[A-Z ]{0,20}PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:[A-Za-z0-9+/=:\-\s]|\\n|\\r){0,12000})",
            anchors=("PRIVATE KEY",),
        ),
        make_rule("stripe-webhook-secret", _B + r"whsec_[A-Za-z0-9+/=]{24,}" + _E, anchors=("whsec_",)),
        make_rule("doppler-token", _B + r"dp\.st\.[a-z0-9_\-]{2,35}\.[A-Za-z0-9]{40,44}" + _E, anchors=("dp.st.",)),
        make_rule("age-key", _B + r"AGE-SECRET-KEY-1[0-9A-Z]{58}" + _E, anchors=("AGE-SECRET-KEY-1",)),
        # A PuTTY key's private part: the lines after ``Private-Lines: N``.
        make_rule(
            "private-key",
            r"Private-Lines:\s*\d+\s*(?:\\r)?(?:\n|\\n)((?:[A-Za-z0-9+/=]+(?:\r?\n|\\r?\\n)?){1,200})",
            anchors=("Private-Lines:",),
        ),
    ]
