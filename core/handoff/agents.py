"""The agents a session can be handed to, and how each is started in the session's folder with the
briefing as its first prompt and ``sessionref mcp`` attached for that run only.

Each agent's own documented options carry the server; nothing of the user's configuration is
written or changed:

- Claude Code: ``--mcp-config`` (a file of this run's, alongside the user's servers) and
  ``--allowedTools`` for the three read-only tools; ``claude -p`` headless.
- Codex: ``-c mcp_servers.sessionref.*`` overrides; ``codex exec`` headless.
- Gemini CLI: ``$GEMINI_CLI_HOME`` on an overlay of ``~/.gemini`` whose ``settings.json`` is the
  user's with the server added, ``trust`` set (the tools only read); ``gemini -i`` interactive,
  ``gemini -p`` headless.
- opencode: ``$OPENCODE_CONFIG_CONTENT``, merged over the user's configuration; ``opencode --prompt``
  interactive, ``opencode run`` headless. Kilo CLI (opencode's fork) the same, ``$KILO_CONFIG_CONTENT``.
- Qwen Code: ``$QWEN_HOME`` on an overlay of ``~/.qwen`` as for Gemini CLI, ``$QWEN_RUNTIME_DIR`` on the
  real one (its conversations stay there); ``qwen -i`` interactive, ``qwen -p`` headless.
- GitHub Copilot CLI: ``--additional-mcp-config=@FILE`` (a file of this run's) and ``--allow-tool``
  for the server's tools; ``copilot -i`` interactive, ``copilot -p`` headless.
- sessionref: a new sessionref session in the folder whose draft references the source.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.agent.tool_specs import TOOL_NAMES
from core.errors import SessionrefError
from core.sessions.sources.registry import BY_KEY as SOURCES

if TYPE_CHECKING:
    from core.stores import SessionStore

SERVER_NAME = "sessionref"
"""The name the agents know the session tools' MCP server by."""


class HandoffError(SessionrefError):
    """A hand-off that cannot go ahead: one line that says why, and a stable code (here, beside the
    agents, so that the command line lists them without importing the briefing's machinery)."""


ARGUMENT_BYTES = 120_000
"""The largest argument an agent is started with (Linux refuses one over 128 KiB)."""
SERVER_START_SECONDS = 30
"""How long an agent waits for ``sessionref mcp`` to answer (a cold Python start on a busy machine)."""
HANDOFF_NOT_INSTALLED = "HANDOFF_AGENT_NOT_INSTALLED"
HANDOFF_TOO_LARGE = "HANDOFF_BRIEFING_TOO_LARGE"


@dataclass(frozen=True)
class ToolServer:
    """How the continuing agent starts ``sessionref mcp`` on the same sessions: a program, its
    arguments, and the environment variables it must be given (a store's URL never in an argument)."""

    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_store(
        cls,
        *,
        root: str | None,
        url: str | None,
        config: str | None = None,
        redact: bool = True,
        python: str = sys.executable,
    ) -> ToolServer:
        """``sessionref mcp`` of this installation on the folder store ``root`` or the database ``url``."""
        args = ["-m", "tui.cli", "mcp"]
        env: dict[str, str] = {}
        if root is not None:
            args += ["--root", root]
        if url is not None:
            env["SESSIONREF_STORE"] = url
        if config is not None:
            args += ["--config", config]
        if not redact:
            args.append("--no-redaction")
        return cls(python, args, env)

    @classmethod
    def of_store(cls, store: SessionStore, *, config: str | None = None, redact: bool = True) -> ToolServer | None:
        """``sessionref mcp`` on the same store as ``store`` (``None`` for a memory store: no other
        process can read it)."""
        from core.stores import hosted

        location = hosted(store).location
        if location is None:
            return None
        return cls.for_store(root=location.root, url=location.url, config=config, redact=redact)


