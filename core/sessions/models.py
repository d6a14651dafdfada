"""Pydantic models at the engine's boundaries: headers, events, config, candidates, contexts.

Python attributes are snake_case; ``to_wire()`` returns the camelCase dict of the contract with
keys in contract order and absent optionals omitted; ``Model.model_validate(wire)`` accepts it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from core.constants import DEFAULT_CANDIDATE_LIMIT, DEFAULT_MAX_REFERENCE_BYTES, MAX_REFERENCES, MAX_SAFE_INTEGER
from core.errors import INVALID_CONFIG, SessionReferenceError
from core.sessions.wire_shapes import ContentBlock

JsonValue = Any
"""A plain JSON value: dict / list / str / int / float / bool / None."""


class _WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class SessionHeader(_WireModel):
    """The immutable header of a session (CONTRACT §1)."""

    id: str
    created_at: int
    cwd: str | None = None
    version: int = 0
    parent_session: str | None = None
    seed_length: int | None = None
    delegation_depth: int = 0
    origin: str | None = None
    agent_preset: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """``{version, id, createdAt, cwd?, parentSession?, seedLength?, origin?, delegationDepth, agentPreset?}``.

        ``origin`` and ``agentPreset`` are written by newer dsh versions; they are kept so that a
        header read from such a file writes back unchanged.
        """
        wire: dict[str, Any] = {"version": self.version, "id": self.id, "createdAt": self.created_at}
        if self.cwd is not None:
            wire["cwd"] = self.cwd
        if self.parent_session is not None:
            wire["parentSession"] = self.parent_session
        if self.seed_length is not None:
            wire["seedLength"] = self.seed_length
        if self.origin is not None:
            wire["origin"] = self.origin
        wire["delegationDepth"] = self.delegation_depth
        if self.agent_preset is not None:
            wire["agentPreset"] = self.agent_preset
        return wire


class DeferredData(Protocol):
    """The ``data`` of loaded events, not decoded yet (see ``SessionEvent``): one for many events."""

    def data_of(self, seq: int) -> dict[str, JsonValue]:
        """The decoded data of the event at ``seq`` (decoded once for all, whoever asks first)."""
        ...


class SessionEvent(_WireModel):
    """One event of a session log: ``{type, seq, time, data, surfaceOp?, sourceEventSeqs?, ignorable?}``.

    ``ignorable``: dsh's envelope marker for an event of a type it need not know (dsh refuses a log
    with an unknown type unless it is so marked); sessionref writes its own notes (a hand-off) so.
    """

    type: str
    seq: int
    time: int
    data: dict[str, JsonValue]
    surface_op: str | dict[str, JsonValue] | None = None
    source_event_seqs: list[int] | None = None
    ignorable: bool = False

    if not TYPE_CHECKING:
        # A loaded event's ``data`` may still be its JSON text (``DeferredData``, kept where pydantic
        # keeps private attributes, which this model has none of): decoded when first read, so the
        # events of a load nobody reads are never built. Every method that reads the fields
        # wholesale (not through attributes) settles the event first.

        def __getattr__(self, name: str) -> Any:
            if name == "data":  # (only when it is not in the fields: deferred, or being given)
                pending = _PRIVATE_OF(self)
                fields = self.__dict__
                if pending is not None and type(pending) is not dict:
                    # Kept before the deferral is dropped (a thread reading meanwhile decodes the
                    # same object again), last among the fields: ``_settled`` puts it in its place.
                    data = fields["data"] = pending.data_of(fields["seq"])
                    _SET_PRIVATE_OF(self, None)
                    return data
                if "data" in fields:  # (another thread gave it meanwhile)
                    return fields["data"]
            return super().__getattr__(name)

        def __eq__(self, other: object) -> bool:
            self._settled()
            if isinstance(other, SessionEvent):
                other._settled()
            return super().__eq__(other)

        def __copy__(self) -> Any:
            self._settled()
            return super().__copy__()

        def __deepcopy__(self, memo: Any = None) -> Any:
            self._settled()
            return super().__deepcopy__(memo)

        def __getstate__(self) -> Any:
            self._settled()
            return super().__getstate__()

        def __iter__(self) -> Any:
            self._settled()
            return super().__iter__()

        def __repr_args__(self) -> Any:
            self._settled()
            return super().__repr_args__()

        def model_dump(self, *args: Any, **kwargs: Any) -> Any:
            self._settled()
            return super().model_dump(*args, **kwargs)

        def model_dump_json(self, *args: Any, **kwargs: Any) -> Any:
            self._settled()
            return super().model_dump_json(*args, **kwargs)

    def _settled(self) -> None:
        """Decode the event's ``data`` now if it was deferred, and put it in its place among the
        fields (serializers follow their order)."""
        fields = self.__dict__
        if next(islice(fields, 3, 4), "data") != "data":
            _ = self.data  # (kept among the fields, last)
            _SET_DICT_OF(self, {name: fields[name] for name in _EVENT_ORDER})

    def to_wire(self) -> dict[str, Any]:
        """The event exactly as CONTRACT §1 spells it."""
        wire: dict[str, Any] = {"type": self.type, "seq": self.seq, "time": self.time, "data": self.data}
        if self.surface_op is not None:
            wire["surfaceOp"] = self.surface_op
        if self.source_event_seqs is not None:
            wire["sourceEventSeqs"] = self.source_event_seqs
        if self.ignorable:
            wire["ignorable"] = True
        return wire


_CONFIG_KEYS = {
    "max_references": "maxReferences",
    "candidate_limit": "candidateLimit",
    "max_reference_bytes": "maxReferenceBytes",
}


class ReferenceConfig(_WireModel):
    """Service configuration (CONTRACT §10); every value is a positive safe integer.

    Raises:
        SessionReferenceError: ``SESSION_REFERENCE_INVALID_CONFIG`` naming the offending key.
    """

    max_references: int = MAX_REFERENCES
    candidate_limit: int = DEFAULT_CANDIDATE_LIMIT
    max_reference_bytes: int = DEFAULT_MAX_REFERENCE_BYTES

    @model_validator(mode="before")
    @classmethod
    def _check(cls, raw: Any) -> Any:
        if not isinstance(raw, Mapping):
            raise SessionReferenceError("session-reference: config must be a mapping", INVALID_CONFIG)
        by_wire = {wire: name for name, wire in _CONFIG_KEYS.items()}
        values: dict[str, int] = {}
        for key, value in raw.items():
            name = key if key in _CONFIG_KEYS else by_wire.get(key)
            if name is None:
                raise SessionReferenceError(f"session-reference: unknown config key {key!r}", INVALID_CONFIG)
            wire_name = _CONFIG_KEYS[name]
            if value is None:
                continue
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_SAFE_INTEGER:
                raise SessionReferenceError(
                    f"session-reference: {wire_name} must be a positive safe integer", INVALID_CONFIG
                )
            values[name] = value
        if values.get("max_references", MAX_REFERENCES) > MAX_REFERENCES:
            raise SessionReferenceError(
                f"session-reference: maxReferences must not exceed {MAX_REFERENCES}", INVALID_CONFIG
            )
        return values

    def to_wire(self) -> dict[str, Any]:
        """``{maxReferences, candidateLimit, maxReferenceBytes}``."""
        return {
            "maxReferences": self.max_references,
            "candidateLimit": self.candidate_limit,
            "maxReferenceBytes": self.max_reference_bytes,
        }


class Candidate(_WireModel):
    """A session the user may reference, as ``list_candidates`` returns it (CONTRACT §3)."""

    session_id: str
    label: str
    cwd: str | None = None
    created_at: int

    def to_wire(self) -> dict[str, Any]:
        """``{sessionId, label, cwd?, createdAt}``."""
        wire: dict[str, Any] = {"sessionId": self.session_id, "label": self.label}
        if self.cwd is not None:
            wire["cwd"] = self.cwd
        wire["createdAt"] = self.created_at
        return wire


class HookContext(_WireModel):
    """A context attached to a prompt; ``placement == "prompt-prefix"`` is baked into it (CONTRACT §7-§8)."""

    source: dict[str, JsonValue]
    content: list[dict[str, JsonValue]]
    placement: str | None = None
    meta: JsonValue = None

    @property
    def blocks(self) -> list[ContentBlock]:
        """``content`` as the content blocks it holds (checked as plain JSON when it was made)."""
        return cast("list[ContentBlock]", self.content)

    def to_wire(self) -> dict[str, Any]:
        """``{source, content, placement?, meta?}``."""
        wire: dict[str, Any] = {"source": self.source, "content": self.content}
        if self.placement is not None:
            wire["placement"] = self.placement
        if self.meta is not None:
            wire["meta"] = self.meta
        return wire


class SessionRecord(_WireModel):
    """One listed session: its header and whether it is live in memory and/or persisted on disk."""

    header: SessionHeader
    live: bool = False
    persisted: bool = False
    owner: str | None = None
    """Who the session belongs to when that is not the user (a teammate's session in a shared
    database store: read and referenced, never written); ``None`` for the user's own."""


