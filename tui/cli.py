"""The ``sessionref`` command line."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sessionref`` console script."""
    parser = argparse.ArgumentParser(
        prog="sessionref",
        description="Terminal chat where @ references another session as a bounded, read-only snapshot.",
    )
    parser.add_argument("--demo", action="store_true", help="open the app on a freshly seeded demo store")
    parser.parse_args(argv)
    print("sessionref: the terminal app is not built yet; the engine is in `core` (see README).", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
