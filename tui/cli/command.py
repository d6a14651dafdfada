"""The ``sessionref`` command line: parse options, open the store, run the app.

Exit codes: 0 normal exit, 2 bad arguments, 3 the store root cannot be used, 4 the session given
with ``--session`` cannot be opened (missing, corrupt, or written by another process).
``sessionref doctor`` exits 0 when the store is healthy, 1 when something needs attention;
``sessionref import`` / ``export`` move sessions to and from PostgreSQL (see ``tui.cli.transfer``);
``sessionref share`` / ``unshare`` share a session of a database store with a team (``tui.cli.share``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from core.display import visible
from core.errors import SessionQueryError, SessionReferenceError
from core.settings import (
    CommandTaker,
    ConfigError,
    Effective,
    LoadedConfig,
    Settings,
    add_setting_flags,
    effective_settings,
    format_effective,
    given,
    load_config,
    source_settings,
)
from tui.cli.command_error import CommandError, reported
from tui.cli.options import (
    EXIT_ROOT,
    EXIT_SESSION,
    EXIT_USAGE,
    add_app_arguments,
    build_parser,
    default_root,
    served_options,
)
from tui.cli.version import sessionref_version

if TYPE_CHECKING:
    from core import ChatModel
    from core.folder.doctor import Finding
    from core.settings import RunConfig
    from core.stores import SessionStore
    from tui.app.sessionref_app import SessionRefApp

APP_FPS = 240
CHECK_START_SECONDS = 60.0
"""How long ``--check-start`` waits for the first screen and the listing before it calls the start failed."""


def _serve(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]) -> int:
    """Serve the app with textual-serve: each browser page runs ``sessionref`` with the same options."""
    if not 0 < args.port < 65536:
        parser.error(f"--port must be between 1 and 65535, not {args.port}")
    try:
        from textual_serve.server import Server
    except ImportError as error:
        raise _fail("--serve needs the textual-serve package (pip install textual-serve)", EXIT_USAGE) from error
    command = shlex.join([sys.executable, "-m", "tui.cli", *served_options(argv)])
    Server(command, host=args.host, port=args.port, title="sessionref").serve()
    return 0


def loose_permissions(root: str | os.PathLike[str]) -> str | None:
    """A one-line warning when other accounts can open the store folder (``None`` when private).

    The folders and files sessionref creates are owner-only; a folder that existed before is never
    changed behind the user's back, only reported.
    """
    mode = os.stat(root).st_mode & 0o777
    if not mode & 0o077:
        return None
    return f"{root} can be read by other users (mode {mode:o}); run chmod 700 on it to keep your chats private"


def _fail(message: str, code: int) -> CommandError:
    """The app's own failure (``sessionref: …``), to raise."""
    return CommandError(f"sessionref: {message}", code)


def _model(settings: Settings) -> ChatModel:
    from core import EchoModel, OpenAICompatibleModel

    if settings.backend == "openai":
        return OpenAICompatibleModel.from_environment(
            base_url=settings.base_url,
            model=settings.model,
            key_env=settings.api_key_env,
            reply_seconds=settings.reply_timeout,
            max_reply_bytes=settings.max_reply_bytes,
        )
    return EchoModel(delay=0.02)


