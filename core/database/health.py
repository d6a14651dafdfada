"""``sessionref doctor --store URL``: is the team store safe to use, as the connecting role sees it?

Read-only. It says who owns the schema and everything in it, whether row-level security is forced
on every table and whether every function keeps a fixed ``search_path``; and it warns when the
connecting role can read around row-level security: a superuser, a role with ``BYPASSRLS``, or a
member of the owner role (who could switch the security off). Findings are the folder doctor's
(``core.folder.doctor``), so the report reads the same.
"""

from __future__ import annotations

from typing import Any

import psycopg

from core.database.connect import OWNER_ROLE, SCHEMA, connect
from core.database.errors import server_words
from core.database.schema import INIT_COMMAND, SCHEMA_VERSION, TABLES, ownership_problems, schema_state
from core.folder.doctor import Diagnosis, Finding

_WHERE = f"schema {SCHEMA}"


def diagnose_database(conninfo: str) -> Diagnosis:
    """Check the team store at ``conninfo`` (see the module docstring); never changes anything."""
    diagnosis = Diagnosis(root=_WHERE)
    try:
        with connect(conninfo, autocommit=True, connect_timeout=10) as connection:
            _diagnose(connection, diagnosis)
    except psycopg.Error as error:
        diagnosis.heading = "store: the session database"
        diagnosis.findings.append(
            Finding(
                "error",
                "unreachable",
                "database",
                f"cannot read it: {server_words(error)}",
                code="SESSION_QUERY_DATABASE_UNAVAILABLE",
            )
        )
    return diagnosis


def _diagnose(connection: psycopg.Connection[Any], diagnosis: Diagnosis) -> None:
    add = diagnosis.findings.append
    database, user, superuser, bypass, member = _who(connection)
    state = schema_state(connection)
    diagnosis.heading = f"store: database {database} as {user}"
    if state.version == 0:
        add(
            Finding(
                "error",
                "missing_schema",
                _WHERE,
                f"there is no sessionref schema: an administrator runs {INIT_COMMAND}",
            )
        )
    elif state.legacy or state.version < SCHEMA_VERSION:
        where = " in public" if state.legacy else ""
        add(
            Finding(
                "error",
                "outdated_schema",
                _WHERE,
                f"schema version {state.version}{where}, which its first user owns and can read around: an "
                f"administrator migrates it with {INIT_COMMAND}",
            )
        )
    if superuser or bypass:
        what = "a superuser" if superuser else "a role with BYPASSRLS"
        add(
            Finding(
                "warning",
                "sees_everything",
                user,
                f"you connect as {what}: row-level security does not apply, so you see and can change every "
                "member's sessions; connect as your own role to use sessionref",
            )
        )
    if member and not superuser:
        add(
            Finding(
                "warning",
                "owner_member",
                user,
                f"you are a member of {OWNER_ROLE}, which owns the tables: you could switch row-level security "
                f"off and read every session (REVOKE {OWNER_ROLE} FROM {user})",
            )
        )
    if state.legacy or state.version == 0:
        return
    diagnosis.heading += f" (schema version {state.version})"
    problems = ownership_problems(connection)
    for problem in problems:
        add(Finding("error", "unsafe_owner", _WHERE, problem, code="SESSION_QUERY_UNSAFE_OWNER"))
    for name in _functions_without_search_path(connection):
        add(Finding("error", "open_search_path", f"{SCHEMA}.{name}", "the function has no fixed search_path"))
    if _may_create(connection) and not member and not superuser:
        add(
            Finding(
                "warning",
                "schema_writable",
                _WHERE,
                f"you may create objects in {SCHEMA}: only {OWNER_ROLE} should (REVOKE CREATE ON SCHEMA {SCHEMA} "
                "FROM PUBLIC)",
            )
        )
    if not problems:
        tables = ", ".join(f"{SCHEMA}.{table}" for table in TABLES)
        add(
            Finding(
                "info",
                "ownership",
                _WHERE,
                f"the schema and everything in it belong to {OWNER_ROLE}, a role that cannot log in; row-level "
                f"security is forced on {tables}",
            )
        )
    row = connection.execute("SELECT count(*) FROM sessionref.sessionref_sessions").fetchone()
    diagnosis.sessions = int(row[0]) if row is not None else 0
    diagnosis.heading += f": {diagnosis.sessions} sessions visible to {user}"


def _who(connection: psycopg.Connection[Any]) -> tuple[str, str, bool, bool, bool]:
    row = connection.execute(
        "SELECT pg_catalog.current_database(), current_user, r.rolsuper, r.rolbypassrls, "
        "EXISTS (SELECT 1 FROM pg_catalog.pg_roles o WHERE o.rolname = %s "
        "        AND pg_catalog.pg_has_role(current_user, o.oid, 'MEMBER')) "
        "FROM pg_catalog.pg_roles r WHERE r.rolname = current_user",
        (OWNER_ROLE,),
    ).fetchone()
    assert row is not None
    return str(row[0]), str(row[1]), bool(row[2]), bool(row[3]), bool(row[4])


def _functions_without_search_path(connection: psycopg.Connection[Any]) -> list[str]:
    rows = connection.execute(
        "SELECT p.proname::text FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'sessionref'::regnamespace "
        "AND p.proname LIKE 'sessionref\\_%%' AND NOT EXISTS (SELECT 1 FROM pg_catalog.unnest(p.proconfig) c "
        "WHERE c LIKE 'search\\_path=%%') ORDER BY 1"
    ).fetchall()
    return [str(row[0]) for row in rows]


def _may_create(connection: psycopg.Connection[Any]) -> bool:
    row = connection.execute("SELECT pg_catalog.has_schema_privilege(current_user, 'sessionref', 'CREATE')").fetchone()
    return bool(row is not None and row[0])
