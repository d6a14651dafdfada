"""``sessionref handoff SESSION --to AGENT``: continue a session in another agent (``core.handoff``).

It builds the briefing (goal, folder, git state, the framed snapshot), shows it with its size and
asks; then starts the agent in the session's folder with the briefing as its first prompt and
``sessionref mcp`` attached for that run only, records where the session went, and passes the
agent's exit code through.

Exit codes: the agent's own once it started; 0 for ``--print`` and for a hand-off declined at the
question; 1 the hand-off cannot go ahead (the agent is not installed, the session cannot be read,
its folder is gone); 2 bad arguments; 3 the store cannot be used.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from core.errors import SessionQueryError
from core.settings import (
    CommandTaker,
)
from tui.cli.command_error import CommandError
from tui.cli.options import EXIT_USAGE

if TYPE_CHECKING:
    from core.handoff.agents import Agent, Launch
    from core.handoff.briefing import Briefing
    from core.handoff.record import Handoff
    from core.stores import SessionStore

EXIT_CANNOT = 1


def add_commands(commands: CommandTaker) -> None:
    """``sessionref handoff`` in the command line's parser."""
    from core.handoff.agents import AGENTS
    from tui.cli.options import add_store_options

    parser = commands.add_parser(
        "handoff",
        help="continue a session in another agent (Claude Code, Codex, Gemini CLI, opencode, Kilo CLI, sessionref)",
        description="Hand a session to another agent: it starts in the session's folder with a briefing (your goal, "
        "the folder's git state and the session's bounded, framed snapshot, secrets masked) as its first prompt, "
        "and sessionref mcp attached for that run only, so it can search and read past the snapshot. The briefing "
        "is shown, with its size, before anything starts. Nothing of the agent's own configuration is changed.",
    )
    parser.add_argument(
        "session",
        metavar="SESSION",
        help="a session id, a dsh-session: URI, or last (the newest session in this folder)",
    )
    parser.add_argument("--to", required=True, choices=list(AGENTS), help="the agent to continue in")
    parser.add_argument("--goal", metavar="TEXT", help="what the agent is to do next (asked for when not given)")
    parser.add_argument("--print", action="store_true", help="write the briefing to stdout and start nothing")
    parser.add_argument("--yes", action="store_true", help="start without asking (for scripts)")
    parser.add_argument(
        "--headless",
        action="store_true",
        help="run the agent's non-interactive mode (claude -p, codex exec, gemini -p, opencode run, kilo run): "
        "its output and exit code are passed through",
    )
    add_store_options(parser)
    parser.set_defaults(run=handoff_command, parser=parser, demo=False)


def _say(message: str) -> None:
    from tui.services.text import visible

    print(visible(f"sessionref handoff: {message}"), file=sys.stderr)


def _cannot(message: str) -> CommandError:
    """A hand-off that cannot start (``EXIT_CANNOT``), to raise."""
    return CommandError(f"sessionref handoff: {message}", EXIT_CANNOT)


def handoff_command(args: argparse.Namespace) -> int:
    """Run ``sessionref handoff``."""
    import asyncio

    from core.catalog import SessionCatalog
    from core.handoff.agents import AGENTS, ToolServer
    from core.handoff.briefing import HandoffError, build_briefing, resolve_session
    from core.handoff.record import Handoff, now_ms, side_file
    from tui.cli.options import command_settings, default_root, open_command_store

    parser: argparse.ArgumentParser = args.parser
    run = command_settings("handoff", args)[1]
    agent = AGENTS[args.to]
    if args.headless and agent.build is None:
        parser.exit(EXIT_USAGE, "sessionref handoff: sessionref has no headless mode; leave out --headless\n")
    if not args.print and agent.installed() is None:
        raise _cannot(f"{agent.label} is not installed (no {agent.program} on PATH); nothing was started")
    url = run.store.url if run.store.root is None else None
    root = None if url is not None else (run.store.root or default_root())
    store = open_command_store("handoff", root=root, url=url, keep_listing=False)
    try:
        catalog = SessionCatalog(store, run.sources)
        catalog.refresh()
        try:
            session_id = asyncio.run(resolve_session(catalog, args.session, os.getcwd()))
            goal = args.goal if args.goal is not None else _ask_goal(args)
            briefing = asyncio.run(
                build_briefing(
                    catalog, session_id, goal, config=run.reference, redact=run.redact, tools=agent.build is not None
                )
            )
        except HandoffError as error:
            raise _cannot(f"{error.line}; nothing was started") from error
        if args.print:
            sys.stdout.write(briefing.text + "\n")
            return 0
        _show(briefing, agent, args.headless)
        if not args.yes and not _confirm(agent, briefing):
            _say("not started")
            return 0
        own = catalog.is_own(session_id)
        handoff = Handoff(session_id, agent.name, briefing.goal, now_ms(), args.headless, briefing.size)
        side = side_file(root)
        if agent.build is None:
            app_argv = _continue_here(args, briefing, store, handoff, side, own, root, url)
        else:
            server = ToolServer.for_store(root=root, url=url, config=args.config, redact=run.redact)
            try:
                launch = agent.launch(briefing.text, briefing.folder, server, headless=args.headless)
            except HandoffError as error:
                raise _cannot(f"{error.line}; nothing was started") from error
            return _run(launch, agent, store, handoff, side, own)
    finally:
        store.close()
    # The app, in this terminal, on its own store (a database's URL by the environment, not in an argument).
    environment = {**os.environ, **({"SESSIONREF_STORE": url} if url is not None else {})}
    return subprocess.run([sys.executable, "-m", "tui.cli", *app_argv], env=environment, check=False).returncode


