"""The ``sessionref`` command and its subcommands (the app is imported only when it starts).

``sessionref --version`` answers before anything else is imported: it is what scripts and agents run
to check the command is there. ``sessionref mcp`` is parsed without the other commands: an agent
starts it at the beginning of each of its sessions and waits for its first answer.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sessionref`` console script; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments == ["--version"]:
        from tui.cli.version import sessionref_version

        print(f"sessionref {sessionref_version()}")
        return 0
    if arguments[:1] == ["mcp"] and not {"-h", "--help"} & set(arguments):
        return _mcp(arguments)
    from tui.cli.command import main as run

    return run(argv)


def _mcp(arguments: list[str]) -> int:
    """``sessionref mcp …``, its parser alone (the same one the whole command line adds)."""
    import argparse

    from tui.cli.command_error import reported
    from tui.cli.mcp import add_commands

    parser = argparse.ArgumentParser(prog="sessionref")
    add_commands(parser.add_subparsers(dest="command", metavar="COMMAND"))
    args = parser.parse_args(arguments)
    return reported(lambda: args.run(args))


__all__ = ["main"]
