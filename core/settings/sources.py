"""Other agents' sessions the settings name: each a read-only source beside the store."""

from __future__ import annotations

from pathlib import Path

from core.sessions.sources.merged import ExternalSource
from core.sessions.sources.registry import AGENTS
from core.settings.effective import Effective


def _chosen(origin: str) -> bool:
    """Whether a value was given for this run (a flag or the config file, not a default or the
    agent's own environment variable)."""
    return origin != "default" and not origin.startswith("$")


def _folder(value: str | None) -> Path | None:
    """A folder setting's path (``~`` is the user's home, as the config file's examples write it)."""
    return Path(value).expanduser() if value else None


def external_sources(effective: Effective, *, demo: bool = False) -> tuple[ExternalSource, ...]:
    """The other agents' sessions to list (none with ``external`` off). The demo lists an agent's
    only when its folder was given, so that it shows what it seeded and nothing of the user's."""
    settings, origins = effective.settings, effective.origins
    if not settings.external:
        return ()
    sources: list[ExternalSource] = []
    for agent in AGENTS:
        if not demo or _chosen(origins[agent.setting]):
            folder = getattr(settings, agent.setting)
            sources.append(agent.reader(_folder(folder) or agent.default_root()))
    return tuple(sources)
