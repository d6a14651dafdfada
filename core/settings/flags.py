"""The settings' command-line flags, from their declarations: adding them to a parser, and reading
back the ones given."""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Iterable
from typing import Any, Protocol

from core.settings.config_file import ConfigError, default_config_path
from core.settings.declared import STORE_ENV, declarations, value_type
from core.settings.effective import database_url


def _scalar(name: str) -> Any:
    """The type a flag's text is converted to (``int`` for ``int | None``)."""
    kind = value_type(name)
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
    return kind if kind in (int, float) else str


class ArgumentTaker(Protocol):
    """A parser, or a group of its arguments: what flags are added to."""

    def add_argument(self, *names: str, **options: Any) -> argparse.Action:
        """Add one argument."""
        ...


def add_setting_flags(parser: ArgumentTaker, names: Iterable[str] | None = None) -> None:
    """Add the flag of every declared setting that has one (or of ``names`` only) to ``parser`` (a
    parser or an argument group); each stores into the setting's name, ``None`` when not given."""
    wanted = set(names) if names is not None else None
    for name, _default, declared in declarations():
        if declared.flag is None or (wanted is not None and name not in wanted):
            continue
        if declared.flag.startswith("--no-"):
            parser.add_argument(declared.flag, dest=name, action="store_false", default=None, help=declared.help)
            continue
        parser.add_argument(
            declared.flag,
            dest=name,
            type=_scalar(name),
            metavar=declared.metavar,
            choices=declared.choices,
            default=None,
            help=declared.help,
        )


def given(args: argparse.Namespace) -> dict[str, object]:
    """The settings given as flags (setting name -> value), from parsed arguments."""
    return {
        name: getattr(args, name)
        for name, _default, declared in declarations()
        if declared.flag is not None and getattr(args, name, None) is not None
    }


def add_database_options(parser: argparse.ArgumentParser) -> None:
    """``--store`` and ``--config``, for a command that works on the team store."""
    parser.add_argument("--store", metavar="URL", help=f"the database (default: ${STORE_ENV}, else the config)")
    parser.add_argument("--config", metavar="PATH", help=f"the config file (default: {default_config_path()})")


def required_database_url(parser: argparse.ArgumentParser, args: argparse.Namespace, missing: str) -> str:
    """The database a command's ``--store`` / ``--config`` name (``database_url``); a config file
    that cannot be used, or no database at all (``missing`` says what to give), exits 2 in one line."""
    from core.display import visible

    try:
        url = database_url(args.store, args.config)
    except ConfigError as error:
        parser.exit(2, f"{parser.prog}: {visible(str(error))}\n")
    if url is None:
        parser.error(missing)
    return url
