"""``sessionref resume SESSION``: open another agent's session in the agent that wrote it, in the
session's folder (``claude --resume``, ``codex resume``, ``opencode --session``...). Arguments after
``--`` go to the agent (``-- -p "one more thing"`` resumes it headless where the agent can). Where an
agent cannot be told to resume a given session, it says so and what to do instead."""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from core.display import visible
from core.settings import CommandTaker, add_setting_flags, source_settings
from tui.cli.command_error import CommandError

EXIT_CANNOT = 1


def add_commands(commands: CommandTaker) -> None:
    """``sessionref resume`` in the command line's parser."""
    parser = commands.add_parser(
        "resume",
        help="open another agent's session in that agent, in the session's folder",
        description="Open a session another agent wrote (an id as sessionref lists it: claude:<uuid>, "
        "codex:<id>...) in that agent, started in the session's folder with its own way of resuming it "
        "(claude --resume, codex resume, opencode --session...). Arguments after -- are passed to the agent. "
        "An agent that cannot be told to resume a given session is said so, with what to do instead.",
    )
    parser.add_argument("session", metavar="SESSION", help="the session's id, as sessionref lists it")
    parser.add_argument("--print", action="store_true", help="print the command and its folder; run nothing")
    parser.add_argument("agent_arguments", nargs="*", metavar="-- ARGS", help=argparse.SUPPRESS)
    add_setting_flags(parser, [*source_settings(), "config"])
    parser.set_defaults(run=resume_command, parser=parser, demo=False)


def _cannot(message: str) -> CommandError:
    return CommandError(f"sessionref resume: {message}", EXIT_CANNOT)


def resume_command(args: argparse.Namespace) -> int:
    """Run ``sessionref resume``."""
    from core.errors import SessionQueryError
    from core.handoff.agents import run_in_terminal
    from core.handoff.resume import RESUME_SESSION_NOT_FOUND, ResumeError, resume_plan
    from core.settings import external_sources
    from tui.cli.options import command_effective

    session_id: str = args.session
    extra = tuple(args.agent_arguments)
    effective = command_effective("resume", args)
    source = next((s for s in external_sources(effective) if session_id.startswith(s.prefix)), None)
    folder: str | None = None
    if source is not None:
        try:
            record = next((r for r in source.listing() if r.header.id == session_id), None)
        except SessionQueryError as error:
            raise _cannot(error.line) from error
        if record is None:
            missing = ResumeError(
                f"no session {session_id!r} in {source.name}'s folder {source.root}", RESUME_SESSION_NOT_FOUND
            )
            raise _cannot(missing.line)
        folder = record.header.cwd
    try:
        command = resume_plan(session_id, extra=extra)
    except ResumeError as error:
        raise _cannot(error.line) from error
    where = folder if folder is not None and os.path.isdir(folder) else os.getcwd()
    if args.print:
        print(visible(f"cd {shlex.quote(where)} && {shlex.join(command)}"))
        return 0
    if folder is not None and where != folder:
        print(visible(f"sessionref resume: {folder} is gone; starting in {where}"), file=sys.stderr)
    try:
        return run_in_terminal(command, where)  # (Ctrl-C is the agent's while it runs)
    except OSError as error:
        raise _cannot(f"{command[0]} could not start: {error.strerror or error}") from error
