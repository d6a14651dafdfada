"""A run of event rows read as envelopes: each row's fields but its ``data``, which stays JSON text
until an event's ``data`` is first read (``SessionEvent``'s deferred data).

Decoding a row's ``data`` is most of a load's cost (the messages themselves); folding the surface
needs only the envelope. The JSON is still checked whole, as strictly as a full decode: msgspec
validates what it skips (syntax, escapes, numbers; a lone surrogate escape is refused). Bytes that
are not UTF-8 can only be inside strings there (anywhere else they are not JSON), and they read as
U+FFFD when the data is decoded, as in a full decode (``json_line``). A run this reading cannot take
exactly (a row with a field no event row has, a row that is not an object, a lone surrogate)
returns ``None``: the caller reads it as plain dicts, which keeps every verdict on a damaged file
what it was.
"""

from __future__ import annotations

import bisect
import threading
from typing import Any

import msgspec

from core.collector import collector_paused
from core.folder.jsonl_header import json_line

_UNSET: Any = msgspec.UNSET


class Envelope(msgspec.Struct, forbid_unknown_fields=True):
    """A stored row's fields (an event row's, or a packed chunk row's); absent ones are ``UNSET``."""

    type: Any = _UNSET
    seq: Any = _UNSET
    time: Any = _UNSET
    data: msgspec.Raw = _UNSET
    surfaceOp: Any = _UNSET
    sourceEventSeqs: Any = _UNSET
    ignorable: Any = _UNSET
    seq0: Any = _UNSET
    time0: Any = _UNSET

    def as_row(self) -> dict[str, Any]:
        """The row as a plain dict, as a full decode gives it (its ``data`` decoded)."""
        row: dict[str, Any] = {}
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if value is not _UNSET:
                row[name] = decoded_json(value) if name == "data" else value
        return row


GROUP = 512
"""Events of one type, in a row of one run, whose data is decoded together when one is first read:
a reader of every message decodes them in runs (the cyclic collector paused once a run, not called
every few hundred objects), a reader of one decodes at most these."""

_DECODING = threading.Lock()
"""Held while a group is decoded: its values are decoded once, whoever asks first."""


class DeferredGroup:
    """The data of up to ``GROUP`` loaded events as their JSON texts, by seq (``DeferredData``):
    decoded together when one is first read. The events refer to the group, never the other way
    round (no cycle to leave for the collector), and each takes its own data when it is read."""

    __slots__ = ("raws", "seqs", "values")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.raws: list[msgspec.Raw] = []
        self.values: list[Any] | None = None

    def add(self, seq: int, raw: msgspec.Raw) -> None:
        self.seqs.append(seq)
        self.raws.append(raw)

    def full(self) -> bool:
        """Whether the loader starts another group (this one is full, or was read already)."""
        return len(self.seqs) >= GROUP or self.values is not None

    def data_of(self, seq: int) -> dict[str, Any]:
        values = self.values
        if values is None:
            with _DECODING:
                if self.values is None:
                    self.values = _decoded_many(self.raws)
                values = self.values
        data: dict[str, Any] = values[bisect.bisect_left(self.seqs, seq)]  # (seqs increase in a log)
        return data  # (an object: checked when it was read)


def _decoded_many(raws: list[msgspec.Raw]) -> list[Any]:
    """JSON texts decoded as one run of lines (each is one line: JSON escapes newlines), or one by
    one when msgspec refuses one (``decoded_json``)."""
    try:
        with collector_paused():
            values: list[Any] = _VALUES.decode_lines(b"\n".join(raws))
        if len(values) == len(raws):
            return values
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    return [decoded_json(raw) for raw in raws]


_ENVELOPES = msgspec.json.Decoder(Envelope)
_VALUES = msgspec.json.Decoder()


def decoded_json(raw: msgspec.Raw) -> Any:
    """A JSON text that msgspec skipped as valid, decoded as a log's line is (msgspec, or
    ``json_line`` for what msgspec refuses to build: numbers beyond a double, bytes that are not
    UTF-8, which read as U+FFFD)."""
    try:
        return _VALUES.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return json_line(bytes(raw))


def envelopes(content: bytes) -> list[Envelope] | None:
    """The rows of complete JSONL lines as envelopes, or ``None`` when they must be read as dicts
    (see the module docstring; the caller checks one value a line)."""
    try:
        return _ENVELOPES.decode_lines(content)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
