"""``config.toml``: model profiles, reference, search and compaction settings, and where each came from.

The file lives in the platform's config folder (``~/.config/sessionref/config.toml`` on Linux) or
at ``--config PATH``. Command-line flags override the file, the file overrides the defaults;
``sessionref config`` prints the effective settings with the origin of each. The file names the
environment variable that holds a key (``api_key_env``), never a key: a key in it is refused.
A bad value is one ``ConfigError`` naming the key, the file and the line. No Textual import.
"""

from __future__ import annotations

import argparse
import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core import ReferenceConfig
from core.agent.compaction import SUMMARY_MAX_CHARS
from core.agent.openai_model import DEEPSEEK_BASE_URL, DEEPSEEK_MODEL, MAX_REPLY_BYTES, REPLY_SECONDS
from core.agent.session_tools import READ_BYTES
from core.agent.tokens import WindowMemory, reference_bytes_for, resolve_window
from core.agent.tool_steps import MAX_STEPS
from core.agent.window_keeper import MAX_REASONING_CHARS
from core.display import visible

CONFIG_INVALID = "SESSIONREF_CONFIG_INVALID"


def default_config_path() -> str:
    """``config.toml`` in the platform's user config folder."""
    return os.path.join(platformdirs.user_config_dir("sessionref", appauthor=False), "config.toml")


def window_memory_path() -> str:
    """Where learned context windows are kept (the platform's user state folder)."""
    return os.path.join(platformdirs.user_state_dir("sessionref", appauthor=False), "context-windows.json")


class ConfigError(Exception):
    """A config file that cannot be used: ``str()`` is the one line to print; exit code 2."""

    code = CONFIG_INVALID


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Profile(_Strict):
    """One model profile."""

    backend: Literal["openai", "echo"] = "openai"
    model: str = Field(default=DEEPSEEK_MODEL, min_length=1)
    base_url: str = Field(default=DEEPSEEK_BASE_URL, pattern=r"^https?://")
    api_key_env: str = Field(default="DEEPSEEK_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    context_window: int | None = Field(default=None, gt=0)
    compaction_threshold: float | None = Field(default=None, gt=0, le=1)
    reply_timeout: float | None = Field(default=None, gt=0)
    max_reply_bytes: int | None = Field(default=None, gt=0)
    max_reasoning_chars: int | None = Field(default=None, gt=0)


class ReferenceSection(_Strict):
    max_reference_bytes: int | None = Field(default=None, gt=0)
    context_fraction: float | None = Field(default=None, gt=0, le=1)
    max_references: int | None = Field(default=None, ge=1, le=3)
    candidate_limit: int | None = Field(default=None, gt=0)


class SearchSection(_Strict):
    body_search: bool | None = None


class ToolsSection(_Strict):
    enabled: bool | None = None
    read_bytes: int | None = Field(default=None, ge=1024)
    max_steps: int | None = Field(default=None, ge=1)


class StoreSection(_Strict):
    url: str | None = Field(default=None, pattern=r"^postgres(ql)?://")

    @field_validator("url")
    @classmethod
    def _no_password(cls, url: str | None) -> str | None:
        if url is not None and redact_conninfo(url) != url:
            raise ValueError(
                "a password does not belong in the config file: use ~/.pgpass or $PGPASSWORD (libpq reads both)"
            )
        return url


_URL_PASSWORD = re.compile(r"^(postgres(?:ql)?://[^:/@?#]*):[^@/?#]*@")
_PARAM_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)")


def redact_conninfo(conninfo: str) -> str:
    """A database connection string with its password (URL ``user:password@`` or ``password=``
    parameter) replaced by ``***``: what may be shown or logged."""
    conninfo = _URL_PASSWORD.sub(r"\1:***@", conninfo)
    return _PARAM_PASSWORD.sub(r"\1***", conninfo)


class CompactionSection(_Strict):
    auto: bool | None = None
    threshold: float | None = Field(default=None, gt=0, le=1)
    retain: float | None = Field(default=None, ge=0, lt=1)
    max_summary_chars: int | None = Field(default=None, gt=0)


