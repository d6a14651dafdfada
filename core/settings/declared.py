"""Every setting, declared once: its name and type (a field of ``Settings``), its default, its
command-line flag, its key in the config file, the profile key that overrides it, its environment
variable, its bounds and its help.

Everything else is derived from these declarations: the command line's flags (``core.settings.flags``),
the config file's schema and its checks (``core.settings.config_file``), the merge with the origin of
each value that ``sessionref config`` prints (``core.settings.effective``), and the typed ``Settings``
the app and ``sessionref mcp`` read as attributes. Adding a setting is one field here.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Concatenate, Literal, ParamSpec, TypeVar

from core.agent.defaults import (
    DEEPSEEK_BASE_URL,
    DEEPSEEK_MODEL,
    MAX_REASONING_CHARS,
    MAX_REPLY_BYTES,
    MAX_STEPS,
    MIN_READ_BYTES,
    READ_BYTES,
    REPLY_SECONDS,
    SUMMARY_MAX_CHARS,
)
from core.constants import DEFAULT_CANDIDATE_LIMIT, DEFAULT_MAX_REFERENCE_BYTES, MAX_REFERENCES
from core.sessions.sources.registry import BY_KEY as SOURCE_AGENTS
from core.sessions.sources.registry import agent_names

Value = TypeVar("Value")
Options = ParamSpec("Options")

SettingValue = str | int | float | bool | None
"""What a setting's value may be (each setting's own type is its field's in ``Settings``)."""

BODY_SEARCH_ENV = "SESSIONREF_BODY_SEARCH"
STORE_ENV = "SESSIONREF_STORE"


@dataclass(frozen=True)
class Declared:
    """How one setting is given and checked (see the module docstring).

    ``flag`` is the command-line option: ``--no-…`` for a switch that turns an on-by-default setting
    off. ``file`` is its ``(table, key)`` in the config file, ``profile`` its key in a profile (a
    profile's value wins over the table's), ``env`` its environment variable (which wins over the
    file). ``gt``/``ge``/``lt``/``le``, ``min_length`` and ``pattern`` bound a value from any source;
    ``must`` says them in words.
    """

    help: str
    flag: str | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    file: tuple[str, str] | None = None
    profile: str | None = None
    env: str | None = None
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    min_length: int | None = None
    pattern: str | None = None
    must: str | None = None
    unset: str | None = None
    """What a value of ``None`` means, in words (``sessionref config`` shows it)."""


def _declaring(declare: Callable[Options, Declared]) -> Callable[Concatenate[Value, Options], Value]:
    """``setting``: a dataclass field whose metadata is ``declare``'s declaration, so that a setting's
    options are checked (by mypy too) against ``Declared``'s own fields."""

    def setting(default: Value, /, *args: Options.args, **options: Options.kwargs) -> Value:
        field: Value = dataclasses.field(default=default, metadata={"declared": declare(*args, **options)})
        return field

    return setting


setting = _declaring(Declared)
"""A field of ``Settings``: its default, then its ``Declared`` (help first)."""


def source_root(key: str) -> str | None:
    """The folder setting of the agent ``key`` (``core.sessions.sources.registry``), declared from its
    row: ``--<key>-root``, ``[sources] <key>``, its help and its environment."""
    agent = SOURCE_AGENTS[key]
    return setting(
        None,
        agent.help(),
        flag=agent.flag,
        metavar="DIR",
        file=("sources", agent.key),
        env=agent.env,
        min_length=1,
        must="a folder",
        unset=agent.unset,
    )


