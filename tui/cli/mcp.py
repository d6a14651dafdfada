"""``sessionref mcp``: the command that serves the session tools over MCP (``core.mcp``).

It starts in a blink: the flags and the config file are read first (a bad one is one line and exit
2, before anything is served), then the handshake is answered while the store, its index and other
agents' sessions open on a thread (``core.mcp.stdio``). Nothing heavy is imported before the first
answer; ``sessionref mcp`` is parsed without the other commands (``tui.cli.main``'s fast path).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from core.settings import CommandTaker

if TYPE_CHECKING:
    from core.mcp.server import SessionToolServer
    from core.settings import Effective


def add_commands(commands: CommandTaker) -> None:
    """``sessionref mcp`` in the command line's parser."""
    from tui.cli.options import add_store_options

    parser = commands.add_parser(
        "mcp",
        help="serve the session tools to another agent (Claude Code, Codex, Cursor, Zed) over MCP",
        description="Serve the session tools (search_sessions, reference_session, read_session) to an agent over "
        "the Model Context Protocol on stdio. Read-only. The config file's [store] url, [reference] limits, "
        "[search] and [tools] read_bytes apply; --root and --store override its store.",
    )
    add_store_options(parser)
    parser.set_defaults(run=mcp_command, parser=parser, demo=False)


def open_tool_server(command: str, args: argparse.Namespace, effective: Effective | None = None) -> SessionToolServer:
    """The session tools over the store and other agents' sessions a subcommand's options and settings
    name, for the folder it runs in (``sessionref mcp``, ``sessionref search``). The caller closes the
    server and its catalog's store.

    Raises:
        CommandError: the store cannot be used.
    """
    from core.catalog import SessionCatalog
    from core.mcp.server import SessionToolServer
    from tui.cli.options import command_run_config, command_settings, open_command_store

    run = command_settings(command, args)[1] if effective is None else command_run_config(command, args, effective)
    opened = open_command_store(command, root=run.store.root, url=run.store.url if run.store.root is None else None)
    return SessionToolServer(
        SessionCatalog(opened, run.sources),
        os.getcwd(),
        config=run.reference,
        read_bytes=run.tools.read_bytes,
        body_search=run.search.body_search,
        redact=run.redact,
        embedder=run.search.embedder,
    )


def mcp_command(args: argparse.Namespace) -> int:
    """Run ``sessionref mcp``.

    Raises:
        CommandError: the store cannot be used (``EXIT_ROOT``), found before serving for a folder.
    """
    import asyncio

    from core.mcp.stdio import Opening, client_gone, serve
    from tui.cli.options import check_store_folder, command_effective
    from tui.cli.version import sessionref_version

    effective = command_effective("mcp", args)  # (a bad flag or file: one line, exit 2, nothing served)
    settings = effective.settings
    if settings.store is None or settings.root is not None:
        check_store_folder("mcp", settings.root)  # (a missing folder: one line, exit 3, nothing served)
    opening = Opening(lambda: _started(open_tool_server("mcp", args, effective)))
    try:
        asyncio.run(serve(opening, settings.tool_read_bytes, sessionref_version()))
    except BaseException as error:
        if not client_gone(error):
            raise
        # The client went away: nothing more to answer, and nothing left to flush at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    finally:
        server = opening.opened()
        if server is not None:
            server.close()
            server.catalog.store.close()
    return 0


def _started(server: SessionToolServer) -> SessionToolServer:
    server.start()  # (lists the store and begins indexing, in the background)
    return server
