"""The ``sessionref`` command and its subcommands (the app is imported only when it starts)."""

from tui.cli.command import main

__all__ = ["main"]
