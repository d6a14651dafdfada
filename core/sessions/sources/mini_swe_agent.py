"""mini-swe-agent's trajectories (PyPI ``mini-swe-agent``): ``*.traj.json`` files, read-only.

``mini`` writes the newest run's trajectory to ``<config>/last_mini_run.traj.json`` (``<config>`` is
``$MSWEA_GLOBAL_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/mini-swe-agent``, else
``~/.config/mini-swe-agent``), or where ``-o`` says; a batch run writes
``<output>/<instance>/<instance>.traj.json``. So the folder given is searched for ``*.traj.json``
files down to ``MAX_DEPTH`` folders. A trajectory is one JSON document (``trajectory_format``
``mini-swe-agent-1.1``): ``messages`` in the model's chat form (``system``, ``user``, ``assistant``
with its reasoning as ``content`` and its bash calls, ``tool`` results, a last ``exit``) and ``info``
(``config``, ``exit_status``). Its first user message is the task put into the ``instance_template``
the ``info`` holds; later ones are the tasks the user added (``extra.interrupt_type``
``UserNewTask``: "The user added a new task: ..."), the format errors it answers the model with
(``FormatError``) and commands the user ran (``User command:``).

Mapping: the task (cut out of its template when the template says where it goes) and each task added
become prompts, the model's reasoning text answers. The system prompt, format errors, the user's
commands, tool calls and their output are not on the surface. A trajectory keeps no folder: a
session has none. An answer takes its response's time (``created``); the title is the task.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    LATEST_MILLIS,
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    prompt_title,
    read_json,
)

MINI_PREFIX = "mini:"
SESSION_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 3
"""How many folders down from the one given trajectories are looked for."""
NEW_TASK = "The user added a new task: "
_SUFFIX = ".traj.json"
_TEMPLATE_PART = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)


def mini_root() -> Path:
    """``$MSWEA_GLOBAL_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/mini-swe-agent``, else
    ``~/.config/mini-swe-agent``."""
    configured = os.environ.get("MSWEA_GLOBAL_CONFIG_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(config) if config.startswith("/") else Path.home() / ".config") / "mini-swe-agent"


def task_of(message: str, template: Any) -> str:
    """The task a first prompt was made from: the words where the template puts ``{{task}}``, when
    the message has the template's text around it; else the whole message."""
    if type(template) is not str or "{{task}}" not in template:
        return message
    before, _, after = template.partition("{{task}}")
    if _TEMPLATE_PART.search(before):
        return message
    until = _TEMPLATE_PART.split(after, maxsplit=1)[0]
    if not message.startswith(before):
        return message
    rest = message[len(before) :]
    end = rest.find(until) if until else len(rest)
    return rest[:end] if end >= 0 else message


def _text(content: Any) -> str:
    if type(content) is str:
        return content
    if type(content) is list:
        return "\n".join(part["text"] for part in content if type(part) is dict and type(part.get("text")) is str)
    return ""


def _created(message: dict[str, Any]) -> int | None:
    """An answer's time: its response's ``created`` (epoch seconds)."""
    extra = message.get("extra")
    response = extra.get("response") if type(extra) is dict else None
    created = response.get("created") if type(response) is dict else None
    if type(created) is not int and type(created) is not float:
        return None
    stamp = created * 1000
    return int(stamp) if 0 <= stamp < LATEST_MILLIS else None


class MiniSweAgentSource(FileSource):
    """mini-swe-agent's trajectories (see the module docstring)."""

    prefix = MINI_PREFIX
    name = "mini-swe-agent"
    follow_links = False

    def _files(self) -> Iterator[str]:
        folders = [(str(self.root), 0)]
        while folders:
            folder, depth = folders.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and depth < MAX_DEPTH:
                    folders.append((entry.path, depth + 1))
                elif entry.name.endswith(_SUFFIX) and entry.is_file(follow_symlinks=False):
                    yield entry.path

    def _header(self, path: Path) -> SessionHeader | None:
        created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + path.name[: -len(_SUFFIX)], created_at=created, cwd=None)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        document = read_json(path, SESSION_BYTES)
        messages = document.get("messages") if type(document) is dict else None
        if type(messages) is not list:
            raise ValueError("no messages")
        info = document.get("info")
        config = info.get("config") if type(info) is dict else None
        agent = config.get("agent") if type(config) is dict else None
        template = agent.get("instance_template") if type(agent) is dict else None
        builder = SurfaceBuilder()
        problems = 0
        first: str | None = None
        tasks = 0
        stamps = [stamp for m in messages if type(m) is dict and (stamp := _created(m)) is not None]
        when = stamps[0] if stamps else header.created_at
        for number, message in enumerate(messages):
            if type(message) is not dict:
                problems += 1
                continue
            role, text = message.get("role"), _text(message.get("content"))
            extra = message.get("extra")
            interrupt = extra.get("interrupt_type") if type(extra) is dict else None
            when = _created(message) or when
            if role == "assistant" and text.strip():
                builder.assistant(number, when, text)
            elif role == "user" and interrupt is None and tasks == 0:
                tasks += 1
                task = task_of(text, template)
                if task.strip():
                    builder.user(number, when, task)
                    first = prompt_title(task)
            elif role == "user" and interrupt not in (None, "FormatError") and not text.startswith("User command:"):
                tasks += 1
                task = text[len(NEW_TASK) :] if text.startswith(NEW_TASK) else text
                if task.strip():
                    builder.user(number, when, task)
        return ExternalSession(header, builder.events, first, problems, len(messages) - 1 if messages else None)
