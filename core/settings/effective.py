"""The settings a run uses: the declarations' defaults, under the config file's tables, under the
chosen profile, under the environment, under the command line; with the origin of each value
(``default``, ``--flag``, ``$VARIABLE``, ``FILE:LINE``), which ``sessionref config`` prints."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.agent.defaults import CompactionPolicy
from core.display import visible
from core.settings.config_file import (
    ConfigError,
    LoadedConfig,
    load_config,
    redact_conninfo,
    window_memory_path,
    within_bounds,
)
from core.settings.declared import STORE_ENV, Settings, declaration_of, declarations, value_type

if TYPE_CHECKING:
    from core.search.meaning import Embedder

Origin = str
"""Where a setting came from: ``default``, ``--flag``, ``$VARIABLE`` or ``FILE:LINE``."""

_TRUE = ("1", "true", "on", "yes")
_FALSE = ("0", "false", "off", "no")


@dataclass(frozen=True, slots=True)
class Effective:
    """The settings a run uses (``settings``, read as attributes) and the origin of each."""

    settings: Settings
    origins: dict[str, Origin]

    def __getitem__(self, key: str) -> object:
        """A setting by name (for printing them all; code reads ``settings.<name>``)."""
        return getattr(self.settings, key)

    @property
    def values(self) -> dict[str, object]:
        """Every setting by name, in declaration order."""
        return {field.name: getattr(self.settings, field.name) for field in dataclasses.fields(Settings)}


def violation(name: str, value: object) -> str | None:
    """What is wrong with ``value`` for setting ``name`` (its declaration's bounds, in words), or ``None``."""
    return None if within_bounds(name, value) else declaration_of(name).must


def _from_environment(name: str, variable: str, raw: str) -> object:
    if value_type(name) is bool:
        word = raw.lower()
        if word not in _TRUE + _FALSE:
            raise ConfigError(f"{variable} must be 0 or 1 (or true/false, on/off, yes/no), not {raw!r}")
        return word in _TRUE
    return raw


def effective_settings(config: LoadedConfig, flags: Mapping[str, object], environ: Mapping[str, str]) -> Effective:
    """Merge defaults < file < profile < environment < flags (``flags``: setting name -> the value
    given on the command line, as ``core.settings.flags.given`` reads them).

    Raises:
        ConfigError: ``--profile`` names no profile of the file, a value out of its bounds, or
            compaction's retain at or above its threshold.
    """
    values: dict[str, object] = {}
    origins: dict[str, Origin] = {}
    given_profile = flags.get("profile")
    profile_name = str(given_profile) if given_profile is not None else None
    if profile_name is not None:
        if profile_name not in config.profiles:
            known = ", ".join(sorted(config.profiles)) or "none"
            raise ConfigError(f"--profile {profile_name}: no such profile in {config.path} (profiles: {known})")
        values["profile"], origins["profile"] = profile_name, "--profile"
    elif config.default_profile is not None:
        values["profile"], origins["profile"] = config.default_profile, config.origin("default_profile")
    else:
        values["profile"], origins["profile"] = None, "default"
    profile = profile_name if profile_name is not None else config.default_profile
    for name, default, declared in declarations():
        if name == "profile":
            continue
        raw_env = environ.get(declared.env, "").strip() if declared.env is not None else ""
        if flags.get(name) is not None:
            value, origin = flags[name], declared.flag or "--" + name
            problem = violation(name, value)
            if problem is not None:
                raise ConfigError(f"{origin} must be {problem}, not {value}")
        elif declared.env is not None and raw_env:
            value, origin = _from_environment(name, declared.env, raw_env), "$" + declared.env
        elif (
            declared.profile is not None
            and profile is not None
            and ((given := config.profile_value(profile, declared.profile)) is not None)
        ):
            value, origin = given, config.origin("profiles", profile, declared.profile)
        elif declared.file is not None and (given := config.value(*declared.file)) is not None:
            value, origin = given, config.origin(*declared.file)
        else:
            value, origin = default, "default"
        values[name], origins[name] = value, origin
    if profile is not None and origins["backend"] == "default":
        values["backend"], origins["backend"] = "openai", f"profile {profile} (openai unless it says backend)"
    settings = Settings(**values)  # type: ignore[arg-type]  # each value was read as its declaration says
    if origins["max_reference_bytes"] == "default" and settings.context_fraction is not None:
        # Opt-in: each source gets a share of the model's window; an explicit max_reference_bytes wins.
        from core.agent.tokens import WindowMemory, reference_bytes_for, resolve_window

        window = resolve_window(
            settings.model,
            base_url=settings.base_url,
            configured=settings.context_window,
            memory=WindowMemory(window_memory_path()),
        )
        shared = reference_bytes_for(window.tokens, settings.context_fraction)
        settings = dataclasses.replace(settings, max_reference_bytes=shared)
        origins["max_reference_bytes"] = (
            f"{origins['context_fraction']} × the {window.tokens:,}-token window ({window.source})"
        )
    try:  # (the policy holds the bound between the two: checked here to say where each came from)
        CompactionPolicy(threshold_ratio=settings.compaction_threshold, retain_ratio=settings.compaction_retain)
    except ValueError:
        raise ConfigError(
            f"compaction retain ({settings.compaction_retain}, from {origins['compaction_retain']}) must be "
            f"below the threshold ({settings.compaction_threshold}, from {origins['compaction_threshold']})"
        ) from None
    return Effective(settings, origins)


def database_url(flag: str | None, config_path: str | None) -> str | None:
    """The database a database command works on: ``--store``, else ``$SESSIONREF_STORE``, else
    ``[store] url`` of the config file; ``None`` when none names one.

    Raises:
        ConfigError: the config file is there but cannot be used.
    """
    url = flag or os.environ.get(STORE_ENV, "").strip() or None
    if url is not None:
        return url
    value = load_config(config_path).value("store", "url")
    return value if isinstance(value, str) else None


def format_effective(config: LoadedConfig, effective: Effective) -> str:
    """The text ``sessionref config`` prints: every setting, its value and its origin."""
    lines = [f"config file: {config.path}" + ("" if config.exists else " (none; defaults apply)")]
    values = effective.values
    width = max(len(key) for key in values)
    for key, value in values.items():
        shown = declaration_of(key).unset or "-" if value is None else str(value)
        if key == "store" and value is not None:
            shown = redact_conninfo(str(value))
        lines.append(f"  {key.ljust(width)}  {shown:<40}  {effective.origins[key]}")
    lines.append(f"learned windows: {window_memory_path()}")
    return "\n".join(map(visible, lines))


def embedder_of(settings: Settings) -> Embedder | None:
    """What embeds messages for search by meaning: nothing with ``--no-meaning``, the profile's
    ``embeddings_url`` when set, else the shipped offline model."""
    from core.search.meaning import embedder_for

    url, model, key_env = settings.embeddings_url, settings.embeddings_model, settings.embeddings_key_env
    return embedder_for(settings.meaning, url, model, key_env, redact=settings.redaction)
