"""Every other agent whose sessions sessionref reads, one record each (``AGENTS``).

From this table come the sources a run lists (``core.settings.sources``), each agent's folder setting
and its flag (``core.settings.declared`` makes a ``Settings`` field of each row), the two-letter badge
the app shows, the agents the ``search_sessions`` description names, the names ``doctor`` and the
hand-off use, and the rows of ``docs/other-tools.md`` (a test holds the page to the table). Adding an
agent is its reader module, one row here, and its tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from core.sessions.sources.aider import AiderSource, aider_root
from core.sessions.sources.claude import ClaudeCodeSource, claude_root
from core.sessions.sources.cline import ClineSource, cline_root
from core.sessions.sources.codex import CodexSource, codex_root
from core.sessions.sources.continue_cli import ContinueSource, continue_root
from core.sessions.sources.copilot import CopilotCliSource, copilot_root
from core.sessions.sources.gemini import GeminiCliSource, gemini_root
from core.sessions.sources.hermes import HermesSource, hermes_root
from core.sessions.sources.merged import ExternalSource
from core.sessions.sources.opencode import KiloSource, OpenCodeSource, kilo_root, opencode_root
from core.sessions.sources.openhands import OpenHandsSource, openhands_root
from core.sessions.sources.pi import PiSource, pi_root
from core.sessions.sources.qwen import QwenCodeSource, qwen_root
from core.sessions.sources.vibe import VibeSource, vibe_root


class SourceReader(Protocol):
    """An agent's reader class: its ids' ``prefix``, the agent's ``name``, and a reader of a folder."""

    prefix: str
    name: str

    def __call__(self, root: Path) -> ExternalSource: ...


@dataclass(frozen=True)
class AgentSource:
    """One agent's record: its key (the setting ``<key>_root``, the flag ``--<key>-root``, the config
    key ``[sources] <key>``), badge, where it keeps its sessions by default and the environment that
    moves it, and its reader (which says the agent's name and its ids' prefix)."""

    key: str
    badge: str
    default_help: str
    """Where its folder is by default, as the help says it (the environment first)."""
    unset: str
    """The folder when nothing in the environment names one."""
    default_root: Callable[[], Path]
    reader: SourceReader
    """Its reader, which says its ids' ``prefix`` and its ``name`` (the agent's name everywhere)."""
    env: str | None = None
    """The environment variable the setting shows as its origin, when the agent has exactly one."""
    what: str = "folder"
    held: str = "sessions"
    """What of the folder is listed, as the help says it."""

    @property
    def prefix(self) -> str:
        """What its sessions' ids start with (``claude:``), as its reader says."""
        return self.reader.prefix

    @property
    def label(self) -> str:
        """The agent's name (``Claude Code``), as its reader says."""
        return self.reader.name

    @property
    def setting(self) -> str:
        return f"{self.key}_root"

    @property
    def flag(self) -> str:
        return f"--{self.key}-root"

    def help(self) -> str:
        return f"{self.label}'s {self.what}, whose {self.held} are listed read-only (default: {self.default_help})"


AGENTS: tuple[AgentSource, ...] = (
    AgentSource(
        "claude",
        "CC",
        "$CLAUDE_CONFIG_DIR, else ~/.claude",
        "~/.claude",
        claude_root,
        ClaudeCodeSource,
        env="CLAUDE_CONFIG_DIR",
    ),
    AgentSource(
        "codex",
        "CX",
        "$CODEX_HOME, else ~/.codex",
        "~/.codex",
        codex_root,
        CodexSource,
        env="CODEX_HOME",
    ),
    AgentSource(
        "gemini",
        "GM",
        "$GEMINI_CLI_HOME/.gemini, else ~/.gemini",
        "~/.gemini",
        gemini_root,
        GeminiCliSource,
    ),
    AgentSource(
        "qwen",
        "QW",
        "$QWEN_RUNTIME_DIR, else $QWEN_HOME, else ~/.qwen",
        "~/.qwen",
        qwen_root,
        QwenCodeSource,
    ),
    AgentSource(
        "opencode",
        "OC",
        "$XDG_DATA_HOME/opencode, else ~/.local/share/opencode; $OPENCODE_DB names another database",
        "~/.local/share/opencode",
        opencode_root,
        OpenCodeSource,
        what="data folder",
        held="database's sessions",
    ),
    AgentSource(
        "kilo",
        "KL",
        "$XDG_DATA_HOME/kilo, else ~/.local/share/kilo",
        "~/.local/share/kilo",
        kilo_root,
        KiloSource,
        what="data folder",
        held="kilo.db sessions",
    ),
    AgentSource(
        "copilot",
        "CP",
        "$COPILOT_HOME, else ~/.copilot",
        "~/.copilot",
        copilot_root,
        CopilotCliSource,
        env="COPILOT_HOME",
    ),
    AgentSource(
        "pi",
        "PI",
        "$PI_CODING_AGENT_SESSION_DIR, else $PI_CODING_AGENT_DIR, else ~/.pi/agent",
        "~/.pi/agent",
        pi_root,
        PiSource,
    ),
    AgentSource(
        "continue",
        "CN",
        "$CONTINUE_GLOBAL_DIR, else ~/.continue",
        "~/.continue",
        continue_root,
        ContinueSource,
        env="CONTINUE_GLOBAL_DIR",
    ),
    AgentSource(
        "cline",
        "CL",
        "$CLINE_SESSION_DATA_DIR, else $CLINE_DATA_DIR/sessions, else $CLINE_DIR/data/sessions, "
        "else ~/.cline/data/sessions",
        "~/.cline/data/sessions",
        cline_root,
        ClineSource,
        what="sessions folder",
    ),
    AgentSource(
        "hermes",
        "HE",
        "$HERMES_HOME, else ~/.hermes",
        "~/.hermes",
        hermes_root,
        HermesSource,
        env="HERMES_HOME",
        what="home folder",
        held="state.db sessions",
    ),
    AgentSource(
        "aider",
        "AI",
        "your home folder; and the folders other sessions ran in",
        "~",
        aider_root,
        AiderSource,
        what="projects folder",
        held="projects' .aider.chat.history.md chats",
    ),
    AgentSource(
        "vibe",
        "MV",
        "$VIBE_HOME, else ~/.vibe",
        "~/.vibe",
        vibe_root,
        VibeSource,
        env="VIBE_HOME",
        what="home folder",
    ),
    AgentSource(
        "openhands",
        "OH",
        "$OPENHANDS_CONVERSATIONS_DIR, else $OPENHANDS_PERSISTENCE_DIR/conversations, else ~/.openhands/conversations",
        "~/.openhands/conversations",
        openhands_root,
        OpenHandsSource,
        what="conversations folder",
        held="conversations",
    ),
)
"""Every agent whose sessions sessionref reads, in the order they are listed and named."""

BY_KEY: dict[str, AgentSource] = {agent.key: agent for agent in AGENTS}


def agent_names() -> str:
    """The agents by name, as prose names them ("Claude Code, Codex CLI, … and GitHub Copilot CLI")."""
    labels = [agent.label for agent in AGENTS]
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def badge_of(session_id: str) -> str | None:
    """The badge of the agent a namespaced session id belongs to (``None``: not another agent's)."""
    for agent in AGENTS:
        if session_id.startswith(agent.prefix):
            return agent.badge
    return None