class SurfaceSnapshot(_WireModel):
    """What ``read_surface`` returns: the header, the last raw seq and the folded current surface."""

    session: SessionHeader
    captured_through_seq: int | None = Field(default=None)
    events: list[SessionEvent]


class TitleSnapshot(_WireModel):
    """The latest ``session/title`` of a raw log."""

    title: str
    message_seqs: list[int]
    event_seq: int
    updated_at: int


class PreparedMessage(_WireModel):
    """What ``prepare`` returns: detached content and zero or one aggregated context."""

    content: list[dict[str, JsonValue]]
    """The prompt's blocks (checked as plain JSON when read back: a block of any type stays as it is)."""
    contexts: list[HookContext]

    @classmethod
    def of(cls, content: list[ContentBlock], contexts: list[HookContext]) -> PreparedMessage:
        """What ``prepare`` built (no check: it built plain JSON)."""
        return cls.model_construct(content=cast("list[dict[str, JsonValue]]", content), contexts=contexts)

    @property
    def blocks(self) -> list[ContentBlock]:
        """``content`` as the content blocks it holds, for the agent loop."""
        return cast("list[ContentBlock]", self.content)

    def to_wire(self) -> dict[str, Any]:
        """``{content, contexts: [...]}``."""
        return {"content": self.content, "contexts": [context.to_wire() for context in self.contexts]}