def _settings(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[LoadedConfig, Effective]:
    """The config file and the effective settings (flags > file > defaults); a bad one exits 2."""
    try:
        config = load_config(args.config)
        effective = effective_settings(config, given(args), dict(os.environ))
    except ConfigError as error:
        parser.exit(EXIT_USAGE, f"sessionref: {visible(error.line)}\n")
    return config, effective


def _add_config_command(commands: CommandTaker) -> None:
    parser = commands.add_parser(
        "config",
        help="print the effective settings and where each came from",
        description="Print the settings sessionref would run with (the config file, the environment and these "
        "options together) and where each came from.",
    )
    add_app_arguments(parser)
    parser.set_defaults(run=config_command, parser=parser)


def config_command(args: argparse.Namespace) -> int:
    """``sessionref config [options]``: print the effective settings and where each came from."""
    config, effective = _settings(args.parser, args)
    print(format_effective(config, effective))
    return 0


def _add_doctor_command(commands: CommandTaker) -> None:
    parser = commands.add_parser(
        "doctor",
        help="check a store without changing it",
        description="Check a session store without changing it: damaged or misplaced files (with the byte "
        "offset), duplicate ids, torn tails, files other users can read, locks held by a stopped process, "
        "leftovers of an interrupted create. Exit 0 when healthy, 1 when something needs attention.",
    )
    where = parser.add_mutually_exclusive_group()
    add_setting_flags(where, ["root"])
    where.add_argument(
        "--store",
        metavar="URL",
        help="check a PostgreSQL team store instead, as your role sees it: who owns the schema, that row-level "
        "security is forced on every table, and whether your role could read around it",
    )
    parser.add_argument(
        "--compression",
        choices=("zstd", "none"),
        default="zstd",
        help="the encoding you open the store with (as sessionref --compression; default zstd): session files "
        "of the other one are noted with the flag that opens them, not reported as damage",
    )
    parser.add_argument("--json", action="store_true", help="print the findings as JSON, for scripts")
    parser.add_argument(
        "--secrets",
        action="store_true",
        help="also list the sessions that hold secrets (keys, tokens, passwords): their kinds, counts and "
        "messages, never a value (a warning each)",
    )
    # The other agents' folders, noted (what each lists, what it cannot read): never the store's health.
    add_setting_flags(parser, [*source_settings(), "config"])
    parser.set_defaults(run=doctor, parser=parser)


def command_parser() -> argparse.ArgumentParser:
    """The whole command line: the app's options, and every subcommand with its own."""
    from tui.cli.db import add_commands as add_db_commands
    from tui.cli.handoff import add_commands as add_handoff_commands
    from tui.cli.mcp import add_commands as add_mcp_commands
    from tui.cli.resume import add_commands as add_resume_commands
    from tui.cli.search import add_commands as add_search_commands
    from tui.cli.share import add_commands as add_share_commands
    from tui.cli.transfer import add_commands as add_transfer_commands

    parser = build_parser()
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    names = "config, doctor, db, import, export, share, unshare, mcp, search, handoff, resume"
    parser.usage = f"%(prog)s [options]            the app\n       %(prog)s COMMAND [options]    COMMAND: {names}"
    _add_config_command(commands)
    _add_doctor_command(commands)
    add_db_commands(commands)
    add_transfer_commands(commands)
    add_share_commands(commands)
    add_mcp_commands(commands)
    add_search_commands(commands)
    add_handoff_commands(commands)
    add_resume_commands(commands)
    return parser


def doctor(args: argparse.Namespace) -> int:
    """``sessionref doctor``: check a store read-only; exit 0 when healthy, 1 when something needs
    attention, 3 when there is no store folder."""
    from core.folder.doctor import diagnose, format_diagnosis

    if args.store is not None:
        from core.database.health import diagnose_database  # psycopg only for a database

        diagnosis = diagnose_database(args.store)
    else:
        diagnosis = diagnose(args.root or default_root(), args.compression)
    if not any(finding.kind in ("missing_root", "unreachable", "missing_schema") for finding in diagnosis.findings):
        from core.catalog.source_check import check_sources
        from core.settings import external_sources

        _config, effective = _settings(args.parser, args)
        diagnosis.findings.extend(check_sources(external_sources(effective)))
        if args.secrets:
            diagnosis.findings.extend(_secret_findings(args))
    if args.json:
        # ASCII JSON: every control, reordering or non-ASCII character of a file name is a \u escape.
        print(json.dumps(diagnosis.to_json(), ensure_ascii=True, indent=2))
    else:
        print(format_diagnosis(diagnosis))
    if any(finding.kind in ("missing_root", "unreachable", "missing_schema") for finding in diagnosis.findings):
        return EXIT_ROOT
    return 1 if diagnosis.attention else 0


def _secret_findings(args: argparse.Namespace) -> list[Finding]:
    """``doctor --secrets``: the store's sessions that hold secrets (read-only; one warning each)."""
    from core.catalog.secret_check import check_secrets
    from core.folder.doctor import Finding
    from core.stores import open_store

    try:
        if args.store is not None:
            store: SessionStore = open_store(url=args.store)
        else:
            store = open_store(root=args.root or default_root(), compression=args.compression, keep_listing=False)
    except SessionQueryError as error:
        return [Finding("error", "secrets_unread", args.store or args.root or "", error.line)]
    try:
        findings, scanned = check_secrets(store)
    finally:
        store.close()
    found = sum(1 for finding in findings if finding.kind == "secrets")
    summary = f"{scanned / 1e6:.1f} MB of conversation scanned: {found} session{'' if found == 1 else 's'} hold secrets"
    return [*findings, Finding("info", "secrets_scanned", args.store or args.root or default_root(), summary)]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sessionref`` console script; returns the exit code."""
    parser = command_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    # What follows `--` after `resume` is the agent's (argparse hands a subcommand no words after `--`).
    passed: list[str] = []
    if "--" in words and "resume" in words[: words.index("--")]:
        words, passed = words[: words.index("--")], words[words.index("--") + 1 :]
    args = parser.parse_args(words)
    if passed:
        args.agent_arguments = [*args.agent_arguments, *passed]
    if args.command is not None:
        run: Callable[[argparse.Namespace], int] = args.run
        return reported(lambda: run(args))
    return reported(lambda: _app(parser, args, argv))


def _app(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """Run the app itself (no subcommand)."""
    from core.settings import run_config
    from core.stores import open_store

    effective = _settings(parser, args)[1]
    settings = effective.settings
    if settings.backend != "openai" and (args.base_url or args.model):
        parser.error("--base-url and --model-name only apply to --model openai")
    cwd = args.cwd if args.cwd is not None else os.getcwd()
    if not os.path.isabs(cwd):
        parser.error(f"--cwd must be an absolute path, not {cwd!r}")
    if args.demo and args.session:
        parser.error("--demo opens its own sessions; leave out --session")
    if args.serve:
        if args.check_start:
            parser.error("--check-start starts the app itself; leave out --serve")
        return _serve(parser, args, list(sys.argv[1:] if argv is None else argv))

    try:
        run = run_config(effective, demo=args.demo)
    except SessionReferenceError as error:
        parser.error(error.line)

    root = run.store.root
    if run.store.url is not None:
        if args.demo or root is not None:
            parser.error("--store names a database: leave out --root and --demo")
        return _run_app(args, _model(settings), run, _database_store(run.store.url, args.pack_chunks), cwd, None)
    if args.demo and root is None:
        root = tempfile.mkdtemp(prefix="sessionref-demo-")
    if root is None:
        root = default_root()
    try:
        if args.demo and os.path.isdir(root) and os.listdir(root):
            raise _fail(f"--demo needs an empty or new folder, and {root} is not empty", EXIT_ROOT)
        store: SessionStore = open_store(root=root, compression=args.compression, pack_chunks=args.pack_chunks)
        if not os.access(root, os.R_OK | os.W_OK | os.X_OK):
            raise _fail(f"cannot read and write the store folder {root}", EXIT_ROOT)
        warning = loose_permissions(root)
        if warning is not None:
            print(f"sessionref: warning: {visible(warning)}", file=sys.stderr)
    except OSError as error:
        raise _fail(f"cannot use the store folder {root}: {error.strerror or error}", EXIT_ROOT) from error

    return _run_app(args, _model(settings), run, store, cwd, root)


def _database_store(url: str, pack_chunks: bool) -> SessionStore:
    """The PostgreSQL store at ``url``.

    Raises:
        CommandError: it cannot be used.
    """
    from core.stores import open_store

    try:
        return open_store(url=url, pack_chunks=pack_chunks)
    except SessionQueryError as error:
        raise _fail(f"cannot use the session database: {error.line}", EXIT_ROOT) from error


def _run_app(
    args: argparse.Namespace, model: ChatModel, run: RunConfig, store: SessionStore, cwd: str, root: str | None
) -> int:
    # Textual paints at most TEXTUAL_FPS frames a second (60 by default), on a fixed grid: a change
    # waits for the next slot. 240 cuts that wait from up to 16.7 ms to 4.2 ms; frames are still only
    # drawn when something changed. An explicit TEXTUAL_FPS wins.
    os.environ.setdefault("TEXTUAL_FPS", str(APP_FPS))
    from tui.app.sessionref_app import make_app  # Textual is imported only when the app really starts.

    session_id = args.session
    if args.demo:
        from tui.cli.demo import DEMO_PROJECT, seed_demo

        ids = seed_demo(store, start=time.time_ns() // 1_000_000 - 7 * 60_000)  # ages of 1m..7m
        for role, seeded in ids.items():
            if role != "target":
                store.release(seeded)
        session_id, cwd = ids["target"], DEMO_PROJECT
    try:
        app = make_app(store, model, run, cwd=cwd, session_id=session_id, draft=args.draft)
    except SessionQueryError as error:
        raise _fail(f"cannot open session: {error.line}", EXIT_SESSION) from error
    try:
        if args.check_start:
            started = _check_start(app)
            if started is None:
                raise _fail(
                    f"the app did not start (no first screen with its listing within {CHECK_START_SECONDS:.0f} s)", 1
                )
            print(started)
        else:
            app.run()
    finally:
        app.close_index()
        lost = store.close()
    if lost:  # a database store whose database was still away: those events never reached it
        print(f"sessionref: warning: {lost} events could not be stored (the session database was unreachable)",
              file=sys.stderr)  # fmt: skip
    if args.demo and root is not None:
        if args.check_start and args.root is None:
            shutil.rmtree(root, ignore_errors=True)  # the temporary demo store served only this check
        else:
            print(f"sessionref: the demo store is in {visible(root)}", file=sys.stderr)
    return 0


def _check_start(app: SessionRefApp) -> str | None:
    """Run ``app`` headless until its first screen is painted with the listing in it; the line to
    print then, or ``None`` when that did not happen in time."""
    from textual.pilot import Pilot  # (Textual only once the app starts)

    started: list[str] = []

    async def first_paint(pilot: Pilot[object]) -> None:
        deadline = time.monotonic() + CHECK_START_SECONDS
        while not app.workspace.catalog_loaded.is_set() and time.monotonic() < deadline:
            await pilot.pause(0.02)
        if app.workspace.catalog_loaded.is_set():
            await pilot.pause()  # the refresh that paints the listing
            started.append(
                f"sessionref {sessionref_version()} started: {len(app.workspace.catalog.records)} sessions listed, "
                f"on {visible(app.workspace.session.id)}"
            )
        app.exit()

    app.run(headless=True, size=(120, 40), auto_pilot=first_paint)
    return started[0] if started else None


if __name__ == "__main__":
    raise SystemExit(main())
