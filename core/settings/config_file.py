"""``config.toml``: model profiles and the tables of settings, read and checked against the
declarations (``core.settings.declared``), each key remembered with its line.

The file lives in the platform's config folder (``~/.config/sessionref/config.toml`` on Linux) or
at ``--config PATH``. It names the environment variable that holds a key (``api_key_env``), never a
key: a key in it is refused, and so is a database password. A bad value is one ``ConfigError``
naming the key, the file and the line.
"""

from __future__ import annotations

import functools
import os
import re
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from core.errors import SessionrefError
from core.settings.declared import Declared, SettingValue, declaration_of, declarations, value_type

if TYPE_CHECKING:
    from pydantic import BaseModel

CONFIG_INVALID = "SESSIONREF_CONFIG_INVALID"


def default_config_path() -> str:
    """``config.toml`` in the platform's user config folder."""
    import platformdirs

    return os.path.join(platformdirs.user_config_dir("sessionref", appauthor=False), "config.toml")


def window_memory_path() -> str:
    """Where learned context windows are kept (the platform's user state folder)."""
    import platformdirs

    return os.path.join(platformdirs.user_state_dir("sessionref", appauthor=False), "context-windows.json")


class ConfigError(SessionrefError):
    """Settings that cannot be used: ``str()`` is the one line to print; exit code 2."""

    def __init__(self, message: str, code: str = CONFIG_INVALID) -> None:
        super().__init__(message, code)


_URL_PASSWORD = re.compile(r"^(postgres(?:ql)?://[^:/@?#]*):[^@/?#]*@")
_PARAM_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)")


def redact_conninfo(conninfo: str) -> str:
    """A database connection string with its password (URL ``user:password@`` or ``password=``
    parameter) replaced by ``***``: what may be shown or logged."""
    conninfo = _URL_PASSWORD.sub(r"\1:***@", conninfo)
    return _PARAM_PASSWORD.sub(r"\1***", conninfo)


# -- the file's schema, from the declarations (pydantic models, made the first time a file is read) ------


def _bounded(name: str, declared: Declared) -> tuple[Any, Any]:
    """A setting's type (optional: a key may be left out) and its bounds, for a pydantic model.

    (A field definition of pydantic's ``create_model``: a type form built at run time, which the
    type checker cannot name, hence ``Any`` here and in the models built from these.)"""
    from pydantic import Field

    bounds = {
        key: getattr(declared, key)
        for key in ("gt", "ge", "lt", "le", "min_length", "pattern")
        if getattr(declared, key) is not None
    }
    return Optional[value_type(name)], Field(default=None, **bounds)  # noqa: UP045 - a runtime type


def within_bounds(name: str, value: object) -> bool:
    """Whether ``value`` is what setting ``name`` may be: of its type (strictly: a bool is not a
    number, a number not a string) and within its declared bounds; the check the file's schema
    makes of a key (``tests/test_settings_bounds.py`` holds the two the same), without pydantic."""
    declared = declaration_of(name)
    if value is None:
        return True  # (left out: the default stands)
    if not _of_type(value_type(name), value):
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        if declared.gt is not None and not value > declared.gt:
            return False
        if declared.ge is not None and not value >= declared.ge:
            return False
        if declared.lt is not None and not value < declared.lt:
            return False
        if declared.le is not None and not value <= declared.le:
            return False
    if isinstance(value, str):
        if declared.min_length is not None and len(value) < declared.min_length:
            return False
        if declared.pattern is not None and re.search(declared.pattern, value) is None:
            return False
    return True


def _of_type(kind: object, value: object) -> bool:
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return any(_of_type(part, value) for part in typing.get_args(kind))
    if typing.get_origin(kind) is typing.Literal:
        return any(type(value) is type(choice) and value == choice for choice in typing.get_args(kind))
    if kind is type(None):
        return value is None
    if kind is bool:
        return type(value) is bool
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is str:
        return isinstance(value, str)
    return False


