"""Opening another agent's session in the agent that wrote it, in the session's folder
(``sessionref resume ID``): each agent's own way to resume a given session, or why it has none.

A session's id is the agent's prefix and the agent's own id of it (``claude:<uuid>``); the command
is the agent's program with the options it documents for resuming that id. Agents that can only
resume from a picker, resume only their latest session, or are editors are said so, with what to do
instead. Nothing is run here: ``resume_plan`` says what to run; the command line runs it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from core.errors import SessionrefError
from core.sessions.sources.registry import AGENTS

RESUME_NOT_SUPPORTED = "RESUME_NOT_SUPPORTED"
RESUME_NOT_INSTALLED = "RESUME_AGENT_NOT_INSTALLED"
RESUME_SESSION_NOT_FOUND = "RESUME_SESSION_NOT_FOUND"


class ResumeError(SessionrefError):
    """A session that cannot be opened in its agent: one line that says why, and a stable code."""


@dataclass(frozen=True)
class Resumes:
    """How an agent resumes a given session: its program and the arguments before the id's (``{id}``
    stands for the agent's own id)."""

    program: str
    arguments: tuple[str, ...]


@dataclass(frozen=True)
class Cannot:
    """Why an agent cannot be told to resume a given session, and what to do instead."""

    why: str


RESUME: dict[str, Resumes | Cannot] = {
    "claude": Resumes("claude", ("--resume", "{id}")),
    "codex": Resumes("codex", ("resume", "{id}")),
    "gemini": Cannot(
        "Gemini CLI resumes its latest session or one by its number in its list (gemini --resume latest|N)"
    ),
    "qwen": Resumes("qwen", ("--resume", "{id}")),
    "opencode": Resumes("opencode", ("--session", "{id}")),
    "kilo": Resumes("kilo", ("--session", "{id}")),
    "copilot": Resumes("copilot", ("--resume", "{id}")),
    "pi": Cannot("pi resumes a session from its file (pi --session <file>) or its picker (pi --resume)"),
    "continue": Cannot("Continue's cn resumes only its latest session (cn --resume)"),
    "cline": Cannot("Cline CLI resumes a task from its own history list (cline, then pick it)"),
    "hermes": Resumes("hermes", ("--resume", "{id}")),
    "aider": Cannot("Aider restores only a folder's latest chat (aider --restore-chat-history, in its folder)"),
    "vibe": Resumes("vibe", ("--resume", "{id}")),
    "openhands": Resumes("openhands", ("--resume", "{id}")),
    "openclaw": Cannot("OpenClaw continues an agent's own session (openclaw agent --agent <agent>), not one by id"),
    "kimicode": Cannot("Kimi Code resumes the folder's latest session (kimi -c) or one from its picker"),
    "kimi": Resumes("kimi", ("-r", "{id}")),
    "gptme": Resumes("gptme", ("--name", "{id}")),
    "llm": Resumes("llm", ("chat", "--cid", "{id}")),
    "codebuddy": Resumes("codebuddy", ("--resume", "{id}")),
    "codepuppy": Resumes("code-puppy", ("--resume", "{id}")),
    "mini": Cannot("mini-swe-agent cannot resume a run: each run is its own trajectory (start a new one: mini -t)"),
    "nanocoder": Cannot("nanocoder resumes the latest session (nanocoder --continue) or one from its picker"),
    "crush": Cannot("Crush resumes a session from its own session list (crush, then pick it)"),
    "goose": Cannot("Goose was not run here: its way to resume a given session is not known (goose session --resume)"),
    "cursor": Cannot("Cursor is an editor: open the folder in Cursor and pick the chat in its history"),
    "letta": Resumes("letta", ("--backend", "local", "--conversation", "{id}")),
    "interpreter": Cannot("Open Interpreter resumes a conversation only from its picker (interpreter --conversations)"),
    "amp": Cannot("Amp was not run here: open the thread from amp's thread list (amp threads)"),
    "droid": Cannot("Factory Droid was not run here: resume the session from droid's own list (droid --resume)"),
    "roo": Cannot("Roo Code is a VS Code extension: open the folder in VS Code and pick the task in its history"),
    "clinevsc": Cannot("Cline (VS Code) is an extension: open the folder in VS Code and pick the task in its history"),
    "kilocode": Cannot(
        "Kilo Code (VS Code) is an extension: open the folder in VS Code and pick the task in its history"
    ),
    "omp": Cannot("oh-my-pi resumes a session from its file (omp --session <file>) or its picker (omp --resume)"),
    "kiro": Cannot("Kiro CLI was not run here: kiro-cli chat --resume resumes the newest conversation of the folder"),
    "zed": Cannot("Zed is an editor: open the folder in Zed and pick the thread in its agent panel's history"),
}
"""Each agent of the table (``AGENTS``), by key: how it resumes a session, or why it cannot."""


def _native(session_id: str, prefix: str) -> str:
    """The agent's own id of a session (Letta's folder name ``conversation-<id>`` back to ``<id>``)."""
    native = session_id[len(prefix) :]
    if prefix == "letta:":
        native = native.partition("-")[2] if native.startswith("conversation-") else native
    return native


def resume_plan(session_id: str, *, extra: tuple[str, ...] = ()) -> list[str]:
    """The command that opens ``session_id`` in the agent that wrote it (``extra`` after its own
    arguments).

    Raises:
        ResumeError: ``RESUME_NOT_SUPPORTED`` (not another agent's session, or an agent that cannot
            resume a given one: the line says what to do instead) or ``RESUME_AGENT_NOT_INSTALLED``
            (its program is not on ``PATH``).
    """
    agent = next((agent for agent in AGENTS if session_id.startswith(agent.prefix)), None)
    if agent is None:
        raise ResumeError(
            f"{session_id!r} is not another agent's session (open sessionref's own with sessionref --session ID)",
            RESUME_NOT_SUPPORTED,
        )
    how = RESUME[agent.key]
    if isinstance(how, Cannot):
        raise ResumeError(f"{agent.label} cannot be told to resume a given session: {how.why}", RESUME_NOT_SUPPORTED)
    if shutil.which(how.program) is None:
        raise ResumeError(f"{agent.label} ({how.program}) is not installed, or not on PATH", RESUME_NOT_INSTALLED)
    native = _native(session_id, agent.prefix)
    return [how.program, *(native if part == "{id}" else part for part in how.arguments), *extra]
