"""How a subcommand fails: it raises ``CommandError`` with the one line to say and the exit code, and
``main`` prints it once, on stderr (control characters shown, never sent raw to the terminal)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from core.display import visible
from core.errors import SessionrefError

COMMAND_FAILED = "SESSIONREF_COMMAND_FAILED"


class CommandError(SessionrefError):
    """A command that cannot go on: ``message`` is the whole line (``sessionref <command>: …``)."""

    def __init__(self, message: str, exit_code: int, code: str = COMMAND_FAILED) -> None:
        super().__init__(message, code)
        self.exit_code = exit_code


def reported(run: Callable[[], int]) -> int:
    """``run``'s exit code; a ``CommandError`` it raises printed once, its line on stderr, and its code."""
    try:
        return run()
    except CommandError as error:
        print(visible(error.message), file=sys.stderr)
        return error.exit_code
