"""Other agents' sessions the settings name: each a read-only source beside the store."""

from __future__ import annotations

from pathlib import Path

from core.sessions.sources.claude import ClaudeCodeSource, claude_root
from core.sessions.sources.codex import CodexSource, codex_root
from core.sessions.sources.copilot import CopilotCliSource, copilot_root
from core.sessions.sources.gemini import GeminiCliSource, gemini_root
from core.sessions.sources.merged import ExternalSource
from core.sessions.sources.opencode import KiloSource, OpenCodeSource, kilo_root, opencode_root
from core.sessions.sources.qwen import QwenCodeSource, qwen_root
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
    if not demo or _chosen(origins["claude_root"]):
        sources.append(ClaudeCodeSource(_folder(settings.claude_root) or claude_root()))
    if not demo or _chosen(origins["codex_root"]):
        sources.append(CodexSource(_folder(settings.codex_root) or codex_root()))
    if not demo or _chosen(origins["gemini_root"]):
        sources.append(GeminiCliSource(_folder(settings.gemini_root) or gemini_root()))
    if not demo or _chosen(origins["qwen_root"]):
        sources.append(QwenCodeSource(_folder(settings.qwen_root) or qwen_root()))
    if not demo or _chosen(origins["opencode_root"]):
        sources.append(OpenCodeSource(_folder(settings.opencode_root) or opencode_root()))
    if not demo or _chosen(origins["kilo_root"]):
        sources.append(KiloSource(_folder(settings.kilo_root) or kilo_root()))
    if not demo or _chosen(origins["copilot_root"]):
        sources.append(CopilotCliSource(_folder(settings.copilot_root) or copilot_root()))
    return tuple(sources)
