"""``sessionref export SESSION --format markdown|html [-o FILE]``: one session, from any source the
app lists (this store, other agents', a team store), written as people read it (``core.export``).

Exit codes: 0 written, 1 no such session (or it cannot be read), 2 bad arguments, 3 the store
cannot be used.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from core.display import visible_lines
from core.errors import SessionQueryError, SessionReferenceError
from core.settings import ConfigError, effective_settings, external_sources, given, load_config
from tui.cli.command_error import CommandError
from tui.cli.options import open_command_store

if TYPE_CHECKING:
    pass

EXIT_MISSING = 1


def readable_export(args: argparse.Namespace) -> int:
    """Write the session ``args.directory`` names as ``args.format``."""
    from core.catalog.catalog import SessionCatalog
    from core.export.readable import readable, to_html, to_markdown
    from core.reference.uri import decode_session_reference_uri
    from tui.services.text import visible

    parser: argparse.ArgumentParser = args.parser
    try:
        effective = effective_settings(load_config(args.config), given(args), dict(os.environ))
    except ConfigError as error:
        parser.exit(2, f"sessionref export: {visible(error.line)}\n")
    session_id = args.directory
    if session_id.startswith("dsh-session:"):
        try:
            session_id = decode_session_reference_uri(session_id)
        except SessionReferenceError as error:
            parser.exit(2, f"sessionref export: {visible(error.line)}\n")
    settings = effective.settings
    store = open_command_store("export", root=args.root, url=args.store, keep_listing=False)
    catalog = SessionCatalog(store, external_sources(effective))
    try:
        surface = catalog.surface(session_id)
        title = catalog.title(session_id)
    except SessionQueryError as error:
        raise CommandError(f"sessionref export: {error.line}", EXIT_MISSING) from error
    finally:
        store.close()
    session = readable(surface, title.title if title is not None else None, redact=settings.redaction)
    text = to_markdown(session) if args.format == "markdown" else to_html(session)
    if args.output is None:
        # To a terminal, what the session holds never acts on it (an escape sequence in another
        # tool's transcript is shown, not obeyed); to a pipe or a file, the text as it is.
        sys.stdout.write(visible_lines(text) if sys.stdout.isatty() else text)
    else:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
        masked = f"{session.masked} secrets masked" if session.redacted else "secrets NOT masked (--no-redaction)"
        print(visible(f"sessionref export: {session_id} written to {args.output} ({args.format}, {masked})"))
    return 0
