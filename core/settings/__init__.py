"""Settings: each declared once (``declared``), read from the config file (``config_file``), merged
with the environment and the command line, each with its origin (``effective``), and the flags
that give them (``flags``). The command line and ``sessionref mcp`` both read theirs here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.settings.config_file import (
    CONFIG_INVALID,
    ConfigError,
    LoadedConfig,
    default_config_path,
    load_config,
    redact_conninfo,
    window_memory_path,
)
from core.settings.declared import Settings
from core.settings.effective import Effective, effective_settings, embedder_of, format_effective
from core.settings.flags import (
    CommandTaker,
    add_database_options,
    add_setting_flags,
    given,
    required_database_url,
    source_settings,
)

if TYPE_CHECKING:
    from core.settings.run import RunConfig, run_config
    from core.settings.sources import external_sources

_LAZY = {"RunConfig": "run", "run_config": "run", "external_sources": "sources"}
"""Names whose modules import what a run needs (the agent's settings, other agents' readers): read
on first use (PEP 562), so the flags, ``--help`` and ``sessionref mcp``'s handshake never load them."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"core.settings.{module}"), name)


__all__ = [
    "CONFIG_INVALID",
    "CommandTaker",
    "ConfigError",
    "Effective",
    "LoadedConfig",
    "RunConfig",
    "Settings",
    "add_database_options",
    "add_setting_flags",
    "default_config_path",
    "effective_settings",
    "embedder_of",
    "external_sources",
    "format_effective",
    "given",
    "load_config",
    "redact_conninfo",
    "required_database_url",
    "run_config",
    "source_settings",
    "window_memory_path",
]