def _ask_goal(args: argparse.Namespace) -> str | None:
    """The goal, asked for at a terminal (``None``: the default goal)."""
    if args.print or args.yes or not sys.stdin.isatty():
        return None
    try:
        return input("Goal for the agent that continues (Enter: continue where it stopped): ")
    except EOFError:
        return None


def _show(briefing: Briefing, agent: Agent, headless: bool) -> None:
    """The briefing and its size, on stderr (stdout is the agent's)."""
    from tui.services.text import visible

    masked = sum(briefing.masked.values())
    secrets = (
        f"{masked} secret{'' if masked == 1 else 's'} masked"
        if briefing.redacted
        else "secrets NOT masked (--no-redaction)"
    )
    print(visible(briefing.text), file=sys.stderr)
    print(
        visible(
            f"\n--- briefing: {briefing.size:,} bytes, {briefing.kept} of {briefing.messages} messages, {secrets}; "
            f"{agent.label}{' (headless)' if headless else ''} starts in {briefing.folder}"
        ),
        file=sys.stderr,
    )


def _confirm(agent: Agent, briefing: Briefing) -> bool:
    from tui.services.text import visible

    if not sys.stdin.isatty():
        raise CommandError(
            "sessionref handoff: no terminal to confirm at: add --yes to start without asking; nothing was started",
            EXIT_USAGE,
        )
    try:
        answer = input(visible(f"Start {agent.label} in {briefing.folder} with this briefing? [y/N] "))
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _run(launch: Launch, agent: Agent, store: SessionStore, handoff: Handoff, side: str, own: bool) -> int:
    """Start the agent, record the hand-off once it started, wait for it; its exit code."""
    from core.handoff.record import record_handoff
    from tui.services.text import visible

    where = "nowhere"

    def started() -> None:
        nonlocal where
        try:
            where = record_handoff(store, handoff, side, own=own)
        except (OSError, SessionQueryError) as error:
            where = f"nowhere ({error})"

    try:
        code = launch.run(started)
    except OSError as error:
        raise _cannot(f"{agent.label} could not be started: {error.strerror or error}; nothing was started") from error
    finally:
        launch.cleanup()
    print(visible(f"sessionref handoff: {agent.label} exited {code}; the hand-off is noted in {where}"),
          file=sys.stderr)  # fmt: skip
    return code


def _continue_here(
    args: argparse.Namespace,
    briefing: Briefing,
    store: SessionStore,
    handoff: Handoff,
    side: str,
    own: bool,
    root: str | None,
    url: str | None,
) -> list[str]:
    """``--to sessionref``: the app's options for a new session in the folder whose draft references
    the source (the hand-off noted first)."""
    from core.handoff.record import record_handoff
    from core.reference.uri import format_session_reference_mention

    mention = format_session_reference_mention(briefing.session_id, briefing.title)
    draft = f"{mention} {briefing.goal}"
    try:
        record_handoff(store, handoff, side, own=own)
    except (OSError, SessionQueryError) as error:
        _say(f"the hand-off could not be noted: {error}")
    argv = ["--cwd", briefing.folder, "--draft", draft]
    if root is not None:
        argv += ["--root", root]
    if args.config is not None:
        argv += ["--config", args.config]
    return argv
