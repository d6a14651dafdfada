"""The ``sessionref`` command's options: the parser, and which options a served app passes on."""

from __future__ import annotations

import argparse
import os
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

import platformdirs

from core import (
    INDEX_FILE_NAME,
)
from core.agent.openai_model import DEEPSEEK_BASE_URL, DEEPSEEK_MODEL
from core.sessions.sources.claude import ClaudeCodeSource, claude_root
from core.sessions.sources.codex import CodexSource, codex_root
from core.sessions.sources.merged import ExternalSource
from tui.services.settings import (
    default_config_path,
)

EXIT_USAGE = 2
EXIT_ROOT = 3
EXIT_SESSION = 4
BODY_SEARCH_ENV = "SESSIONREF_BODY_SEARCH"
"""Environment switch for message search: 0/false/off/no turns it off, 1/true/on/yes on."""


def sessionref_version() -> str:
    """The installed package's version (its metadata), or ``unknown`` for a source tree never installed."""
    try:
        return package_version("sessionref")
    except PackageNotFoundError:
        return "unknown"


def default_root() -> str:
    """The platform's user data folder for sessionref (``~/.local/share/sessionref/sessions`` on Linux)."""
    return os.path.join(platformdirs.user_data_dir("sessionref", appauthor=False), "sessions")


def external_sources(args: argparse.Namespace) -> tuple[ExternalSource, ...]:
    """Claude Code's and Codex's sessions, read-only (the demo lists them only when asked to)."""
    if not args.external:
        return ()
    sources: list[ExternalSource] = []
    if args.claude_root is not None or not args.demo:
        sources.append(ClaudeCodeSource(args.claude_root or claude_root()))
    if args.codex_root is not None or not args.demo:
        sources.append(CodexSource(args.codex_root or codex_root()))
    return tuple(sources)


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
    parser.add_argument("--version", action="version", version=f"%(prog)s {sessionref_version()}")
    add_app_arguments(parser)
    return parser


def add_app_arguments(parser: argparse.ArgumentParser) -> None:
    """The app's options (also ``sessionref config``'s)."""
    parser.add_argument(
        "--root", metavar="DIR", help=f"the session store folder (default: {default_root()}); created when missing"
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="keep sessions in a PostgreSQL database instead of a folder (postgresql://user@host/db; also "
        "$SESSIONREF_STORE or [store] url in the config file; the password comes from ~/.pgpass or $PGPASSWORD)",
    )
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        help="the working directory new sessions belong to, absolute (default: the current directory)",
    )
    parser.add_argument("--session", metavar="ID", help="open this existing session instead of starting a new one")
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
    parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"the config file (default: {default_config_path()}, used when it exists); flags override it",
    )
    parser.add_argument("--profile", metavar="NAME", help="the model profile of the config file to use")
    parser.add_argument(
        "--model",
        dest="backend",
        choices=("echo", "openai"),
        help="echo: offline model that describes what it received (default without a profile); "
        "openai: any OpenAI-compatible chat API (key from the profile's api_key_env, else DEEPSEEK_API_KEY "
        "or OPENAI_API_KEY)",
    )
    parser.add_argument(
        "--base-url", metavar="URL", help=f"API base URL for --model openai (default: {DEEPSEEK_BASE_URL})"
    )
    parser.add_argument(
        "--model-name", metavar="NAME", help=f"model name for --model openai (default: {DEEPSEEK_MODEL})"
    )
    parser.add_argument(
        "--context-window",
        type=int,
        metavar="TOKENS",
        help="the model's context window (default: built in for DeepSeek's models, else learned from the server)",
    )
    parser.add_argument(
        "--reply-timeout",
        type=float,
        metavar="SECONDS",
        help="the longest one reply may take, first byte to last, before the turn ends with MODEL_TIMEOUT "
        "keeping what arrived (default 600)",
    )
    parser.add_argument(
        "--compaction-threshold",
        type=float,
        metavar="RATIO",
        help="compact the history before a send whose request would pass this share of the window (default 0.8)",
    )
    parser.add_argument(
        "--no-auto-compact",
        dest="auto_compact",
        action="store_false",
        default=None,
        help="compact only on demand (F8 or the command palette), not before sends or after a context error",
    )
    parser.add_argument(
        "--max-reference-bytes",
        type=int,
        metavar="N",
        help="UTF-8 bytes one referenced session may use in the prompt (maxReferenceBytes, default 65536)",
    )
    parser.add_argument(
        "--max-references",
        type=int,
        metavar="N",
        help="distinct sessions one message may reference (maxReferences, 1-3, default 3)",
    )
    parser.add_argument(
        "--candidate-limit",
        type=int,
        metavar="N",
        help="sessions the @ picker lists at most (candidateLimit, default 50)",
    )
    parser.add_argument(
        "--no-body-search",
        dest="body_search",
        action="store_false",
        default=None,
        help="search only titles, ids and folders in the @ picker: no message index is built or read "
        f"(also {BODY_SEARCH_ENV}=0; the index is {INDEX_FILE_NAME} in the store folder)",
    )
    parser.add_argument(
        "--no-tools",
        dest="tools",
        action="store_false",
        default=None,
        help="do not offer the model the session tools (search_sessions, reference_session, read_session)",
    )
    parser.add_argument(
        "--claude-root",
        metavar="DIR",
        help="Claude Code's folder, whose sessions are listed read-only (default: $CLAUDE_CONFIG_DIR, else ~/.claude)",
    )
    parser.add_argument(
        "--codex-root",
        metavar="DIR",
        help="Codex CLI's folder, whose sessions are listed read-only (default: $CODEX_HOME, else ~/.codex)",
    )
    parser.add_argument(
        "--no-external",
        dest="external",
        action="store_false",
        help="list only this store's sessions, not Claude Code's or Codex's (--demo does so unless a root is given)",
    )
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
