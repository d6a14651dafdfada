"""JavaScript-exact JSON and UTF-8 byte counting (CONTRACT §11).

Python strings are sequences of code points, JavaScript strings are sequences of UTF-16 units.
Two facts bridge them here: a surrogate pair spelt as two Python code points is the astral
character JavaScript would see, and a lone surrogate is what JavaScript calls an ill-formed string
(``JSON.stringify`` escapes it as ``\\udxxx``; ``Buffer.byteLength`` counts it as U+FFFD, 3 bytes).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from core.constants import OMISSION_NOTICE_HEAD, OMISSION_NOTICE_TAIL
from core.errors import SessionrefError

_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True)


def join_surrogate_pairs(text: str) -> str:
    """Return ``text`` with every adjacent high+low surrogate pair joined into one code point.

    Lone surrogates are left in place. Strings without a pair are returned as they are (found by
    one regex pass in C, so a megabyte of lone surrogates costs milliseconds).
    """
    if not _PAIR.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def to_well_formed(text: str) -> str:
    """JavaScript's ``String.prototype.toWellFormed``: pairs joined, lone surrogates become U+FFFD."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", join_surrogate_pairs(text))


def utf8_encode(text: str) -> bytes:
    """UTF-8 bytes of ``text`` as JavaScript's ``Buffer.from(text, "utf8")`` produces them."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return to_well_formed(text).encode("utf-8")


def utf8_length(text: str) -> int:
    """UTF-8 byte length following JavaScript's ``Buffer.byteLength`` (a lone surrogate counts 3)."""
    if text.isascii():
        return len(text)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        # Every surrogate is 3 bytes under ``surrogatepass``; a lone one is 3 in JavaScript too
        # (U+FFFD) and a pair is 4, not 6. Both counts run in C, whatever the number of surrogates.
        return len(text.encode("utf-8", "surrogatepass")) - 2 * _PAIR.subn("", text)[1]


def omission_notice(omitted: int) -> str:
    """The notice that ends a text cut by ``omitted`` UTF-8 bytes (CONTRACT §6)."""
    return f"{OMISSION_NOTICE_HEAD}{omitted}{OMISSION_NOTICE_TAIL}"


def _js_number(value: float) -> str:
    """ECMAScript ``Number::toString`` for a finite float; NaN and infinities become ``null``."""
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    sign = "-" if value < 0 else ""
    # repr() is the shortest round-tripping decimal, the same digits ECMAScript chooses.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    k = len(digits)
    n = k + int(exponent)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def _has_float(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float:
            return True
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
    return False


def _encode_with_floats(value: Any) -> str:
    """Slow path for values holding floats: the C encoder cannot spell numbers the JavaScript way."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _ENCODER.encode(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"keys must be str, not {type(key).__name__}")
            parts.append(_ENCODER.encode(key) + ":" + _encode_with_floats(item))
        return "{" + ",".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_encode_with_floats(item) for item in value) + "]"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def js_json_stringify(value: Any) -> str:
    """Serialise ``value`` exactly as JavaScript's ``JSON.stringify`` would (CONTRACT §11).

    Compact separators, insertion-ordered keys, raw non-ASCII, lower-case ``\\u00xx`` control
    escapes, lone surrogates as ``\\udxxx``, integral floats without a fraction, NaN/Infinity
    as ``null``.

    Raises:
        TypeError: ``value`` contains something that is not JSON-serializable.
    """
    try:
        if _has_float(value):
            text = _encode_with_floats(value)
        else:
            text = _ENCODER.encode(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"value is not JSON-serializable: {error}") from error
    except RecursionError as error:
        raise TypeError("value is not JSON-serializable: it is nested too deeply or is circular") from error
    if _SURROGATE.search(text):
        # Once pairs are joined every surrogate left is lone; ``backslashreplace`` writes each as
        # ``\\udxxx`` (lower-case hex), in C. Backslashes of the text itself are already ``\\\\``.
        text = join_surrogate_pairs(text).encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def stringify_tag_safe_json(value: Any) -> str:
    """``js_json_stringify(value)`` with every ``<`` written as ``\\u003c`` so no text can form a tag.

    Raises:
        TypeError: ``value`` contains something that is not JSON-serializable.
    """
    return js_json_stringify(value).replace("<", "\\u003c")


def tag_safe_json_length(value: Any) -> int:
    """UTF-8 byte length of ``stringify_tag_safe_json(value)``, without building the replaced copy."""
    text = js_json_stringify(value)
    return utf8_length(text) + 5 * text.count("<")


NOT_PLAIN_JSON = "VALUE_NOT_PLAIN_JSON"


class NotPlainJsonError(SessionrefError, ValueError):
    """A value is not plain JSON; ``path`` says where (``$.data.content[0]``). A ``SessionrefError``
    (code ``VALUE_NOT_PLAIN_JSON``) and, as before, a ``ValueError``."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} {reason}", NOT_PLAIN_JSON)
        self.path = path
        self.reason = reason


def plain_json_copy(value: Any, path: str = "$") -> Any:
    """A deep copy of ``value`` that is guaranteed plain JSON (CONTRACT §1).

    Allowed: dicts with string keys, lists (tuples become lists), strings, ints, finite floats
    other than -0, booleans and ``None``.

    Raises:
        NotPlainJsonError: naming the first offending place.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return value
    if kind is float:
        if math.isnan(value) or math.isinf(value):
            raise NotPlainJsonError(path, "is not a finite number")
        if value == 0 and math.copysign(1.0, value) < 0:
            raise NotPlainJsonError(path, "is -0, which JSON cannot represent")
        return value
    if kind is dict:
        copied: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise NotPlainJsonError(path, f"has a non-string key {key!r}")
            copied[key] = plain_json_copy(item, f"{path}.{key}")
        return copied
    if kind is list or kind is tuple:
        return [plain_json_copy(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return plain_json_copy(float(value), path)
    raise NotPlainJsonError(path, f"is a {kind.__name__}, which is not a JSON value")
