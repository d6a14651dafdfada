"""The ``sessionref`` command's options: the parser, and which options a served app passes on."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from core.display import visible
from core.errors import SessionQueryError, SessionReferenceError
from core.settings import (
    ConfigError,
    Effective,
    add_setting_flags,
    effective_settings,
    given,
    load_config,
    source_settings,
)
from tui.cli.command_error import CommandError
from tui.cli.version import sessionref_version

if TYPE_CHECKING:
    from core.settings import RunConfig
    from core.stores import SessionStore

EXIT_USAGE = 2
EXIT_ROOT = 3
EXIT_SESSION = 4


class _Version(argparse.Action):
    """``--version``: the package's version, read when asked (not each time the parser is built)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **_: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        parser.exit(0, f"{parser.prog} {sessionref_version()}\n")


def default_root() -> str:
    """The platform's user data folder for sessionref (``~/.local/share/sessionref/sessions`` on Linux)."""
    import platformdirs

    return os.path.join(platformdirs.user_data_dir("sessionref", appauthor=False), "sessions")


def build_parser() -> argparse.ArgumentParser:
    """The app's parser: its options (``tui.cli.command.command_parser`` adds the subcommands)."""
    parser = argparse.ArgumentParser(
        prog="sessionref",
        epilog="Each command has its own --help (sessionref mcp --help).",
        description=(
            "A terminal chat in which typing @ references another chat session: the model receives a bounded, "
            "read-only snapshot of it with your request, and the preview shows exactly what before you send."
        ),
    )
    parser.add_argument("--version", action=_Version)
    add_app_arguments(parser)
    return parser


def add_app_arguments(parser: argparse.ArgumentParser) -> None:
    """The app's options (also ``sessionref config``'s)."""
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        help="the working directory new sessions belong to, absolute (default: the current directory)",
    )
    parser.add_argument("--session", metavar="ID", help="open this existing session instead of starting a new one")
    parser.add_argument(
        "--draft",
        metavar="TEXT",
        help="start with this in the prompt, unsent (its @mentions become chips): sessionref handoff --to "
        "sessionref starts the app so",
    )
    parser.add_argument(
        "--compression",
        choices=("zstd", "none"),
        default="zstd",
        help="how session logs are encoded: zstd frames (default, as dsh writes) or plain JSONL",
    )
    parser.add_argument(
        "--no-pack",
        dest="pack_chunks",
        action="store_false",
        help="write every streamed chunk as its own line instead of packing runs of them into one "
        "text-chunks row as dsh does (reading is the same either way)",
    )
    add_setting_flags(parser)
    parser.add_argument(
        "--serve",
        action="store_true",
        help="serve the app in the browser (textual-serve): every page opened runs it with these options",
    )
    parser.add_argument("--host", default="127.0.0.1", help="with --serve: the address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="with --serve: the port to listen on (default 8000)")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="open a fresh temporary store seeded with sample sessions (several folders, a compacted one, "
        "one too large for its budget, a hostile one, odd ids); --root then names where to create it",
    )
    parser.add_argument(
        "--check-start",
        action="store_true",
        help="start the app without a terminal, wait for its first screen and its listing, print one line "
        "and exit (0 when it started): checks an install, with every other option as given",
    )


def served_options(argv: list[str]) -> list[str]:
    """The options each served page runs ``sessionref`` with: ``argv`` without ``--serve``,
    ``--host`` and ``--port`` (and their values)."""
    own = {"--serve": 0, "--host": 1, "--port": 1}
    rest: list[str] = []
    skip = 0
    for item in argv:
        if skip:
            skip -= 1
            continue
        name = item.split("=", 1)[0]
        if name in own:
            skip = own[name] if "=" not in item else 0
            continue
        rest.append(item)
    return rest


def open_command_store(command: str, *, root: str | None, url: str | None, keep_listing: bool = True) -> SessionStore:
    """The store a subcommand works on: the database ``url``, else the folder ``root`` (default: the
    app's), which must exist (a subcommand never creates one).

    Raises:
        CommandError: it cannot be used (``sessionref <command>: …``, ``EXIT_ROOT``).
    """
    from core.stores import open_store

    try:
        if url is not None:
            return open_store(url=url)
        folder = check_store_folder(command, root)
        return open_store(root=folder, keep_listing=keep_listing)
    except SessionQueryError as error:
        raise CommandError(f"sessionref {command}: {error.line}", EXIT_ROOT) from error


def check_store_folder(command: str, root: str | None) -> str:
    """The store folder a subcommand works on (default: the app's), which must exist.

    Raises:
        CommandError: it does not (``EXIT_ROOT``).
    """
    folder = root or default_root()
    if not os.path.isdir(folder):
        raise CommandError(f"sessionref {command}: {folder} is not a session store folder", EXIT_ROOT)
    return folder


def add_store_options(parser: argparse.ArgumentParser) -> None:
    """A subcommand's store (``--root`` or ``--store``), other agents' folders, ``--no-redaction``,
    ``--no-meaning`` and ``--config``."""
    where = parser.add_mutually_exclusive_group()
    add_setting_flags(where, ["root", "store"])
    add_setting_flags(parser, [*source_settings(), "redaction", "meaning", "config"])


def command_settings(command: str, args: argparse.Namespace) -> tuple[Effective, RunConfig]:
    """The settings a subcommand runs with (config file < environment < flags) and the engine's config
    they give; a bad value ends it with one line (``sessionref <command>: …``) and ``EXIT_USAGE``."""
    effective = command_effective(command, args)
    return effective, command_run_config(command, args, effective)


def command_effective(command: str, args: argparse.Namespace) -> Effective:
    """The settings a subcommand runs with (see ``command_settings``), without the engine's config:
    the flags and the config file only (nothing of the engine imported)."""
    parser: argparse.ArgumentParser = args.parser
    try:
        return effective_settings(load_config(args.config), given(args), dict(os.environ))
    except ConfigError as error:
        parser.exit(EXIT_USAGE, f"sessionref {command}: {visible(error.line)}\n")


def command_run_config(command: str, args: argparse.Namespace, effective: Effective) -> RunConfig:
    """The engine's config ``effective`` gives (see ``command_settings``)."""
    from core.settings import run_config

    parser: argparse.ArgumentParser = args.parser
    try:
        return run_config(effective)
    except ConfigError as error:
        parser.exit(EXIT_USAGE, f"sessionref {command}: {visible(error.line)}\n")
    except SessionReferenceError as error:
        parser.exit(EXIT_USAGE, f"sessionref {command}: {visible(error.line)}\n")
