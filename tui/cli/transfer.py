"""``sessionref import DIR --store URL`` and ``sessionref export DIR --store URL``: move sessions
between a JSONL store (dsh's layout) and a PostgreSQL database, with a progress bar.

Exit codes: 0 everything moved, 1 some sessions were left out (each is named), 2 bad arguments,
3 the database cannot be used.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from core.display import visible
from core.errors import SessionQueryError
from core.settings import CommandTaker, add_setting_flags, source_settings

if TYPE_CHECKING:
    pass

EXIT_DATABASE = 3


def add_commands(commands: CommandTaker) -> None:
    """``sessionref import`` and ``sessionref export`` in the command line's parser."""
    for kind in ("import", "export"):
        into = kind == "import"
        parser = commands.add_parser(
            kind,
            help="copy a folder store into a PostgreSQL database"
            if into
            else "write a database's sessions as a folder store dsh reads",
            description=(
                "Copy every session of a JSONL store into a PostgreSQL database, whatever each file's encoding "
                "(zstd or plain; a folder may mix them). Idempotent and resumable: a session already there gains "
                "only what was added since; each session is one transaction."
                if into
                else "Write every session of a PostgreSQL database as a JSONL store dsh lists and loads. "
                "Existing files are never overwritten: the same events are skipped, others reported."
            ),
        )
        if into:
            parser.add_argument("directory", metavar="DIR", help="the JSONL store folder")
            parser.add_argument("--store", metavar="URL", required=True, help="the database (postgresql://...)")
            parser.set_defaults(run=transfer_command, parser=parser)
            continue
        parser.usage = (
            "%(prog)s DIR --store URL [--compression {zstd,none}]\n"
            "       %(prog)s SESSION --format {markdown,html} [-o FILE] [--root DIR | --store URL] [--no-redaction]"
        )
        parser.description = (
            "Write every session of a PostgreSQL database as a JSONL store dsh lists and loads (existing files are "
            "never overwritten), or, with --format, one session as people read it: Markdown or a self-contained "
            "HTML page, its secrets masked, for a pull request or a ticket."
        )
        parser.add_argument("directory", metavar="DIR|SESSION", help="the JSONL store folder, or the session to read")
        parser.add_argument("--store", metavar="URL", help="the database (postgresql://...)")
        parser.add_argument(
            "--compression",
            choices=["zstd", "none"],
            default="zstd",
            help="how the files are written: zstd frames (default, as dsh writes) or plain JSONL",
        )
        parser.add_argument(
            "--format",
            choices=["markdown", "html"],
            help="write one session as people read it (title, folder, times, turns; reasoning folded, tool calls cut)",
        )
        parser.add_argument("-o", "--output", metavar="FILE", help="with --format: the file to write (default: stdout)")
        add_setting_flags(parser, [*source_settings(), "redaction", "root", "config"])
        parser.set_defaults(run=transfer_command, parser=parser)


def transfer_command(args: argparse.Namespace) -> int:
    """Run ``sessionref import`` or ``sessionref export`` (``args.command``)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.text import Text

    from core.stores import open_store

    kind = args.command
    into = kind == "import"
    parser: argparse.ArgumentParser = args.parser
    if not into and args.format is not None:
        from tui.cli.readable_export import readable_export

        return readable_export(args)
    if not into and args.store is None:
        parser.error("give --store URL (the database to write out), or --format for one session as people read it")
    if into and not os.path.isdir(args.directory):
        parser.error(f"{visible(args.directory)} is not a folder store (no such folder)")
    from core.database.transfer import export_jsonl, import_jsonl  # (psycopg only for these commands)

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        store = open_store(url=args.store)
    except SessionQueryError as error:
        console.print(Text(f"sessionref {kind}: {visible(error.line)}"))
        return EXIT_DATABASE
    columns = (TextColumn(kind.capitalize() + "ing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    try:
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task(kind, total=None)

            def advance(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            if into:
                report = import_jsonl(args.directory, store, progress=advance)
            else:
                report = export_jsonl(store, args.directory, compression=args.compression, progress=advance)
    finally:
        store.close()
    verb = "imported" if into else "exported"
    summary = f"{report.copied} sessions {verb}, {report.events} events"
    if into:
        summary += f"; {report.extended} extended"
    summary += f"; {report.unchanged} already there"
    print(summary)
    for problem in report.problems:
        console.print(Text(f"left out: {visible(problem)}"))
    return 1 if report.problems else 0