class ConfigFile(_Strict):
    """The whole file."""

    default_profile: str | None = None
    profiles: dict[str, Profile] = Field(default_factory=dict)
    reference: ReferenceSection = Field(default_factory=ReferenceSection)
    search: SearchSection = Field(default_factory=SearchSection)
    compaction: CompactionSection = Field(default_factory=CompactionSection)
    store: StoreSection = Field(default_factory=StoreSection)
    tools: ToolsSection = Field(default_factory=ToolsSection)


_SECRET_KEYS = re.compile(r"(^|_)(api_?key|key|token|secret|password)$", re.I)


def _line_of(text: str, path: tuple[str, ...]) -> int | None:
    """The line where dotted key ``path`` is set in ``text`` (best effort: tables and plain keys)."""
    table: tuple[str, ...] = ()
    header = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$")
    assignment = re.compile(r"^\s*([A-Za-z0-9_.\-\"' ]+?)\s*=")
    fallback = None
    for number, line in enumerate(text.splitlines(), 1):
        match = header.match(line)
        if match:
            table = tuple(part.strip().strip("\"'") for part in match.group(1).split("."))
            if table == path[: len(table)] and fallback is None:
                fallback = number
            continue
        match = assignment.match(line)
        if match:
            key = tuple(part.strip().strip("\"'") for part in match.group(1).split("."))
            if (*table, *key) == path[: len(table) + len(key)] and len(table) + len(key) >= len(path) - 1:
                if (*table, *key) == path:
                    return number
                fallback = fallback or number
    return fallback


@dataclass(slots=True)
class LoadedConfig:
    """A parsed config file (or none) and the line of each key it sets."""

    path: str
    exists: bool
    data: ConfigFile = field(default_factory=ConfigFile)
    text: str = ""

    def origin(self, *path: str) -> str:
        """``config.toml:LINE`` for a key the file sets."""
        line = _line_of(self.text, path)
        return f"{self.path}:{line}" if line is not None else self.path


def _error(path: str, line: int | None, key: str, message: str) -> ConfigError:
    where = f"{path} line {line}" if line is not None else path
    return ConfigError(f"{where}: {key}: {message} ({CONFIG_INVALID})")


def load_config(path: str | None = None) -> LoadedConfig:
    """Read ``path`` (default: the platform's ``config.toml``); a missing default file is no config.

    Raises:
        ConfigError: unreadable, not TOML, an unknown key, a bad value, or a key stored in the file.
    """
    explicit = path is not None
    path = os.path.abspath(path if path is not None else default_config_path())
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"{path}: no such config file ({CONFIG_INVALID})") from None
        return LoadedConfig(path, False)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file: {error.strerror} ({CONFIG_INVALID})") from None
    text = raw.decode("utf-8", "replace")
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line = re.search(r"at line (\d+)", str(error))
        where = f"{path} line {line.group(1)}" if line else path
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        raise ConfigError(f"{where}: not valid TOML: {reason} ({CONFIG_INVALID})") from None
    for name, profile in (parsed.get("profiles") or {}).items() if isinstance(parsed.get("profiles"), dict) else ():
        for key in profile if isinstance(profile, dict) else ():
            if _SECRET_KEYS.search(key):
                dotted = ("profiles", name, key)
                raise _error(
                    path,
                    _line_of(text, dotted),
                    ".".join(dotted),
                    "keys are never stored here: put the key in an environment variable and name it with api_key_env",
                )
    try:
        data = ConfigFile.model_validate(parsed)
    except ValidationError as error:
        first = error.errors()[0]
        loc = tuple(str(part) for part in first["loc"])
        message = first["msg"].replace("Extra inputs are not permitted", "unknown key")
        if first["type"] == "extra_forbidden":
            message = "unknown key"
        raise _error(path, _line_of(text, loc), ".".join(loc), message) from None
    if data.default_profile is not None and data.default_profile not in data.profiles:
        raise _error(
            path,
            _line_of(text, ("default_profile",)),
            "default_profile",
            f"no profile named {data.default_profile!r} (profiles: {', '.join(sorted(data.profiles)) or 'none'})",
        )
    return LoadedConfig(path, True, data, text)


Origin = str
"""Where a setting came from: ``default``, ``--flag``, ``$VARIABLE`` or ``FILE:LINE``."""


@dataclass(slots=True)
class Effective:
    """The settings the app runs with, and the origin of each (``sessionref config`` prints them)."""

    values: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, Origin] = field(default_factory=dict)

    def set(self, key: str, value: Any, origin: Origin) -> None:
        self.values[key] = value
        self.origins[key] = origin

    def __getitem__(self, key: str) -> Any:
        return self.values[key]


