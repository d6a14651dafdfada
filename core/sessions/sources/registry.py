"""Every other agent whose sessions sessionref reads, one record each (``AGENTS``).

From this table come the sources a run lists (``core.settings.sources``), each agent's folder setting
and its flag (``core.settings.declared`` makes a ``Settings`` field of each row), the two-letter badge
the app shows, the agents the ``search_sessions`` description names, the names ``doctor`` and the
hand-off use, and the rows of ``docs/other-tools.md`` (a test holds the page to the table). Adding an
agent is its reader module, one row here, and its tests.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from core.sessions.sources.merged import ExternalSource


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
    label: str
    """The agent's name (``Claude Code``) everywhere; its reader's ``name`` (a test holds them equal)."""
    prefix: str
    """What its sessions' ids start with (``claude:``); its reader's ``prefix``."""
    reader_at: str
    """Its reader class, ``module:Class`` in ``core.sessions.sources`` (imported when first read)."""
    root_at: str
    """The function that finds its folder, ``module:function`` likewise."""
    default_help: str
    """Where its folder is by default, as the help says it (the environment first)."""
    unset: str
    """The folder when nothing in the environment names one."""
    env: str | None = None
    """The environment variable the setting shows as its origin, when the agent has exactly one."""
    what: str = "folder"
    held: str = "sessions"
    """What of the folder is listed, as the help says it."""

    @property
    def reader(self) -> SourceReader:
        """Its reader (imported now: the settings, ``--help`` and the tool list never need it)."""
        reader: SourceReader = _imported(self.reader_at)
        return reader

    @property
    def default_root(self) -> Callable[[], Path]:
        """Where its folder is, the environment read now."""
        root: Callable[[], Path] = _imported(self.root_at)
        return root

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
        "Claude Code",
        "claude:",
        "claude:ClaudeCodeSource",
        "claude:claude_root",
        "$CLAUDE_CONFIG_DIR, else ~/.claude",
        "~/.claude",
        env="CLAUDE_CONFIG_DIR",
    ),
    AgentSource(
        "codex",
        "CX",
        "Codex CLI",
        "codex:",
        "codex:CodexSource",
        "codex:codex_root",
        "$CODEX_HOME, else ~/.codex",
        "~/.codex",
        env="CODEX_HOME",
    ),
    AgentSource(
        "gemini",
        "GM",
        "Gemini CLI",
        "gemini:",
        "gemini:GeminiCliSource",
        "gemini:gemini_root",
        "$GEMINI_CLI_HOME/.gemini, else ~/.gemini",
        "~/.gemini",
    ),
    AgentSource(
        "qwen",
        "QW",
        "Qwen Code",
        "qwen:",
        "qwen:QwenCodeSource",
        "qwen:qwen_root",
        "$QWEN_RUNTIME_DIR, else $QWEN_HOME, else ~/.qwen",
        "~/.qwen",
    ),
    AgentSource(
        "opencode",
        "OC",
        "opencode",
        "opencode:",
        "opencode:OpenCodeSource",
        "opencode:opencode_root",
        "$XDG_DATA_HOME/opencode, else ~/.local/share/opencode; $OPENCODE_DB names another database",
        "~/.local/share/opencode",
        what="data folder",
        held="database's sessions",
    ),
    AgentSource(
        "kilo",
        "KL",
        "Kilo CLI",
        "kilo:",
        "opencode:KiloSource",
        "opencode:kilo_root",
        "$XDG_DATA_HOME/kilo, else ~/.local/share/kilo",
        "~/.local/share/kilo",
        what="data folder",
        held="kilo.db sessions",
    ),
    AgentSource(
        "copilot",
        "CP",
        "GitHub Copilot CLI",
        "copilot:",
        "copilot:CopilotCliSource",
        "copilot:copilot_root",
        "$COPILOT_HOME, else ~/.copilot",
        "~/.copilot",
        env="COPILOT_HOME",
    ),
    AgentSource(
        "pi",
        "PI",
        "pi",
        "pi:",
        "pi:PiSource",
        "pi:pi_root",
        "$PI_CODING_AGENT_SESSION_DIR, else $PI_CODING_AGENT_DIR, else ~/.pi/agent",
        "~/.pi/agent",
    ),
    AgentSource(
        "continue",
        "CN",
        "Continue",
        "continue:",
        "continue_cli:ContinueSource",
        "continue_cli:continue_root",
        "$CONTINUE_GLOBAL_DIR, else ~/.continue",
        "~/.continue",
        env="CONTINUE_GLOBAL_DIR",
    ),
    AgentSource(
        "cline",
        "CL",
        "Cline CLI",
        "cline:",
        "cline:ClineSource",
        "cline:cline_root",
        "$CLINE_SESSION_DATA_DIR, else $CLINE_DATA_DIR/sessions, else $CLINE_DIR/data/sessions, "
        "else ~/.cline/data/sessions",
        "~/.cline/data/sessions",
        what="sessions folder",
    ),
    AgentSource(
        "hermes",
        "HE",
        "Hermes Agent",
        "hermes:",
        "hermes:HermesSource",
        "hermes:hermes_root",
        "$HERMES_HOME, else ~/.hermes",
        "~/.hermes",
        env="HERMES_HOME",
        what="home folder",
        held="state.db sessions",
    ),
    AgentSource(
        "aider",
        "AI",
        "Aider",
        "aider:",
        "aider:AiderSource",
        "aider:aider_root",
        "your home folder; and the folders other sessions ran in",
        "~",
        what="projects folder",
        held="projects' .aider.chat.history.md chats",
    ),
    AgentSource(
        "vibe",
        "MV",
        "Mistral Vibe",
        "vibe:",
        "vibe:VibeSource",
        "vibe:vibe_root",
        "$VIBE_HOME, else ~/.vibe",
        "~/.vibe",
        env="VIBE_HOME",
        what="home folder",
    ),
    AgentSource(
        "openhands",
        "OH",
        "OpenHands",
        "openhands:",
        "openhands:OpenHandsSource",
        "openhands:openhands_root",
        "$OPENHANDS_CONVERSATIONS_DIR, else $OPENHANDS_PERSISTENCE_DIR/conversations, else ~/.openhands/conversations",
        "~/.openhands/conversations",
        what="conversations folder",
        held="conversations",
    ),
    AgentSource(
        "openclaw",
        "OW",
        "OpenClaw",
        "openclaw:",
        "openclaw:OpenClawSource",
        "openclaw:openclaw_root",
        "$OPENCLAW_STATE_DIR, else ~/.openclaw",
        "~/.openclaw",
        env="OPENCLAW_STATE_DIR",
        what="state folder",
        held="agents' sessions",
    ),
    AgentSource(
        "kimicode",
        "KC",
        "Kimi Code",
        "kimicode:",
        "kimi_code:KimiCodeSource",
        "kimi_code:kimi_code_root",
        "$KIMI_CODE_HOME, else ~/.kimi-code",
        "~/.kimi-code",
        env="KIMI_CODE_HOME",
        what="home folder",
    ),
    AgentSource(
        "kimi",
        "KI",
        "Kimi CLI",
        "kimi:",
        "kimi_cli:KimiCliSource",
        "kimi_cli:kimi_root",
        "$KIMI_SHARE_DIR, else ~/.kimi",
        "~/.kimi",
        env="KIMI_SHARE_DIR",
        what="share folder",
    ),
    AgentSource(
        "gptme",
        "GP",
        "gptme",
        "gptme:",
        "gptme:GptmeSource",
        "gptme:gptme_root",
        "$GPTME_LOGS_HOME, else $XDG_DATA_HOME/gptme/logs, else ~/.local/share/gptme/logs",
        "~/.local/share/gptme/logs",
        env="GPTME_LOGS_HOME",
        what="logs folder",
        held="conversations",
    ),
    AgentSource(
        "llm",
        "LM",
        "llm",
        "llm:",
        "llm:LlmSource",
        "llm:llm_root",
        "$LLM_USER_PATH, else $XDG_CONFIG_HOME/io.datasette.llm, else ~/.config/io.datasette.llm",
        "~/.config/io.datasette.llm",
        env="LLM_USER_PATH",
        what="folder",
        held="logs.db conversations",
    ),
    AgentSource(
        "codebuddy",
        "CB",
        "CodeBuddy Code",
        "codebuddy:",
        "codebuddy:CodeBuddySource",
        "codebuddy:codebuddy_root",
        "$CODEBUDDY_CONFIG_DIR, else ~/.codebuddy",
        "~/.codebuddy",
        env="CODEBUDDY_CONFIG_DIR",
    ),
    AgentSource(
        "codepuppy",
        "PU",
        "Code Puppy",
        "codepuppy:",
        "code_puppy:CodePuppySource",
        "code_puppy:code_puppy_root",
        "$XDG_CACHE_HOME/code_puppy, else ~/.code_puppy",
        "~/.code_puppy",
        what="folder",
        held="autosaved and saved sessions",
    ),
    AgentSource(
        "mini",
        "MS",
        "mini-swe-agent",
        "mini:",
        "mini_swe_agent:MiniSweAgentSource",
        "mini_swe_agent:mini_root",
        "$MSWEA_GLOBAL_CONFIG_DIR, else $XDG_CONFIG_HOME/mini-swe-agent, else ~/.config/mini-swe-agent",
        "~/.config/mini-swe-agent",
        env="MSWEA_GLOBAL_CONFIG_DIR",
        what="folder",
        held="trajectories (*.traj.json)",
    ),
    AgentSource(
        "nanocoder",
        "NC",
        "nanocoder",
        "nanocoder:",
        "nanocoder:NanocoderSource",
        "nanocoder:nanocoder_root",
        "$NANOCODER_DATA_DIR, else $XDG_DATA_HOME/nanocoder, else ~/.local/share/nanocoder",
        "~/.local/share/nanocoder",
        env="NANOCODER_DATA_DIR",
        what="data folder",
    ),
    AgentSource(
        "crush",
        "CR",
        "Crush",
        "crush:",
        "crush:CrushSource",
        "crush:crush_root",
        "$CRUSH_GLOBAL_DATA, else $XDG_DATA_HOME/crush, else ~/.local/share/crush",
        "~/.local/share/crush",
        env="CRUSH_GLOBAL_DATA",
        what="data folder",
        held="projects' crush.db sessions",
    ),
    AgentSource(
        "goose",
        "GO",
        "Goose",
        "goose:",
        "goose:GooseSource",
        "goose:goose_root",
        "$GOOSE_PATH_ROOT/data, else $XDG_DATA_HOME/goose, else ~/.local/share/goose",
        "~/.local/share/goose",
        what="data folder",
        held="sessions.db sessions",
    ),
    AgentSource(
        "cursor",
        "CU",
        "Cursor",
        "cursor:",
        "cursor:CursorSource",
        "cursor:cursor_root",
        "$XDG_CONFIG_HOME/Cursor/User, else ~/.config/Cursor/User (macOS: ~/Library/Application Support/Cursor/User)",
        "~/.config/Cursor/User",
        what="User folder",
        held="chats (globalStorage/state.vscdb)",
    ),
    AgentSource(
        "letta",
        "LE",
        "Letta Code",
        "letta:",
        "letta:LettaSource",
        "letta:letta_root",
        "$LETTA_LOCAL_BACKEND_DIR, else ~/.letta/lc-local-backend",
        "~/.letta/lc-local-backend",
        env="LETTA_LOCAL_BACKEND_DIR",
        what="local backend's folder",
        held="conversations",
    ),
    AgentSource(
        "interpreter",
        "OI",
        "Open Interpreter",
        "interpreter:",
        "open_interpreter:OpenInterpreterSource",
        "open_interpreter:open_interpreter_root",
        "$XDG_CONFIG_HOME/open-interpreter, else ~/.config/open-interpreter",
        "~/.config/open-interpreter",
        what="configuration folder",
        held="conversations",
    ),
    AgentSource(
        "amp",
        "AM",
        "Amp",
        "amp:",
        "amp:AmpSource",
        "amp:amp_root",
        "$XDG_DATA_HOME/amp, else ~/.local/share/amp",
        "~/.local/share/amp",
        what="data folder",
        held="threads",
    ),
    AgentSource(
        "droid",
        "FD",
        "Factory Droid",
        "droid:",
        "factory:FactorySource",
        "factory:factory_root",
        "~/.factory",
        "~/.factory",
    ),
    AgentSource(
        "roo",
        "RO",
        "Roo Code",
        "roo:",
        "roo:RooCodeSource",
        "roo:roo_root",
        "VS Code's User/globalStorage/rooveterinaryinc.roo-cline ($XDG_CONFIG_HOME/Code, else ~/.config/Code)",
        "~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline",
        what="extension storage",
        held="tasks",
    ),
    AgentSource(
        "clinevsc",
        "CV",
        "Cline (VS Code)",
        "clinevsc:",
        "roo:ClineExtensionSource",
        "roo:cline_extension_root",
        "VS Code's User/globalStorage/saoudrizwan.claude-dev ($XDG_CONFIG_HOME/Code, else ~/.config/Code)",
        "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev",
        what="extension storage",
        held="tasks",
    ),
    AgentSource(
        "kilocode",
        "KV",
        "Kilo Code (VS Code)",
        "kilocode:",
        "roo:KiloCodeSource",
        "roo:kilo_extension_root",
        "VS Code's User/globalStorage/kilocode.kilo-code ($XDG_CONFIG_HOME/Code, else ~/.config/Code)",
        "~/.config/Code/User/globalStorage/kilocode.kilo-code",
        what="extension storage",
        held="tasks",
    ),
    AgentSource(
        "omp",
        "OM",
        "oh-my-pi",
        "omp:",
        "pi:OhMyPiSource",
        "pi:omp_root",
        "$XDG_DATA_HOME/omp/agent when it exists, else ~/.omp/agent",
        "~/.omp/agent",
        what="agent folder",
    ),
    AgentSource(
        "zed",
        "ZD",
        "Zed",
        "zed:",
        "zed:ZedSource",
        "zed:zed_root",
        "$XDG_DATA_HOME/zed, else ~/.local/share/zed (macOS: ~/Library/Application Support/Zed)",
        "~/.local/share/zed",
        what="data folder",
        held="agent threads",
    ),
    AgentSource(
        "kiro",
        "KR",
        "Kiro CLI",
        "kiro:",
        "kiro:KiroSource",
        "kiro:kiro_root",
        "$XDG_DATA_HOME/kiro-cli, else ~/.local/share/kiro-cli (else Amazon Q Developer CLI's amazon-q beside it)",
        "~/.local/share/kiro-cli",
        what="data folder",
        held="conversations",
    ),
)
"""Every agent whose sessions sessionref reads, in the order they are listed and named."""

BY_KEY: dict[str, AgentSource] = {agent.key: agent for agent in AGENTS}


def agent_names() -> str:
    """The agents by name, as prose names them ("Claude Code, Codex CLI, … and GitHub Copilot CLI")."""
    labels = [agent.label for agent in AGENTS]
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def _imported(where: str) -> Any:
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(f"core.sessions.sources.{module}"), name)


_BADGES = {agent.prefix: agent.badge for agent in AGENTS}
_ALL_PREFIXES_END_WITH_A_COLON = all(agent.prefix.endswith(":") and agent.prefix.count(":") == 1 for agent in AGENTS)


def badge_of(session_id: str) -> str | None:
    """The badge of the agent a namespaced session id belongs to (``None``: not another agent's):
    one lookup of the id's prefix (every row of the picker and the sidebar asks)."""
    if _ALL_PREFIXES_END_WITH_A_COLON:
        colon = session_id.find(":")
        return _BADGES.get(session_id[: colon + 1]) if colon > 0 else None
    return next((agent.badge for agent in AGENTS if session_id.startswith(agent.prefix)), None)
