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
    from core.settings import default_config_path
    from tui.cli.options import add_store_options

    parser = commands.add_parser(
        "mcp",
        help="serve the session tools to another agent (Claude Code, Codex, Cursor, Zed) over MCP",
        description="Serve the session tools (search_sessions, reference_session, read_session) to an agent over "
        "the Model Context Protocol on stdio. Read-only.",
    )
    add_store_options(
        parser,
        f"the config file (default: {default_config_path()}, used when it exists): its [store] url, "
        "[reference] limits, [search] and [tools] read_bytes apply; --root and --store override its store",
    )
    parser.set_defaults(run=mcp_command, parser=parser, demo=False)


def mcp_command(args: argparse.Namespace) -> int:
    """Run ``sessionref mcp``."""
    from core.settings import external_sources
    from tui.cli.options import command_settings, open_command_store, sessionref_version

    effective, config = command_settings("mcp", args)
    settings = effective.settings
    opened = open_command_store("mcp", root=args.root, url=settings.store if args.root is None else None)
    if isinstance(opened, int):
        return opened
    store = opened
    server = SessionToolServer(
        SessionCatalog(store, external_sources(effective)),
        os.getcwd(),
        config=config,
        read_bytes=settings.tool_read_bytes,
        body_search=settings.body_search,
        redact=settings.redaction,
    )
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
