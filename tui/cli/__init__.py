"""The ``sessionref`` command and its subcommands (the app is imported only when it starts).

``sessionref --version`` answers before anything else is imported: it is what scripts and agents run
to check the command is there.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sessionref`` console script; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments == ["--version"]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"sessionref {version('sessionref')}")
        except PackageNotFoundError:
            print("sessionref unknown")
        return 0
    from tui.cli.command import main as run

    return run(argv)


__all__ = ["main"]