@dataclass
class Launch:
    """One agent's start: the command, its folder, the environment it adds, and this run's files
    (removed when it ends)."""

    argv: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The whole environment the agent runs with."""
        return {**(os.environ if base is None else base), **self.env}

    def run(self, started: Callable[[], None]) -> int:
        """Run the agent in this terminal and wait for it: ``started`` is called once its process runs;
        its exit code (128 + the signal's number when a signal ended it, as a shell says).

        Ctrl-C is the agent's while it runs, as a shell leaves it: this process ignores SIGINT meanwhile
        (from its main thread; set after the start, so the agent does not inherit the ignoring).

        Raises:
            OSError: it could not be started.
        """
        return run_in_terminal(self.argv, self.cwd, self.environment(), started)

    def cleanup(self) -> None:
        """Remove this run's files (the folder they are in too)."""
        for path in self.files:
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def run_in_terminal(
    argv: list[str], cwd: str, env: dict[str, str] | None = None, started: Callable[[], None] | None = None
) -> int:
    """Run a program in this terminal and wait for it (an agent handed a session, or resuming one):
    ``started`` is called once its process runs; its exit code (128 + the signal's number when a signal
    ended it, as a shell says).

    Ctrl-C is the program's while it runs, as a shell leaves it: this process ignores SIGINT meanwhile
    (from its main thread; set after the start, so the program does not inherit the ignoring).

    Raises:
        OSError: it could not be started.
    """
    process = subprocess.Popen(argv, cwd=cwd, env=env)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        if started is not None:
            started()
        code = process.wait()
        return code if code >= 0 else 128 - code
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


Builder = Callable[[str, str, str, ToolServer, bool], "Launch"]


def _run_folder() -> str:
    return tempfile.mkdtemp(prefix="sessionref-handoff-")  # 0700


def _claude(program: str, prompt: str, folder: str, server: ToolServer, headless: bool) -> Launch:
    config = os.path.join(_run_folder(), "mcp.json")
    entry = {"type": "stdio", "command": server.command, "args": server.args, "env": server.env}
    _write_private(config, json.dumps({"mcpServers": {SERVER_NAME: entry}}))
    allowed = ",".join(f"mcp__{SERVER_NAME}__{name}" for name in TOOL_NAMES)
    # Both options take a list of values: "--" ends the second one, or it would swallow the prompt.
    argv = [program, "--mcp-config", config, "--allowedTools", allowed, *(["-p"] if headless else []), "--", prompt]
    return Launch(argv, folder, {}, [config])


def _toml(value: object) -> str:
    """A TOML value for a ``-c key=value`` override (JSON strings and arrays are TOML too)."""
    return json.dumps(value, ensure_ascii=True)


def _codex(program: str, prompt: str, folder: str, server: ToolServer, headless: bool) -> Launch:
    key = f"mcp_servers.{SERVER_NAME}"
    # required: Codex waits for the server before the first turn (the briefing says the tools are there).
    overrides = [
        f"{key}.command={_toml(server.command)}",
        f"{key}.args={_toml(server.args)}",
        f"{key}.required=true",
        f"{key}.startup_timeout_sec={SERVER_START_SECONDS}",
    ]
    if server.env:  # forwarded by name from the agent's environment: never written in an argument
        overrides.append(f"{key}.env_vars={_toml(sorted(server.env))}")
    argv = [program]
    if headless:
        argv += ["exec", "--skip-git-repo-check"]
    for override in overrides:
        argv += ["-c", override]
    argv.append(prompt)
    return Launch(argv, folder, dict(server.env))


GEMINI_KEPT = ("tmp", "history")
"""Folders of ``~/.gemini`` the overlay links even when they do not exist yet (Gemini CLI writes its
sessions there: they must land in the real one)."""


def _overlay(real: str, label: str, server: ToolServer, kept: tuple[str, ...] = ()) -> tuple[str, str]:
    """A private folder overlaying the agent's settings folder ``real``: every entry a link to the
    real one (``kept`` made first when missing), except ``settings.json``, the user's with the server
    added (``trust``: its tools only read). Returns (this run's folder, the overlay in it).

    Raises:
        HandoffError: ``HANDOFF_AGENT_SETTINGS`` when the user's settings cannot be read.
    """
    settings: dict[str, object] = {}
    try:
        with open(os.path.join(real, "settings.json"), encoding="utf-8") as handle:
            loaded = json.load(handle)
        settings = loaded if isinstance(loaded, dict) else {}
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as error:
        raise HandoffError(
            f"your {label} settings ({real}/settings.json) cannot be read to add sessionref to them: {error}",
            "HANDOFF_AGENT_SETTINGS",
        ) from error
    run = _run_folder()
    overlay = os.path.join(run, os.path.basename(real))
    os.mkdir(overlay, 0o700)
    for name in kept:
        os.makedirs(os.path.join(real, name), mode=0o700, exist_ok=True)
    for name in os.listdir(real) if os.path.isdir(real) else []:
        if name != "settings.json":
            os.symlink(os.path.join(real, name), os.path.join(overlay, name))
    servers = settings.get("mcpServers")
    servers = dict(servers) if isinstance(servers, dict) else {}
    servers[SERVER_NAME] = {"command": server.command, "args": server.args, "env": server.env, "trust": True}
    _write_private(os.path.join(overlay, "settings.json"), json.dumps({**settings, "mcpServers": servers}))
    return run, overlay


def _gemini(program: str, prompt: str, folder: str, server: ToolServer, headless: bool) -> Launch:
    """Gemini CLI has no per-run server option, and its system settings layers must be owned by root:
    it runs with ``$GEMINI_CLI_HOME`` on an overlay of the user's ``~/.gemini`` (every entry linked
    to the real one, so sessions, credentials and history stay where they are) whose
    ``settings.json`` is the user's with the server added."""
    real_home = os.environ.get("GEMINI_CLI_HOME") or os.path.expanduser("~")
    run, overlay = _overlay(os.path.join(real_home, ".gemini"), "Gemini CLI", server, GEMINI_KEPT)
    argv = [program, "-p" if headless else "-i", prompt]
    return Launch(argv, folder, {"GEMINI_CLI_HOME": run}, [overlay])


def _qwen(program: str, prompt: str, folder: str, server: ToolServer, headless: bool) -> Launch:
    """Qwen Code (Gemini CLI's fork) has no per-run server option either: it runs with ``$QWEN_HOME``
    on an overlay of the user's (``~/.qwen``) whose ``settings.json`` is the user's with the server
    added, and ``$QWEN_RUNTIME_DIR`` on the real runtime folder, so its conversations land where they
    always do."""
    real = os.path.expanduser(os.environ.get("QWEN_HOME") or "~/.qwen")
    runtime = os.environ.get("QWEN_RUNTIME_DIR") or real
    _run, overlay = _overlay(real, "Qwen Code", server)
    argv = [program, "-p" if headless else "-i", prompt]
    return Launch(argv, folder, {"QWEN_HOME": overlay, "QWEN_RUNTIME_DIR": runtime}, [overlay])


def _opencode_like(variable: str) -> Builder:
    """opencode and Kilo CLI (its fork): the server in the configuration the environment variable
    holds, which they merge over the user's own."""

    def build(program: str, prompt: str, folder: str, server: ToolServer, headless: bool) -> Launch:
        entry = {"type": "local", "command": [server.command, *server.args], "environment": server.env, "enabled": True}
        content = json.dumps({"mcp": {SERVER_NAME: entry}})
        argv = [program, "run", prompt] if headless else [program, folder, "--prompt", prompt]
        # They take their folder from $PWD, not from the process's working directory.
        return Launch(argv, folder, {variable: content, "PWD": folder})

    return build


def _copilot(program: str, prompt: str, folder: str, server: ToolServer, headless: bool) -> Launch:
    """GitHub Copilot CLI: ``--additional-mcp-config`` (a file of this run's, added to the user's
    servers for this session only) and ``--allow-tool`` for the server's tools (they only read)."""
    config = os.path.join(_run_folder(), "mcp-config.json")
    entry = {"type": "local", "command": server.command, "args": server.args, "env": server.env, "tools": ["*"]}
    _write_private(config, json.dumps({"mcpServers": {SERVER_NAME: entry}}))
    # (Both options take lists: written with "=", neither takes the next argument.)
    argv = [program, f"--additional-mcp-config=@{config}", f"--allow-tool={SERVER_NAME}"]
    return Launch([*argv, "-p" if headless else "-i", prompt], folder, {}, [config])


def _write_private(path: str, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


@dataclass(frozen=True)
class Agent:
    """An agent a session can be handed to."""

    name: str
    """What ``--to`` takes."""
    label: str
    program: str
    """The command on PATH."""
    build: Builder | None = None
    """How it is started (``None``: sessionref itself, started by the caller)."""

    def installed(self, path: str | None = None) -> str | None:
        """Where its command is on PATH (``path``: another PATH), or ``None``."""
        if self.build is None:
            return sys.executable
        return shutil.which(self.program, path=path)

    def launch(
        self, prompt: str, folder: str, server: ToolServer, *, headless: bool, path: str | None = None
    ) -> Launch:
        """How to start it on ``prompt`` in ``folder`` with ``server`` attached.

        Raises:
            HandoffError: it is not on PATH (``HANDOFF_AGENT_NOT_INSTALLED``); the prompt is too large
                to start it with (``HANDOFF_BRIEFING_TOO_LARGE``).
        """
        program = self.installed(path)
        if program is None or self.build is None:
            raise HandoffError(f"{self.label} is not installed (no {self.program} on PATH)", HANDOFF_NOT_INSTALLED)
        size = len(prompt.encode("utf-8", "surrogatepass"))
        if size > ARGUMENT_BYTES:
            raise HandoffError(
                f"the briefing is {size:,} bytes, more than the {ARGUMENT_BYTES:,} an agent can be started with: "
                "lower [reference] max_reference_bytes, or write it with --print",
                HANDOFF_TOO_LARGE,
            )
        return self.build(program, prompt, folder, server, headless)


AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        # The agents whose sessions are also read (``core.sessions.sources.registry``): named as there.
        Agent("claude", SOURCES["claude"].label, "claude", _claude),
        Agent("codex", SOURCES["codex"].label, "codex", _codex),
        Agent("gemini", SOURCES["gemini"].label, "gemini", _gemini),
        Agent("qwen", SOURCES["qwen"].label, "qwen", _qwen),
        Agent("opencode", SOURCES["opencode"].label, "opencode", _opencode_like("OPENCODE_CONFIG_CONTENT")),
        Agent("kilo", SOURCES["kilo"].label, "kilo", _opencode_like("KILO_CONFIG_CONTENT")),
        Agent("copilot", SOURCES["copilot"].label, "copilot", _copilot),
        Agent("sessionref", "sessionref", "sessionref"),
    )
}
"""Every agent ``--to`` names, in the order menus offer them."""


def installed_agents(path: str | None = None) -> list[Agent]:
    """The agents found on PATH (sessionref always)."""
    return [agent for agent in AGENTS.values() if agent.installed(path) is not None]