def database_url(flag: str | None, config_path: str | None) -> str | None:
    """The database a database command works on: ``--store``, else ``$SESSIONREF_STORE``, else
    ``[store] url`` of the config file; ``None`` when none names one.

    Raises:
        ConfigError: the config file is there but cannot be used.
    """
    url = flag or os.environ.get("SESSIONREF_STORE", "").strip() or None
    return url if url is not None else load_config(config_path).data.store.url


def add_database_options(parser: argparse.ArgumentParser) -> None:
    """``--store`` and ``--config``, for a command that works on the team store."""
    parser.add_argument("--store", metavar="URL", help="the database (default: $SESSIONREF_STORE, else the config)")
    parser.add_argument("--config", metavar="PATH", help="the config file (default: the platform's config.toml)")


def required_database_url(parser: argparse.ArgumentParser, args: argparse.Namespace, missing: str) -> str:
    """The database a command's ``--store`` / ``--config`` name (``database_url``); a config file
    that cannot be used, or no database at all (``missing`` says what to give), exits 2 in one line."""
    try:
        url = database_url(args.store, args.config)
    except ConfigError as error:
        parser.exit(2, f"{parser.prog}: {visible(str(error))}\n")
    if url is None:
        parser.error(missing)
    return url


def reference_config(settings: Effective) -> ReferenceConfig:
    """The engine's reference limits from the effective settings.

    Raises:
        SessionReferenceError: a limit the engine refuses (its code says which).
    """
    limits = ("max_reference_bytes", "max_references", "candidate_limit")
    return ReferenceConfig.model_validate({key: settings[key] for key in limits})