@dataclass(frozen=True, slots=True)
class _DeclaredSettings:
    """Every setting but the other agents' folders (each field declared with ``setting``)."""

    root: str | None = setting(
        None,
        "the session store folder (default: the platform's user data folder, "
        "~/.local/share/sessionref/sessions on Linux)",
        flag="--root",
        metavar="DIR",
        min_length=1,
        must="a folder",
        unset="the platform's user data folder (~/.local/share/sessionref/sessions on Linux)",
    )
    config: str | None = setting(
        None,
        "the config file, used when it exists; flags override it (default: the platform's user config "
        "folder, ~/.config/sessionref/config.toml on Linux)",
        flag="--config",
        metavar="PATH",
        min_length=1,
        must="a file's path",
        unset="the platform's user config folder (~/.config/sessionref/config.toml on Linux)",
    )
    profile: str | None = setting(
        None,
        "the model profile of the config file to use (default: its default_profile)",
        flag="--profile",
        metavar="NAME",
    )
    backend: Literal["echo", "openai"] = setting(
        "echo",
        "echo: offline model that describes what it received (default without a profile); openai: any "
        "OpenAI-compatible chat API (key from the profile's api_key_env, else DEEPSEEK_API_KEY or OPENAI_API_KEY)",
        flag="--model",
        choices=("echo", "openai"),
        profile="backend",
    )
    model: str = setting(
        DEEPSEEK_MODEL,
        f"model name for --model openai (default: {DEEPSEEK_MODEL})",
        flag="--model-name",
        metavar="NAME",
        profile="model",
        min_length=1,
        must="a model's name",
    )
    base_url: str = setting(
        DEEPSEEK_BASE_URL,
        f"API base URL for --model openai (default: {DEEPSEEK_BASE_URL})",
        flag="--base-url",
        metavar="URL",
        profile="base_url",
        pattern=r"^https?://",
        must="an http:// or https:// URL",
    )
    api_key_env: str | None = setting(
        None,
        "the environment variable that holds the API key (default: DEEPSEEK_API_KEY, else OPENAI_API_KEY)",
        profile="api_key_env",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        must="an environment variable's name",
        unset="DEEPSEEK_API_KEY, else OPENAI_API_KEY",
    )
    context_window: int | None = setting(
        None,
        "the model's context window (default: built in for DeepSeek's models, else learned from the server)",
        flag="--context-window",
        metavar="TOKENS",
        profile="context_window",
        gt=0,
        must="a positive number of tokens",
    )
    compaction_threshold: float = setting(
        0.8,
        "compact the history before a send whose request would pass this share of the window (default 0.8)",
        flag="--compaction-threshold",
        metavar="RATIO",
        file=("compaction", "threshold"),
        profile="compaction_threshold",
        gt=0,
        le=1,
        must="a ratio in (0, 1]",
    )
    compaction_retain: float = setting(
        0.16,
        "the share of the window the newest messages keep when the history is compacted (default 0.16)",
        file=("compaction", "retain"),
        ge=0,
        lt=1,
        must="a ratio in [0, 1)",
    )
    max_summary_chars: int = setting(
        SUMMARY_MAX_CHARS,
        f"the longest a compaction's summary may be, in characters (default {SUMMARY_MAX_CHARS:,})",
        file=("compaction", "max_summary_chars"),
        gt=0,
        must="a positive number of characters",
    )
    reply_timeout: float = setting(
        REPLY_SECONDS,
        "the longest one reply may take, first byte to last, before the turn ends with MODEL_TIMEOUT "
        f"keeping what arrived (default {REPLY_SECONDS:g})",
        flag="--reply-timeout",
        metavar="SECONDS",
        profile="reply_timeout",
        gt=0,
        must="a positive number of seconds",
    )
    max_reply_bytes: int = setting(
        MAX_REPLY_BYTES,
        "the most a reply may send before the turn ends keeping what arrived, in bytes",
        profile="max_reply_bytes",
        gt=0,
        must="a positive number of bytes",
    )
    max_reasoning_chars: int = setting(
        MAX_REASONING_CHARS,
        "the most of a reply's reasoning kept, in characters",
        profile="max_reasoning_chars",
        gt=0,
        must="a positive number of characters",
    )
    auto_compact: bool = setting(
        True,
        "compact only on demand (F8 or the command palette), not before sends or after a context error",
        flag="--no-auto-compact",
        file=("compaction", "auto"),
    )
    max_reference_bytes: int = setting(
        DEFAULT_MAX_REFERENCE_BYTES,
        "UTF-8 bytes one referenced session may use in the prompt (maxReferenceBytes, default 65536)",
        flag="--max-reference-bytes",
        metavar="N",
        file=("reference", "max_reference_bytes"),
        gt=0,
        must="a positive number of bytes",
    )
    context_fraction: float | None = setting(
        None,
        "instead of max_reference_bytes: the share of the model's window one referenced session may use "
        "(never less than 64 KiB)",
        file=("reference", "context_fraction"),
        gt=0,
        le=1,
        must="a ratio in (0, 1]",
    )
    max_references: int = setting(
        MAX_REFERENCES,
        "distinct sessions one message may reference (maxReferences, 1-3, default 3)",
        flag="--max-references",
        metavar="N",
        file=("reference", "max_references"),
        ge=1,
        le=MAX_REFERENCES,
        must=f"a number from 1 to {MAX_REFERENCES}",
    )
    candidate_limit: int = setting(
        DEFAULT_CANDIDATE_LIMIT,
        "sessions the @ picker lists at most (candidateLimit, default 50)",
        flag="--candidate-limit",
        metavar="N",
        file=("reference", "candidate_limit"),
        gt=0,
        must="a positive number of sessions",
    )
    body_search: bool = setting(
        True,
        "search only titles, ids and folders in the @ picker: no message index is built or read "
        f"(also {BODY_SEARCH_ENV}=0; the index is .sessionref-index in the store folder)",
        flag="--no-body-search",
        file=("search", "body_search"),
        env=BODY_SEARCH_ENV,
    )
    meaning: bool = setting(
        True,
        "search by words only: no message is embedded for search by meaning (the shipped offline "
        "model, or the profile's embeddings_url)",
        flag="--no-meaning",
        file=("search", "meaning"),
    )
    embeddings_url: str | None = setting(
        None,
        "an OpenAI-compatible embeddings API for search by meaning, e.g. http://localhost:8080/v1",
        profile="embeddings_url",
        pattern=r"^https?://",
        must="an http:// or https:// URL",
        unset="the shipped offline model",
    )
    embeddings_model: str | None = setting(
        None,
        "the embedding model embeddings_url serves",
        profile="embeddings_model",
        min_length=1,
        must="a model's name",
        unset="text-embedding-3-small",
    )
    embeddings_key_env: str | None = setting(
        None,
        "the environment variable that holds embeddings_url's API key",
        profile="embeddings_key_env",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        must="an environment variable's name",
        unset="no key sent",
    )
    tools: bool = setting(
        True,
        "do not offer the model the session tools (search_sessions, reference_session, read_session)",
        flag="--no-tools",
        file=("tools", "enabled"),
    )
    tool_read_bytes: int = setting(
        READ_BYTES,
        f"the most one read_session page holds, in bytes (at least {MIN_READ_BYTES})",
        file=("tools", "read_bytes"),
        ge=MIN_READ_BYTES,
        must=f"a number of bytes of at least {MIN_READ_BYTES}",
    )
    max_steps: int = setting(
        MAX_STEPS,
        "the most model requests one turn may make while the model calls tools",
        file=("tools", "max_steps"),
        ge=1,
        must="a positive number of steps",
    )
    store: str | None = setting(
        None,
        "keep sessions in a PostgreSQL database instead of a folder (postgresql://user@host/db; also "
        f"${STORE_ENV} or [store] url in the config file; the password comes from ~/.pgpass or $PGPASSWORD)",
        flag="--store",
        metavar="URL",
        file=("store", "url"),
        env=STORE_ENV,
        pattern=r"^(postgres(ql)?://|[A-Za-z_]+\s*=)",
        must="a postgresql:// URL or a libpq connection string (host=... dbname=...)",
        unset="the JSONL store folder (--root)",
    )
    redaction: bool = setting(
        True,
        "show nothing secret to a model, another agent or a teammate: keys, tokens and passwords in a referenced "
        "session become [redacted: <kind>] (--no-redaction sends them as they are; the preview says so)",
        flag="--no-redaction",
        file=("redaction", "enabled"),
    )
    external: bool = setting(
        True,
        f"list only this store's sessions, not other agents' ({agent_names()}); --demo lists another "
        "agent's only when its folder is given",
        flag="--no-external",
        file=("sources", "enabled"),
    )


