"""``sessionref db init --store URL``: an administrator gives a database the store's schema once
(and migrates an earlier one); the app and ``import`` never create anything themselves.

Exit codes: 0 done, 2 bad arguments, 3 the database cannot be used or refused a step (the role
lacks a privilege, an unsafe schema is in the way), each said in one line.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from core.errors import SessionQueryError
from core.settings import CommandTaker, add_database_options, required_database_url

if TYPE_CHECKING:
    pass

EXIT_DATABASE = 3


def add_commands(commands: CommandTaker) -> None:
    """``sessionref db`` (and its own commands) in the command line's parser."""
    parser = commands.add_parser(
        "db",
        help="administer the PostgreSQL session database (db init, once, by an administrator)",
        description="Administer the PostgreSQL session database (run by an administrator, not by each user).",
    )
    actions = parser.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    init = actions.add_parser(
        "init",
        help="create the store's schema, its owner role and grants, or migrate an earlier schema",
        description="Create the sessionref schema in the database, owned by the NOLOGIN role sessionref_owner "
        "(created too), with the pg_trgm extension and the grants every user of the database needs; or migrate "
        "an earlier schema (versions 1-3 in public) there with its sessions. Run once by an administrator: a "
        "role that may create roles, schemas and extensions (a superuser; moving an earlier schema needs to "
        "own its tables). Safe to run again.",
    )
    add_database_options(init)
    init.set_defaults(run=db_command, parser=init)


def db_command(args: argparse.Namespace) -> int:
    """Run ``sessionref db init``."""
    from tui.services.text import visible

    init: argparse.ArgumentParser = args.parser
    url = required_database_url(init, args, "give the database: --store postgresql://... (or $SESSIONREF_STORE)")
    from core.database.schema import SCHEMA_VERSION
    from core.database.setup import initialize_database  # psycopg only for database commands

    try:
        report = initialize_database(url)
    except SessionQueryError as error:
        print(visible(f"sessionref db init: {error.line}"), file=sys.stderr)
        return EXIT_DATABASE
    before = report.before
    if before.version == 0:
        done = f"created the sessionref schema (version {SCHEMA_VERSION})"
    elif before.legacy or before.version < SCHEMA_VERSION:
        where = " in public" if before.legacy else ""
        done = f"migrated the sessionref schema from version {before.version}{where} to {SCHEMA_VERSION}"
    else:
        done = f"the sessionref schema is current (version {SCHEMA_VERSION}); its grants and security were checked"
    role = "created the NOLOGIN role sessionref_owner, which owns it" if report.created_role else (
        "owned by the NOLOGIN role sessionref_owner"
    )  # fmt: skip
    print(f"{done}; {role}")
    return 0