@functools.cache
def _models() -> tuple[type[BaseModel], type[BaseModel]]:
    """The profile model and the whole file's model."""
    from pydantic import BaseModel, ConfigDict, Field, create_model

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

    profile_fields: dict[str, Any] = {}
    tables: dict[str, dict[str, Any]] = {}
    for name, _default, declared in declarations():
        if declared.profile is not None:
            profile_fields[declared.profile] = _bounded(name, declared)
        if declared.file is not None:
            table, key = declared.file
            tables.setdefault(table, {})[key] = _bounded(name, declared)
    profile = create_model("Profile", __base__=_Strict, **profile_fields)
    file_fields: dict[str, Any] = {
        "default_profile": (Optional[str], None),  # noqa: UP045
        "profiles": (dict[str, profile], Field(default_factory=dict)),
    }
    for table, keys in tables.items():
        model = create_model(table.title() + "Table", __base__=_Strict, **keys)
        file_fields[table] = (model, Field(default_factory=model))
    return profile, create_model("ConfigFile", __base__=_Strict, **file_fields)


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
    data: BaseModel | None = None
    """The file as its schema read it (``ConfigFile``; ``None``: there is no file)."""
    text: str = ""

    @property
    def default_profile(self) -> str | None:
        """The profile used without ``--profile``."""
        value: str | None = getattr(self.data, "default_profile", None)
        return value

    @property
    def profiles(self) -> dict[str, BaseModel]:
        """The file's profiles by name."""
        value: dict[str, BaseModel] = getattr(self.data, "profiles", {})
        return value

    def value(self, table: str, key: str) -> SettingValue:
        """What the file sets ``[table] key`` to (``None``: it does not)."""
        if self.data is None:
            return None
        value: SettingValue = getattr(getattr(self.data, table), key)
        return value

    def profile_value(self, profile: str, key: str) -> SettingValue:
        """What profile ``profile`` sets ``key`` to (``None``: it does not)."""
        value: SettingValue = getattr(self.profiles[profile], key)
        return value

    def origin(self, *path: str) -> str:
        """``config.toml:LINE`` for a key the file sets."""
        line = _line_of(self.text, path)
        return f"{self.path}:{line}" if line is not None else self.path


def _error(path: str, line: int | None, key: str, message: str) -> ConfigError:
    where = f"{path} line {line}" if line is not None else path
    return ConfigError(f"{where}: {key}: {message}")


def load_config(path: str | None = None) -> LoadedConfig:
    """Read ``path`` (default: the platform's ``config.toml``); a missing default file is no config.

    Raises:
        ConfigError: unreadable, not TOML, an unknown key, a bad value, or a secret stored in the file.
    """
    explicit = path is not None
    path = os.path.abspath(path if path is not None else default_config_path())
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"{path}: no such config file") from None
        return LoadedConfig(path, False)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file: {error.strerror}") from None
    import tomllib

    text = raw.decode("utf-8", "replace")
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line = re.search(r"at line (\d+)", str(error))
        where = f"{path} line {line.group(1)}" if line else path
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(error))
        raise ConfigError(f"{where}: not valid TOML: {reason}") from None
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
    from pydantic import ValidationError

    try:
        data = _models()[1].model_validate(parsed)
    except ValidationError as error:
        first = error.errors()[0]
        loc = tuple(str(part) for part in first["loc"])
        message = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
        raise _error(path, _line_of(text, loc), ".".join(loc), message) from None
    loaded = LoadedConfig(path, True, data, text)
    url = loaded.value("store", "url")
    if isinstance(url, str) and redact_conninfo(url) != url:
        raise _error(
            path,
            _line_of(text, ("store", "url")),
            "store.url",
            "a password does not belong in the config file: use ~/.pgpass or $PGPASSWORD (libpq reads both)",
        )
    if loaded.default_profile is not None and loaded.default_profile not in loaded.profiles:
        raise _error(
            path,
            _line_of(text, ("default_profile",)),
            "default_profile",
            f"no profile named {loaded.default_profile!r} (profiles: {', '.join(sorted(loaded.profiles)) or 'none'})",
        )
    return loaded
