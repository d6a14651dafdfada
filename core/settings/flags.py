"""The settings' command-line flags, from their declarations: adding them to a parser, and reading
back the ones given."""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Callable, Iterable
from typing import Protocol

from core.settings.config_file import ConfigError
from core.settings.declared import declarations, value_type
from core.settings.effective import database_url


def _scalar(name: str) -> type[int] | type[float] | type[str]:
    """The type a flag's text is converted to (``int`` for ``int | None``)."""
    kind = value_type(name)
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
    if kind is int or kind is float:
        return kind
    return str


class ArgumentTaker(Protocol):
    """A parser, or a group of its arguments: what flags are added to."""

    def add_argument(
        self,
        *names: str,
        action: str = ...,
        dest: str | None = ...,
        type: Callable[[str], object] = ...,
        metavar: str | None = ...,
        choices: Iterable[str] | None = ...,
        default: None = ...,
        help: str | None = ...,
    ) -> argparse.Action:
        """Add one argument (with the options the settings' flags use)."""
        ...


class CommandTaker(Protocol):
    """The subcommands of a parser (``add_subparsers()``'s result): what a command is added to."""

    def add_parser(
        self, name: str, *, help: str | None = ..., description: str | None = ...
    ) -> argparse.ArgumentParser:
        """Add the command ``name`` (with its line in the list of commands and its own help); its parser."""
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


def source_settings() -> list[str]:
    """The settings of the other agents' sources (the ``[sources]`` table): their folders, and whether
    they are listed at all."""
    return [name for name, _default, declared in declarations() if declared.file and declared.file[0] == "sources"]


def given(args: argparse.Namespace) -> dict[str, object]:
    """The settings given as flags (setting name -> value), from parsed arguments."""
    return {
        name: getattr(args, name)
        for name, _default, declared in declarations()
        if declared.flag is not None and getattr(args, name, None) is not None
    }


def add_database_options(parser: argparse.ArgumentParser) -> None:
    """``--store`` and ``--config``, for a command that works on the team store."""
    add_setting_flags(parser, ["store", "config"])


def required_database_url(parser: argparse.ArgumentParser, args: argparse.Namespace, missing: str) -> str:
    """The database a command's ``--store`` / ``--config`` name (``database_url``); a config file
    that cannot be used, or no database at all (``missing`` says what to give), exits 2 in one line."""
    from core.display import visible

    try:
        url = database_url(args.store, args.config)
    except ConfigError as error:
        parser.exit(2, f"{parser.prog}: {visible(error.line)}\n")
    if url is None:
        parser.error(missing)
    return url