class ProjectedItem(NamedTuple):
    """One projected message of a source (CONTRACT §5). A named tuple: sources have many."""

    role: str
    text: str
    checkpoint: bool


@dataclass(frozen=True, slots=True)
class RetainedSource:
    """One source fitted into its budget: the data object, its stats and its serialised size."""

    data: dict[str, Any]
    stats: dict[str, Any]
    size: int
    """UTF-8 bytes of the tag-safe JSON of ``data`` (always <= the budget)."""
    kept: tuple[int, ...] = ()
    """The positions (in the source's projected conversation, 0 the first) of the messages
    ``data["conversation"]`` holds, in order."""
    cut: tuple[int, ...] = ()
    """Those of ``kept`` whose text was cut to fit (it ends with the omission notice)."""
    masked: tuple[tuple[str, int], ...] = ()
    """How many secrets of each kind were masked in the source's conversation (``core.secrets``)."""


@dataclass(frozen=True, slots=True)
class BakedPrompt:
    """Result of ``bake_prompt_message``: the prompt event payload and the contexts not baked in."""

    data: dict[str, Any]
    separate_contexts: list[HookContext]


_EVENT_FIELDS = frozenset(SessionEvent.model_fields)
_EVENT_ORDER = tuple(SessionEvent.model_fields)
"""The fields in their declared order (``data`` the fourth)."""
_PRIVATE_OF = next(
    vars(base)["__pydantic_private__"].__get__ for base in SessionEvent.__mro__ if "__pydantic_private__" in vars(base)
)
_set = object.__setattr__
_new = object.__new__