if TYPE_CHECKING:
    Settings = _DeclaredSettings
else:
    Settings = dataclasses.make_dataclass(
        "Settings",
        [(agent.setting, str | None, source_root(agent.key)) for agent in SOURCE_AGENTS.values()],
        bases=(_DeclaredSettings,),
        frozen=True,
        slots=True,
    )
    Settings.__module__ = __name__
    Settings.__doc__ = """The settings the app and ``sessionref mcp`` run with: every declared setting, and
    one folder setting per other agent, made from its row of ``core.sessions.sources.registry`` (named
    ``<key>_root``; read as ``getattr(settings, agent.setting)``)."""


def declarations() -> list[tuple[str, object, Declared]]:
    """``(name, default, declaration)`` of every setting, in ``Settings``' order."""
    return [(field.name, field.default, field.metadata["declared"]) for field in dataclasses.fields(Settings)]


def declaration_of(name: str) -> Declared:
    """The declaration of one setting."""
    for field in dataclasses.fields(Settings):
        if field.name == name:
            return field.metadata["declared"]  # type: ignore[no-any-return]
    raise KeyError(name)


def value_type(name: str) -> object:
    """The type a setting's value has (its field's annotation, resolved)."""
    return _value_types()[name]


@functools.cache
def _value_types() -> dict[str, object]:
    # (Resolving the string annotations once: the parser, the file's schema and every merge ask.)
    return typing.get_type_hints(Settings)
