"""``sessionref search QUERY``: find sessions from the shell, ranked, with the messages that match.

The same search as the `@` picker, the model's ``search_sessions`` and ``sessionref mcp`` (the
query language of ``core.search.search_query``), over the same store and other agents' sessions.
A store's message index is brought up to date first, its progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from core.display import visible
from core.settings import CommandTaker

if TYPE_CHECKING:
    from core.search.index_values import IndexStatus
    from core.search.meaning_index import MeaningProgress

ROLE_WORDS = {"user": "you", "assistant": "ai", "summary": "summary"}
DEFAULT_LIMIT = 10
MAX_LIMIT = 200


def add_commands(commands: CommandTaker) -> None:
    """``sessionref search`` in the command line's parser."""
    from tui.cli.options import add_store_options

    parser = commands.add_parser(
        "search",
        help="find sessions by what was said in them, ranked, with the messages that match",
        description="Search sessions (this store and other agents') by words in any order or a question; "
        '"quoted words" match as a phrase, identifiers (retry_budget.py) as typed. Prints the best '
        "matches first, each with its best-matching messages and their positions (read_session's). The config "
        "file's [store] url, [search] and the other agents' folders apply; --root and --store override its store.",
    )
    parser.add_argument("query", help="words to look for, or a question")
    parser.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, metavar="N", help=f"sessions at most (default {DEFAULT_LIMIT})"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON (search_sessions' shape)")
    add_store_options(parser)
    parser.set_defaults(run=search_command, parser=parser, demo=False)


def search_command(args: argparse.Namespace) -> int:
    """Run ``sessionref search``."""
    import asyncio

    from core.errors import SessionrefError
    from tui.cli.mcp import open_tool_server
    from tui.cli.options import EXIT_USAGE

    if not 1 <= args.limit <= MAX_LIMIT:
        args.parser.exit(EXIT_USAGE, f"sessionref search: --limit must be from 1 to {MAX_LIMIT}\n")
    server = open_tool_server("search", args)
    store = server.catalog.store
    progress = _Progress(sys.stderr.isatty())
    try:
        server.wait_for_index(progress, meaning=progress.meaning)
        progress.done()
        body = asyncio.run(server.find(args.query, args.limit))
    except KeyboardInterrupt:
        progress.done()
        return 130
    except SessionrefError as error:
        progress.done()
        print(visible(f"sessionref search: {error.line}"), file=sys.stderr)
        return 1
    finally:
        server.close()
        store.close()
    if args.json:
        print(json.dumps(body, ensure_ascii=False, indent=2))
    else:
        print(format_results(body, bold=sys.stdout.isatty()))
    return 0 if body["sessions"] else 1


class _Progress:
    """The index's progress on one stderr line, while it is being built (a terminal only)."""

    def __init__(self, shown: bool) -> None:
        self.shown = shown
        self.written = False

    def __call__(self, status: IndexStatus) -> None:
        if self.shown and not status.complete and status.total:
            sys.stderr.write(f"\rindexing messages: {status.indexed:,} of {status.total:,} sessions")
            sys.stderr.flush()
            self.written = True

    def meaning(self, done: MeaningProgress) -> None:
        if self.shown and not done.complete:
            sys.stderr.write(f"\r\x1b[Kembedding messages for search by meaning: {done.pending:,} chunks to go")
            sys.stderr.flush()
            self.written = True

    def done(self) -> None:
        if self.written:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.written = False


def format_results(body: dict[str, Any], *, bold: bool) -> str:
    """The search result as people read it: one block per session, best first. Every text from the
    sessions is shown with its control characters escaped; ``bold`` marks the matching words with
    the terminal's bold (else they are shown plain)."""
    lines: list[str] = []
    sessions = body["sessions"]
    if not sessions:
        lines.append(f"no session matches {visible(json.dumps(body['query'], ensure_ascii=False))}")
    for number, found in enumerate(sessions, 1):
        where = f"  {visible(found['cwd'])}" if "cwd" in found else ""
        lines.append(f"{number}. {visible(found['label'])}  [{visible(found['session'])}]{where}")
        for message in found.get("messages", []):
            role = ROLE_WORDS.get(message["role"], message["role"])
            lines.append(f"   #{message['message']} {role}: {_marked(message['text'], bold)}")
        if "matched" in found and not found.get("messages"):
            lines.append(f"   matched its {found['matched']}")
    if "note" in body:
        lines.append(f"({visible(body['note'])})")
    return "\n".join(lines)


def _marked(text: str, bold: bool) -> str:
    pieces = text.split("**")
    shown = [visible(piece) for piece in pieces]
    if len(pieces) % 2 == 0:  # an odd number of markers: a ** of the message itself; show it as is
        return visible(text)
    if not bold:
        return "".join(shown)
    return "".join(f"\x1b[1m{piece}\x1b[22m" if index % 2 else piece for index, piece in enumerate(shown))
