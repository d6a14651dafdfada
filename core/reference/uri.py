"""The ``dsh-session:`` URI and the ``@[label](uri)`` mention codec (CONTRACT §2)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from core.constants import SESSION_REFERENCE_SCHEME
from core.errors import INVALID_REFERENCE, SessionReferenceError
from core.serialization import js_json_stringify

_PAYLOAD = re.compile(r"[A-Za-z0-9_-]+\Z")

# JavaScript's `.` (with the u flag) excludes only the four line terminators, and its `\s` is a
# fixed set that differs from Python's; both are spelt out so matching is the original's.
_JS_DOT = "[^\n\r\u2028\u2029]"
_JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_REFERENCE_PATTERN = re.compile(
    r"@\[((?:\\" + _JS_DOT + r"|[^\\\]])*)\]\((dsh-session:[^" + _JS_WHITESPACE + r")]*)\)"
    r"|(dsh-session:[A-Za-z0-9_-]+)"
)
_LABEL_ESCAPE = re.compile(r"\\(" + _JS_DOT + ")")
_LABEL_SPECIAL = re.compile(r"[\\\]]")


@dataclass(frozen=True, slots=True)
class ReferenceInput:
    """One referenced source: a session id and an optional display label."""

    session_id: str
    label: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The camelCase wire dict; ``label`` is omitted when it is ``None``."""
        wire: dict[str, Any] = {"sessionId": self.session_id}
        if self.label is not None:
            wire["label"] = self.label
        return wire

    @classmethod
    def model_validate(cls, wire: Mapping[str, Any]) -> ReferenceInput:
        """Build from a wire dict ``{"sessionId": ..., "label"?: ...}``."""
        return cls(session_id=wire["sessionId"], label=wire.get("label"))


@dataclass(frozen=True, slots=True)
class ParsedReferenceText:
    """Result of ``parse_session_reference_text``: readable text plus references in appearance order."""

    text: str
    references: list[ReferenceInput] = field(default_factory=list)


def encode_session_reference_uri(session_id: str) -> str:
    """``dsh-session:`` + base64url (no padding) of the UTF-8 of ``JSON.stringify(session_id)``."""
    payload = base64.urlsafe_b64encode(js_json_stringify(session_id).encode("utf-8"))
    return SESSION_REFERENCE_SCHEME + payload.rstrip(b"=").decode("ascii")


def _invalid_uri(uri: str) -> SessionReferenceError:
    return SessionReferenceError(f"invalid session reference URI {js_json_stringify(uri)}", INVALID_REFERENCE)


def decode_session_reference_uri(uri: str) -> str:
    """Decode a canonical ``dsh-session:`` URI back to its session id.

    Raises:
        SessionReferenceError: ``SESSION_REFERENCE_INVALID_REFERENCE`` when the scheme, the payload
            alphabet, the base64url/UTF-8/JSON decoding, the string type or the canonical re-encoding
            check fails; the underlying failure is the ``__cause__``.
    """
    if not isinstance(uri, str) or not uri.startswith(SESSION_REFERENCE_SCHEME):
        raise _invalid_uri(str(uri))
    payload = uri[len(SESSION_REFERENCE_SCHEME) :]
    if not _PAYLOAD.match(payload):
        raise _invalid_uri(uri)
    try:
        raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        parsed = json.loads(raw.decode("utf-8"))
        if not isinstance(parsed, str):
            raise TypeError("decoded session id is not a string")
        if encode_session_reference_uri(parsed) != uri:
            raise ValueError("URI is not canonical")
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError) as error:
        raise _invalid_uri(uri) from error
    return parsed


def escape_mention_label(label: str) -> str:
    """Backslash-escape every ``\\`` and ``]`` of a mention label, and nothing else."""
    return _LABEL_SPECIAL.sub(lambda match: "\\" + match.group(), label)


def unescape_mention_label(label: str) -> str:
    """Undo ``escape_mention_label``: a backslash followed by any character becomes that character."""
    return _LABEL_ESCAPE.sub(lambda match: match.group(1), label)


def format_session_reference_mention(session_id: str, label: str | None = None) -> str:
    """``@[label](dsh-session:...)``; the label defaults to the id (an empty label stays empty)."""
    visible = session_id if label is None else label
    return f"@[{escape_mention_label(visible)}]({encode_session_reference_uri(session_id)})"


def parse_session_reference_text(text: str) -> ParsedReferenceText:
    """Replace every mention and bare canonical URI by ``@label`` and collect the references.

    Raises:
        SessionReferenceError: ``SESSION_REFERENCE_INVALID_REFERENCE`` for the first match whose URI
            does not decode; no partial result is returned.
    """
    references: list[ReferenceInput] = []
    parts: list[str] = []
    position = 0
    for match in _REFERENCE_PATTERN.finditer(text):
        label_source, mention_uri, bare_uri = match.groups()
        if mention_uri is not None:
            session_id = decode_session_reference_uri(mention_uri)
            label = unescape_mention_label(label_source)
        else:
            session_id = decode_session_reference_uri(bare_uri)
            label = session_id
        references.append(ReferenceInput(session_id=session_id, label=label))
        parts.append(text[position : match.start()])
        parts.append("@" + label)
        position = match.end()
    if not references:
        return ParsedReferenceText(text=text, references=[])
    parts.append(text[position:])
    return ParsedReferenceText(text="".join(parts), references=references)


def find_mention_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of every mention or bare-URI match in ``text``, valid or not.

    Hosts use this to highlight tokens and to treat them as one unit while editing.
    """
    return [match.span() for match in _REFERENCE_PATTERN.finditer(text)]
