"""``sessionref mcp``: the command that serves the session tools over MCP (``core.mcp``)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from core.catalog import SessionCatalog
from core.mcp.server import SessionToolServer, client_gone, serve
from core.settings import CommandTaker


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


def open_tool_server(command: str, args: argparse.Namespace) -> SessionToolServer:
    """The session tools over the store and other agents' sessions a subcommand's options and settings
    name, for the folder it runs in (``sessionref mcp``, ``sessionref search``). The caller closes the
    server and its catalog's store.

    Raises:
        CommandError: the store cannot be used.
    """
    from tui.cli.options import command_settings, open_command_store

    run = command_settings(command, args)[1]
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
    """Run ``sessionref mcp``."""
    from tui.cli.options import sessionref_version

    server = open_tool_server("mcp", args)
    store = server.catalog.store
    try:
        server.start()
        asyncio.run(serve(server, sessionref_version()))
    except BaseException as error:
        if not client_gone(error):
            raise
        # The client went away: nothing more to answer, and nothing left to flush at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    finally:
        server.close()
        store.close()
    return 0