def effective_settings(config: LoadedConfig, flags: dict[str, Any], environ: dict[str, str]) -> Effective:
    """Merge defaults < file < flags (``flags`` holds only the options given on the command line).

    Raises:
        ConfigError: ``--profile`` names no profile of the file.
    """
    data = config.data
    out = Effective()
    profile_name = flags.get("profile")
    if profile_name is not None:
        if profile_name not in data.profiles:
            known = ", ".join(sorted(data.profiles)) or "none"
            raise ConfigError(f"--profile {profile_name}: no such profile in {config.path} (profiles: {known})")
        out.set("profile", profile_name, "--profile")
    elif data.default_profile is not None:
        out.set("profile", data.default_profile, config.origin("default_profile"))
    else:
        out.set("profile", None, "default")
    name = out["profile"]
    profile = data.profiles[name] if name is not None else None

    def pick(key: str, flag: str | None, section: tuple[str, ...], value: Any, default: Any) -> None:
        if flag is not None and flags.get(flag) is not None:
            out.set(key, flags[flag], "--" + flag.replace("_", "-"))
        elif value is not None:
            out.set(key, value, config.origin(*section))
        else:
            out.set(key, default, "default")

    fields = profile.model_fields_set if profile is not None else set()

    def from_profile(attribute: str) -> Any:
        return getattr(profile, attribute) if profile is not None and attribute in fields else None

    where = ("profiles", name or "")
    pick("backend", "backend", (*where, "backend"), from_profile("backend"), "echo" if profile is None else "openai")
    if out.origins["backend"] == "default" and profile is not None:
        out.origins["backend"] = f"profile {name} (openai unless it says backend)"
    pick("model", "model_name", (*where, "model"), from_profile("model"), DEEPSEEK_MODEL)
    pick("base_url", "base_url", (*where, "base_url"), from_profile("base_url"), DEEPSEEK_BASE_URL)
    pick("api_key_env", None, (*where, "api_key_env"), from_profile("api_key_env"), None)
    pick("context_window", "context_window", (*where, "context_window"), from_profile("context_window"), None)
    threshold = from_profile("compaction_threshold")
    threshold_key: tuple[str, ...] = (*where, "compaction_threshold")
    if threshold is None:
        threshold, threshold_key = data.compaction.threshold, ("compaction", "threshold")
    pick("compaction_threshold", "compaction_threshold", threshold_key, threshold, 0.8)
    pick("compaction_retain", None, ("compaction", "retain"), data.compaction.retain, 0.16)
    pick("max_summary_chars", None, ("compaction", "max_summary_chars"), data.compaction.max_summary_chars,
         SUMMARY_MAX_CHARS)  # fmt: skip
    pick("reply_timeout", "reply_timeout", (*where, "reply_timeout"), from_profile("reply_timeout"), REPLY_SECONDS)
    pick("max_reply_bytes", None, (*where, "max_reply_bytes"), from_profile("max_reply_bytes"), MAX_REPLY_BYTES)
    pick("max_reasoning_chars", None, (*where, "max_reasoning_chars"), from_profile("max_reasoning_chars"),
         MAX_REASONING_CHARS)  # fmt: skip
    auto = None if flags.get("auto_compact") is None else flags["auto_compact"]
    if auto is not None:
        out.set("auto_compact", auto, "--no-auto-compact")
    else:
        pick("auto_compact", None, ("compaction", "auto"), data.compaction.auto, True)
    reference = data.reference
    pick(
        "max_reference_bytes",
        "max_reference_bytes",
        ("reference", "max_reference_bytes"),
        reference.max_reference_bytes,
        65536,
    )
    if out.origins["max_reference_bytes"] == "default" and reference.context_fraction is not None:
        # Opt-in: each source gets a share of the model's window; an explicit max_reference_bytes wins.
        window = resolve_window(
            out["model"],
            base_url=out["base_url"],
            configured=out["context_window"],
            memory=WindowMemory(window_memory_path()),
        )
        out.set(
            "max_reference_bytes",
            reference_bytes_for(window.tokens, reference.context_fraction),
            f"{config.origin('reference', 'context_fraction')} × the {window.tokens:,}-token window ({window.source})",
        )
    pick("max_references", "max_references", ("reference", "max_references"), reference.max_references, 3)
    pick("candidate_limit", "candidate_limit", ("reference", "candidate_limit"), reference.candidate_limit, 50)
    switch = environ.get("SESSIONREF_BODY_SEARCH", "").strip().lower()
    if flags.get("body_search") is not None:
        out.set("body_search", flags["body_search"], "--no-body-search")
    elif switch:
        if switch not in ("0", "false", "off", "no", "1", "true", "on", "yes"):
            raise ConfigError(f"SESSIONREF_BODY_SEARCH must be 0 or 1 (or true/false, on/off, yes/no), not {switch!r}")
        out.set("body_search", switch in ("1", "true", "on", "yes"), "$SESSIONREF_BODY_SEARCH")
    else:
        pick("body_search", None, ("search", "body_search"), data.search.body_search, True)
    if flags.get("tools") is not None:
        out.set("tools", flags["tools"], "--no-tools")
    else:
        pick("tools", None, ("tools", "enabled"), data.tools.enabled, True)
    pick("tool_read_bytes", None, ("tools", "read_bytes"), data.tools.read_bytes, READ_BYTES)
    pick("max_steps", None, ("tools", "max_steps"), data.tools.max_steps, MAX_STEPS)
    store_env = environ.get("SESSIONREF_STORE", "").strip()
    if flags.get("store") is not None:
        out.set("store", flags["store"], "--store")
    elif store_env:
        out.set("store", store_env, "$SESSIONREF_STORE")
    else:
        pick("store", None, ("store", "url"), data.store.url, None)
    if out["compaction_retain"] >= out["compaction_threshold"]:
        raise ConfigError(
            f"compaction retain ({out['compaction_retain']}) must be below the threshold "
            f"({out['compaction_threshold']}, from {out.origins['compaction_threshold']}) ({CONFIG_INVALID})"
        )
    return out


def format_effective(config: LoadedConfig, settings: Effective) -> str:
    """The text ``sessionref config`` prints: every setting, its value and its origin."""
    lines = [f"config file: {config.path}" + ("" if config.exists else " (none; defaults apply)")]
    width = max(len(key) for key in settings.values)
    for key, value in settings.values.items():
        shown = "-" if value is None else str(value)
        if key == "api_key_env" and value is None:
            shown = "DEEPSEEK_API_KEY, else OPENAI_API_KEY"
        if key == "store":
            shown = "the JSONL store folder (--root)" if value is None else redact_conninfo(value)
        lines.append(f"  {key.ljust(width)}  {shown:<40}  {settings.origins[key]}")
    lines.append(f"learned windows: {window_memory_path()}")
    return "\n".join(map(visible, lines))
