"""``sessionref share ID --with TEAM`` and ``sessionref unshare ID --with TEAM``: let a team (a
database role its members belong to) read and reference one of your sessions, or stop.

The database enforces it (row-level security): only the session's owner can share it, and the
team's members can then read and reference it, never write it. The database is ``--store``, else
``$SESSIONREF_STORE``, else ``[store] url`` of the config file.

A session that holds secrets (keys, tokens, passwords: ``core.secrets``) is not shared: the command
names their kinds and messages and stops (``SESSION_SHARE_HOLDS_SECRETS``) unless ``--allow-secrets``.

Exit codes: 0 done (or nothing to do), 1 refused (no such session, not yours, no such team, it holds
secrets), 2 bad arguments, 3 the database cannot be used.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from core.errors import SessionQueryError
from core.settings import CommandTaker, add_database_options, required_database_url
from tui.cli.command_error import CommandError

if TYPE_CHECKING:
    from core.stores import SessionStore

EXIT_REFUSED = 1
EXIT_DATABASE = 3
SHARE_HOLDS_SECRETS = "SESSION_SHARE_HOLDS_SECRETS"
"""``sessionref share`` refused: the session holds secrets (``--allow-secrets`` shares it anyway)."""


def add_commands(commands: CommandTaker) -> None:
    """``sessionref share`` and ``sessionref unshare`` in the command line's parser."""
    for kind in ("share", "unshare"):
        sharing = kind == "share"
        parser = commands.add_parser(
            kind,
            help="let a team read one of your sessions (a database store)"
            if sharing
            else "stop sharing a session with a team",
            description=(
                "Let the members of a team (a database role) read and reference one of your sessions."
                if sharing
                else "Stop sharing one of your sessions with a team."
            ),
        )
        parser.add_argument("session", metavar="ID", help="the session's id")
        parser.add_argument("--with", dest="team", metavar="TEAM", required=True, help="the team's database role")
        if sharing:
            parser.add_argument(
                "--allow-secrets",
                action="store_true",
                help="share it even though it holds secrets (keys, tokens, passwords): teammates will see them",
            )
        add_database_options(parser)
        parser.set_defaults(run=share_command, parser=parser)


def share_command(args: argparse.Namespace) -> int:
    """Run ``sessionref share`` or ``sessionref unshare`` (``args.command``)."""
    from core.stores import open_store
    from tui.services.text import visible

    kind = args.command
    sharing = kind == "share"
    parser: argparse.ArgumentParser = args.parser
    url = required_database_url(
        parser, args, "sharing needs a database: give --store postgresql://... (or $SESSIONREF_STORE)"
    )
    try:
        store = open_store(url=url)
    except SessionQueryError as error:
        raise CommandError(f"sessionref {kind}: {error.line}", EXIT_DATABASE) from error
    try:
        if sharing and not args.allow_secrets:
            held = _secrets_held(store, args.session)
            if held:
                store.close()
                raise CommandError(
                    f"sessionref share: session {args.session} holds secrets: {held}; teammates would read them. "
                    f"Nothing was shared; to share it anyway, add --allow-secrets ({SHARE_HOLDS_SECRETS})",
                    EXIT_REFUSED,
                )
        changed = store.share(args.session, args.team) if sharing else store.unshare(args.session, args.team)
        teams = store.shared_with(args.session)
    except SessionQueryError as error:
        code = EXIT_DATABASE if error.code == "SESSION_QUERY_DATABASE_UNAVAILABLE" else EXIT_REFUSED
        raise CommandError(f"sessionref {kind}: {error.line}", code) from error
    finally:
        store.close()
    what = ("shared with" if changed else "was already shared with") if sharing else (
        "no longer shared with" if changed else "was not shared with"
    )  # fmt: skip
    print(visible(f"{args.session} {what} {args.team}; shared with: {', '.join(teams) or 'nobody'}"))
    return 0


def _secrets_held(store: SessionStore, session_id: str) -> str:
    """The kinds of secret the session's conversation holds and where ("" when none, or when it cannot
    be read: then sharing it fails with the database's own reason)."""
    from core.reference.projection import project_conversation
    from core.secrets.conversation import describe_secrets, mask_conversation

    try:
        surface = store.surface(session_id)
    except SessionQueryError:
        return ""
    return describe_secrets(mask_conversation(project_conversation(surface)).masked)