def trusted_event(
    type: str,
    seq: int,
    time: int,
    data: dict[str, JsonValue],
    surface_op: str | dict[str, JsonValue] | None = None,
    source_event_seqs: list[int] | None = None,
    ignorable: bool = False,
) -> SessionEvent:
    """A ``SessionEvent`` built without validation, for values the caller has already checked.

    Equivalent to ``SessionEvent.model_construct`` for a full set of fields, at a fraction of its
    cost; stores use it on hot paths (loading logs of tens of thousands of events).
    """
    event = object.__new__(SessionEvent)
    _set(
        event,
        "__dict__",
        {
            "type": type,
            "seq": seq,
            "time": time,
            "data": data,
            "surface_op": surface_op,
            "source_event_seqs": source_event_seqs,
            "ignorable": ignorable,
        },
    )
    _set(event, "__pydantic_fields_set__", set(_EVENT_FIELDS))
    _set(event, "__pydantic_extra__", None)
    _set(event, "__pydantic_private__", None)
    return event


_HEADER_FIELDS = set(SessionHeader.model_fields)
_RECORD_FIELDS = set(SessionRecord.model_fields)
"""Shared by every model built by ``trusted_header``/``trusted_record``: the models are frozen, so
pydantic never adds to them (``model_copy`` copies them)."""


def slot_setters(model: type[BaseModel]) -> tuple[Any, Any, Any, Any]:
    """The setters of a model's four instance slots (``__dict__``, ``__pydantic_fields_set__``,
    ``__pydantic_extra__``, ``__pydantic_private__``), looked up once through the MRO, as
    ``object.__setattr__`` does on every call (a listing of 100,000 sessions makes 800,000 calls,
    a 20,000-event load 80,000)."""
    names = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
    found = [next(vars(base)[name].__set__ for base in model.__mro__ if name in vars(base)) for name in names]
    return found[0], found[1], found[2], found[3]


_SET_DICT_OF, _, _, _SET_PRIVATE_OF = slot_setters(SessionEvent)
_HEADER_DICT, _HEADER_SET, _HEADER_EXTRA, _HEADER_PRIVATE = slot_setters(SessionHeader)
_RECORD_DICT, _RECORD_SET, _RECORD_EXTRA, _RECORD_PRIVATE = slot_setters(SessionRecord)


def trusted_header(
    id: str,
    created_at: int,
    cwd: str | None,
    version: int,
    parent_session: str | None,
    seed_length: int | None,
    delegation_depth: int,
    origin: str | None,
    agent_preset: str | None,
) -> SessionHeader:
    """A ``SessionHeader`` built without validation, from values of the right types (the listing
    cache decodes them with a typed schema): a cold listing of 100,000 sessions builds 100,000."""
    header = _new(SessionHeader)
    _HEADER_DICT(
        header,
        {
            "id": id,
            "created_at": created_at,
            "cwd": cwd,
            "version": version,
            "parent_session": parent_session,
            "seed_length": seed_length,
            "delegation_depth": delegation_depth,
            "origin": origin,
            "agent_preset": agent_preset,
        },
    )
    _HEADER_SET(header, _HEADER_FIELDS)
    _HEADER_EXTRA(header, None)
    _HEADER_PRIVATE(header, None)
    return header


def trusted_record(header: SessionHeader, live: bool, persisted: bool, owner: str | None = None) -> SessionRecord:
    """A ``SessionRecord`` built without validation (see ``trusted_header``)."""
    record = _new(SessionRecord)
    _RECORD_DICT(record, {"header": header, "live": live, "persisted": persisted, "owner": owner})
    _RECORD_SET(record, _RECORD_FIELDS)
    _RECORD_EXTRA(record, None)
    _RECORD_PRIVATE(record, None)
    return record


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session as a store's ``read_stored`` read it: its revision, surface and latest title."""

    revision: tuple[int, int, int, int] | int
    """A file's revision (a folder store); a database store's revision number there."""
    surface: SurfaceSnapshot
    title: TitleSnapshot | None


@dataclass
class StoreProblem:
    """A session file that could not be listed or read, with the reason."""

    path: Path
    message: str
    code: str | None = None
    """``SESSION_QUERY_WRONG_ENCODING`` for a readable file of the other encoding; else ``None``."""
