"""The PostgreSQL store's schema: who owns it, its tables, triggers and row-level security, and how a
database gets it (``sessionref db init``, run once by an administrator).

- **Its own schema, owned by nobody who logs in.** Everything lives in the schema ``sessionref``,
  owned by the ``NOLOGIN`` role ``sessionref_owner``. A table's owner can switch row-level security
  off (``ALTER TABLE ... NO FORCE ROW LEVEL SECURITY``) and read every session; no user is that
  role, so no user can. ``initialize`` creates the role, the schema, the ``pg_trgm`` extension and
  the grants, and builds or migrates the tables as that role; the app and ``import`` never create
  anything: against a database without the schema they say what to run (``require_current``).
- **Every name qualified.** Every statement names its objects with their schema, every function
  runs with ``SET search_path = pg_catalog, sessionref, pg_temp``, and every connection starts with
  ``search_path = pg_catalog, sessionref`` (``core.database.connect``): a table or function someone
  plants in a schema named after a user, or in ``public``, is never reached.
- **Rows and seqs**: sessions hold the header line, rows the JSONL rows; a statement-level trigger
  makes seqs only increase. **Owners and teams**: a session belongs to the role that created it,
  its owner may share it with roles (teams); row-level security, forced on every table, lets a role
  see its own sessions and those shared with a role it is a member of, and write only its own.
  **Changes** notify ``sessionref_changed`` with an empty payload. **Message search** keeps the
  projected conversation with a ``pg_trgm`` index.

Versions: 1 to 3 lived in ``public`` (``core.database.legacy_schema``); version 4 is the same tables
moved into ``sessionref`` with the ownership and names above; version 5 adds each message's words
(a ``tsvector``) for ranked search, 6 their vectors for search by meaning, 7 an index of the
sessions by revision (``_STEPS``). ``initialize`` takes a database of any earlier version there,
its sessions kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from core.database.connect import OWNER_ROLE, SCHEMA
from core.database.legacy_schema import LEGACY_STEPS, LEGACY_VERSION
from core.errors import SessionQueryError

SCHEMA_VERSION = 7
SESSION_QUERY_SCHEMA_TOO_NEW = "SESSION_QUERY_SCHEMA_TOO_NEW"
SESSION_QUERY_SCHEMA_MISSING = "SESSION_QUERY_SCHEMA_MISSING"
"""The database has no sessionref schema: an administrator runs ``sessionref db init`` once."""
SESSION_QUERY_SCHEMA_OUTDATED = "SESSION_QUERY_SCHEMA_OUTDATED"
"""The database has an earlier schema (versions 1-3 in ``public``): ``sessionref db init`` migrates it."""

INIT_COMMAND = "sessionref db init --store URL"
_FUNCTION = "LANGUAGE plpgsql SET search_path = pg_catalog, sessionref, pg_temp"

_TABLES = """
CREATE TABLE sessionref.sessionref_schema (version integer NOT NULL);
CREATE SEQUENCE sessionref.sessionref_revisions;
CREATE TABLE sessionref.sessionref_sessions (
    id text PRIMARY KEY,
    header text NOT NULL,
    cwd text,
    created_at bigint NOT NULL,
    last_seq bigint NOT NULL DEFAULT -1,
    owner name NOT NULL DEFAULT current_user,
    revision bigint NOT NULL DEFAULT pg_catalog.nextval('sessionref.sessionref_revisions'),
    title text
);
CREATE TABLE sessionref.sessionref_rows (
    session_id text NOT NULL REFERENCES sessionref.sessionref_sessions (id) ON DELETE CASCADE,
    first_seq bigint NOT NULL,
    last_seq bigint NOT NULL,
    row text NOT NULL,
    PRIMARY KEY (session_id, first_seq),
    CHECK (last_seq >= first_seq)
);
CREATE TABLE sessionref.sessionref_shares (
    session_id text NOT NULL REFERENCES sessionref.sessionref_sessions (id) ON DELETE CASCADE,
    grantee oid NOT NULL,
    owner name NOT NULL DEFAULT current_user,
    PRIMARY KEY (session_id, grantee)
);
CREATE TABLE sessionref.sessionref_messages (
    session_id text NOT NULL REFERENCES sessionref.sessionref_sessions (id) ON DELETE CASCADE,
    position integer NOT NULL,
    role text NOT NULL,
    body text NOT NULL,
    folded text NOT NULL,
    PRIMARY KEY (session_id, position)
);
CREATE INDEX sessionref_messages_folded ON sessionref.sessionref_messages USING gin (folded {trgm}.gin_trgm_ops);
"""
"""The tables of a new database at version 4 (``{trgm}``: the schema the ``pg_trgm`` extension lives
in); ``_STEPS`` brings them to ``SCHEMA_VERSION``."""

_STEPS = {
    5: """
ALTER TABLE sessionref.sessionref_messages ADD COLUMN IF NOT EXISTS words tsvector
    GENERATED ALWAYS AS (pg_catalog.to_tsvector('pg_catalog.english'::regconfig, folded)) STORED;
CREATE INDEX IF NOT EXISTS sessionref_messages_words ON sessionref.sessionref_messages USING gin (words);
""",
    6: """
CREATE TABLE IF NOT EXISTS sessionref.sessionref_vectors (
    session_id text NOT NULL,
    position integer NOT NULL,
    model text NOT NULL,
    dims integer NOT NULL,
    vector bytea NOT NULL,
    PRIMARY KEY (session_id, position, model),
    FOREIGN KEY (session_id, position) REFERENCES sessionref.sessionref_messages (session_id, position)
        ON DELETE CASCADE
);
""",
    7: """
CREATE INDEX IF NOT EXISTS sessionref_sessions_revision ON sessionref.sessionref_sessions (revision);
""",
}
"""Each version's change to the tables of the one before (5: every message's words, for ranked
search with PostgreSQL's own full text: ``to_tsvector`` with the English Snowball stemmer, the
algorithm the folder store's index stems with, ranked by ``ts_rank_cd``; 6: every message's vector
for search by meaning, per embedder, four bits a dimension as the folder store keeps them, ranked by
the client; a message rewritten or removed takes its vectors with it; 7: the sessions in order of
their last change, which a keystroke's ranked search walks newest first for a word most messages
hold, and a listing reads what changed since its last revision from)."""

_LOGIC = f"""
-- Seqs only increase, checked once per statement over all its rows (a batch is one multi-row
-- insert): the session row is updated once per batch, with a new revision.
CREATE OR REPLACE FUNCTION sessionref.sessionref_rows_follow() RETURNS trigger {_FUNCTION} AS $$
DECLARE
    broken record;
BEGIN
    PERFORM 1 FROM sessionref.sessionref_sessions s WHERE s.id IN (SELECT session_id FROM new_rows) FOR UPDATE;
    SELECT * INTO broken FROM (
        SELECT n.session_id, n.first_seq,
               coalesce(lag(n.last_seq) OVER (PARTITION BY n.session_id ORDER BY n.first_seq), s.last_seq) AS previous
        FROM new_rows n JOIN sessionref.sessionref_sessions s ON s.id = n.session_id
    ) c WHERE c.first_seq <= c.previous LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'seq % does not follow % in session %', broken.first_seq, broken.previous, broken.session_id
            USING ERRCODE = 'check_violation';
    END IF;
    UPDATE sessionref.sessionref_sessions s
        SET last_seq = m.last_seq, revision = pg_catalog.nextval('sessionref.sessionref_revisions')
        FROM (SELECT session_id, max(last_seq) AS last_seq FROM new_rows GROUP BY session_id) m
        WHERE s.id = m.session_id;
    RETURN NULL;
END;
$$;
-- A share or unshare gives the session a new revision: listings fetch only what moved.
CREATE OR REPLACE FUNCTION sessionref.sessionref_share_changed() RETURNS trigger {_FUNCTION} AS $$
BEGIN
    UPDATE sessionref.sessionref_sessions SET revision = pg_catalog.nextval('sessionref.sessionref_revisions')
        WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.session_id ELSE NEW.session_id END;
    RETURN NULL;
END;
$$;
-- Listeners hear that something changed, never what: they re-list what they may see.
CREATE OR REPLACE FUNCTION sessionref.sessionref_notify() RETURNS trigger {_FUNCTION} AS $$
BEGIN
    PERFORM pg_catalog.pg_notify('sessionref_changed', '');
    RETURN NULL;
END;
$$;
DROP TRIGGER IF EXISTS sessionref_rows_follow ON sessionref.sessionref_rows;
CREATE TRIGGER sessionref_rows_follow AFTER INSERT ON sessionref.sessionref_rows
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sessionref.sessionref_rows_follow();
DROP TRIGGER IF EXISTS sessionref_share_revision ON sessionref.sessionref_shares;
CREATE TRIGGER sessionref_share_revision AFTER INSERT OR DELETE ON sessionref.sessionref_shares
    FOR EACH ROW EXECUTE FUNCTION sessionref.sessionref_share_changed();
DROP TRIGGER IF EXISTS sessionref_sessions_changed ON sessionref.sessionref_sessions;
CREATE TRIGGER sessionref_sessions_changed AFTER INSERT OR UPDATE OR DELETE ON sessionref.sessionref_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION sessionref.sessionref_notify();
DROP TRIGGER IF EXISTS sessionref_shares_changed ON sessionref.sessionref_shares;
CREATE TRIGGER sessionref_shares_changed AFTER INSERT OR UPDATE OR DELETE ON sessionref.sessionref_shares
    FOR EACH STATEMENT EXECUTE FUNCTION sessionref.sessionref_notify();

ALTER TABLE sessionref.sessionref_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessionref.sessionref_sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE sessionref.sessionref_rows ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessionref.sessionref_rows FORCE ROW LEVEL SECURITY;
ALTER TABLE sessionref.sessionref_shares ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessionref.sessionref_shares FORCE ROW LEVEL SECURITY;
ALTER TABLE sessionref.sessionref_messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessionref.sessionref_messages FORCE ROW LEVEL SECURITY;
-- A share is seen by its owner and by the members of its grantee (no reference back to sessions,
-- so the policies below never recurse).
DROP POLICY IF EXISTS shares_read ON sessionref.sessionref_shares;
CREATE POLICY shares_read ON sessionref.sessionref_shares FOR SELECT
    USING (owner = current_user OR pg_catalog.pg_has_role(current_user, grantee, 'MEMBER'));
DROP POLICY IF EXISTS shares_add ON sessionref.sessionref_shares;
CREATE POLICY shares_add ON sessionref.sessionref_shares FOR INSERT WITH CHECK (
    owner = current_user
    AND EXISTS (SELECT 1 FROM sessionref.sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));
DROP POLICY IF EXISTS shares_remove ON sessionref.sessionref_shares;
CREATE POLICY shares_remove ON sessionref.sessionref_shares FOR DELETE USING (owner = current_user);
DROP POLICY IF EXISTS sessions_read ON sessionref.sessionref_sessions;
CREATE POLICY sessions_read ON sessionref.sessionref_sessions FOR SELECT USING (
    owner = current_user
    OR EXISTS (SELECT 1 FROM sessionref.sessionref_shares sh
               WHERE sh.session_id = id AND pg_catalog.pg_has_role(current_user, sh.grantee, 'MEMBER')));
DROP POLICY IF EXISTS sessions_create ON sessionref.sessionref_sessions;
CREATE POLICY sessions_create ON sessionref.sessionref_sessions FOR INSERT WITH CHECK (owner = current_user);
DROP POLICY IF EXISTS sessions_write ON sessionref.sessionref_sessions;
CREATE POLICY sessions_write ON sessionref.sessionref_sessions FOR UPDATE
    USING (owner = current_user) WITH CHECK (owner = current_user);
DROP POLICY IF EXISTS sessions_delete ON sessionref.sessionref_sessions;
CREATE POLICY sessions_delete ON sessionref.sessionref_sessions FOR DELETE USING (owner = current_user);
DROP POLICY IF EXISTS rows_read ON sessionref.sessionref_rows;
CREATE POLICY rows_read ON sessionref.sessionref_rows FOR SELECT
    USING (EXISTS (SELECT 1 FROM sessionref.sessionref_sessions s WHERE s.id = session_id));
DROP POLICY IF EXISTS rows_append ON sessionref.sessionref_rows;
CREATE POLICY rows_append ON sessionref.sessionref_rows FOR INSERT WITH CHECK (
    EXISTS (SELECT 1 FROM sessionref.sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));
DROP POLICY IF EXISTS messages_read ON sessionref.sessionref_messages;
CREATE POLICY messages_read ON sessionref.sessionref_messages FOR SELECT
    USING (EXISTS (SELECT 1 FROM sessionref.sessionref_sessions s WHERE s.id = session_id));
DROP POLICY IF EXISTS messages_add ON sessionref.sessionref_messages;
CREATE POLICY messages_add ON sessionref.sessionref_messages FOR INSERT WITH CHECK (
    EXISTS (SELECT 1 FROM sessionref.sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));
DROP POLICY IF EXISTS messages_remove ON sessionref.sessionref_messages;
CREATE POLICY messages_remove ON sessionref.sessionref_messages FOR DELETE USING (
    EXISTS (SELECT 1 FROM sessionref.sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));
ALTER TABLE sessionref.sessionref_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessionref.sessionref_vectors FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS vectors_read ON sessionref.sessionref_vectors;
CREATE POLICY vectors_read ON sessionref.sessionref_vectors FOR SELECT
    USING (EXISTS (SELECT 1 FROM sessionref.sessionref_sessions s WHERE s.id = session_id));
DROP POLICY IF EXISTS vectors_add ON sessionref.sessionref_vectors;
CREATE POLICY vectors_add ON sessionref.sessionref_vectors FOR INSERT WITH CHECK (
    EXISTS (SELECT 1 FROM sessionref.sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));
DROP POLICY IF EXISTS vectors_remove ON sessionref.sessionref_vectors;
CREATE POLICY vectors_remove ON sessionref.sessionref_vectors FOR DELETE USING (
    EXISTS (SELECT 1 FROM sessionref.sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));

-- Every role of the database may use the store (row-level security decides what it sees); only
-- the owner role may create anything in the schema.
REVOKE ALL ON SCHEMA sessionref FROM PUBLIC;
GRANT USAGE ON SCHEMA sessionref TO PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA sessionref FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON sessionref.sessionref_sessions, sessionref.sessionref_rows,
    sessionref.sessionref_shares TO PUBLIC;
GRANT SELECT, INSERT, DELETE ON sessionref.sessionref_messages, sessionref.sessionref_vectors TO PUBLIC;
GRANT SELECT ON sessionref.sessionref_schema TO PUBLIC;
GRANT USAGE ON SEQUENCE sessionref.sessionref_revisions TO PUBLIC;
"""
"""Functions, triggers, row-level security and grants: the same for a new and a migrated database."""

LEGACY_TABLES = ("sessionref_sessions", "sessionref_rows", "sessionref_shares", "sessionref_messages")
"""The tables a legacy layout (versions 1-3 in ``public``) has, moved into the schema as they are."""
TABLES = (*LEGACY_TABLES, "sessionref_vectors")
"""The tables row-level security guards (``sessionref_schema`` holds only the version)."""
_LEGACY_FUNCTIONS = (
    "sessionref_seqs_only_increase",
    "sessionref_rows_follow",
    "sessionref_share_changed",
    "sessionref_notify",
)


@dataclass(frozen=True)
class SchemaState:
    """Where a database's sessionref schema is and which version it holds."""

    version: int
    """0: none; 1-3: the legacy layout in ``public``; 4 and later: the ``sessionref`` schema."""
    legacy: bool
    """Whether it is the legacy layout in ``public``."""


def schema_state(connection: psycopg.Connection[Any]) -> SchemaState:
    """Which schema the database holds (``SchemaState(0, False)`` for none)."""
    found = connection.execute(
        "SELECT pg_catalog.to_regclass('sessionref.sessionref_schema') IS NOT NULL, "
        "pg_catalog.to_regclass('public.sessionref_schema') IS NOT NULL"
    ).fetchone()
    assert found is not None
    if found[0]:
        row = connection.execute("SELECT max(version) FROM sessionref.sessionref_schema").fetchone()
        return SchemaState(int(row[0]) if row is not None and row[0] is not None else 0, False)
    if found[1]:
        row = connection.execute("SELECT max(version) FROM public.sessionref_schema").fetchone()
        return SchemaState(int(row[0]) if row is not None and row[0] is not None else 0, True)
    return SchemaState(0, False)


def schema_version(connection: psycopg.Connection[Any]) -> int:
    """The schema version the database holds (0 when it holds none)."""
    return schema_state(connection).version


SESSION_QUERY_UNSAFE_OWNER = "SESSION_QUERY_UNSAFE_OWNER"
"""Something in the store's schema belongs to a role other than the owner role, the owner role can
log in, or row-level security is not forced on a table: whoever owns it could read every session."""

_FOREIGN_OBJECTS = """
SELECT kind, name, owner FROM (
    SELECT 'schema' AS kind, n.nspname::text AS name, n.nspowner AS owner_oid, n.oid AS objid,
           'pg_catalog.pg_namespace'::regclass AS classid
        FROM pg_catalog.pg_namespace n WHERE n.nspname = 'sessionref'
    UNION ALL
    SELECT 'relation', c.relname::text, c.relowner, c.oid, 'pg_catalog.pg_class'::regclass
        FROM pg_catalog.pg_class c WHERE c.relnamespace = 'sessionref'::regnamespace
    UNION ALL
    SELECT 'function', p.proname::text, p.proowner, p.oid, 'pg_catalog.pg_proc'::regclass
        FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'sessionref'::regnamespace
    UNION ALL
    SELECT 'operator', o.oprname::text, o.oprowner, o.oid, 'pg_catalog.pg_operator'::regclass
        FROM pg_catalog.pg_operator o WHERE o.oprnamespace = 'sessionref'::regnamespace
    UNION ALL
    SELECT 'type', t.typname::text, t.typowner,  -- an array type goes with its element type
           CASE WHEN t.typcategory = 'A' AND t.typelem <> 0 THEN t.typelem ELSE t.oid END,
           'pg_catalog.pg_type'::regclass
        FROM pg_catalog.pg_type t WHERE t.typnamespace = 'sessionref'::regnamespace
) o CROSS JOIN LATERAL (SELECT pg_catalog.pg_get_userbyid(o.owner_oid)::text AS owner) who
WHERE who.owner <> %s
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d  -- what an extension (pg_trgm) brought
                  WHERE d.classid = o.classid AND d.objid = o.objid AND d.deptype = 'e')
ORDER BY kind, name
"""


def ownership_problems(connection: psycopg.Connection[Any]) -> list[str]:
    """What in the store's schema would let a user around row-level security: anything owned by
    a role other than the ``NOLOGIN`` owner role (extension members aside), an owner role that can
    log in, a table without forced row-level security. Empty when the schema is sound (or absent)."""
    exists = connection.execute("SELECT pg_catalog.to_regnamespace('sessionref') IS NOT NULL").fetchone()
    if exists is None or not exists[0]:
        return []
    problems = [
        f"the {kind} sessionref.{name} belongs to {owner}, not {OWNER_ROLE}"
        if kind != "schema"
        else f"the schema sessionref belongs to {owner}, not {OWNER_ROLE}"
        for kind, name, owner in connection.execute(_FOREIGN_OBJECTS, (OWNER_ROLE,)).fetchall()
    ]
    role = connection.execute(
        "SELECT rolcanlogin OR rolsuper OR rolbypassrls FROM pg_catalog.pg_roles WHERE rolname = %s", (OWNER_ROLE,)
    ).fetchone()
    if role is None:
        problems.append(f"the role {OWNER_ROLE} does not exist")
    elif role[0]:
        problems.append(f"the role {OWNER_ROLE} can log in, is a superuser or bypasses row-level security")
    for name, forced in connection.execute(
        "SELECT c.relname::text, c.relrowsecurity AND c.relforcerowsecurity FROM pg_catalog.pg_class c "
        "WHERE c.relnamespace = 'sessionref'::regnamespace AND c.relname = ANY(%s) ORDER BY 1",
        (list(TABLES),),
    ).fetchall():
        if not forced:
            problems.append(f"row-level security is not forced on sessionref.{name}")
    return problems


def _refuse_unsafe(connection: psycopg.Connection[Any], doing: str) -> None:
    problems = ownership_problems(connection)
    if problems:
        raise SessionQueryError(
            f"{doing}: {'; '.join(problems)} (whoever owns it could read every session; an administrator "
            f"removes what does not belong and runs {INIT_COMMAND} again)",
            SESSION_QUERY_UNSAFE_OWNER,
        )


def require_current(connection: psycopg.Connection[Any]) -> None:
    """Check that the database holds the schema this code uses; never creates or changes anything.

    Raises:
        SessionQueryError: ``SESSION_QUERY_SCHEMA_MISSING`` (no schema: an administrator runs
            ``sessionref db init``), ``SESSION_QUERY_SCHEMA_OUTDATED`` (an earlier one, which the same
            command migrates), ``SESSION_QUERY_SCHEMA_TOO_NEW``.
    """
    state = schema_state(connection)
    if not state.legacy:
        _refuse_unsafe(connection, "the session database's schema is not safe to use")
    if state.version == 0:
        raise SessionQueryError(
            f"the database has no sessionref schema yet: an administrator creates it once with {INIT_COMMAND}",
            SESSION_QUERY_SCHEMA_MISSING,
        )
    _refuse_newer(state.version)
    if state.legacy or state.version < SCHEMA_VERSION:
        where = " in public" if state.legacy else ""
        raise SessionQueryError(
            f"the database has sessionref schema version {state.version}{where}; an administrator migrates it "
            f"once to version {SCHEMA_VERSION} with {INIT_COMMAND}",
            SESSION_QUERY_SCHEMA_OUTDATED,
        )


def _refuse_newer(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise SessionQueryError(
            f"the session database has schema version {version}; this sessionref knows up to "
            f"{SCHEMA_VERSION} (upgrade sessionref)",
            SESSION_QUERY_SCHEMA_TOO_NEW,
        )


@dataclass(frozen=True)
class InitReport:
    """What ``initialize`` found and did."""

    before: SchemaState
    created_role: bool
    """Whether the owner role was created now."""


def initialize(connection: psycopg.Connection[Any]) -> InitReport:
    """Create the store's schema in the database, or bring an earlier one to ``SCHEMA_VERSION``
    (one initializer at a time, across machines); idempotent. Run by an administrator: a role that
    may create roles (or grant ``sessionref_owner``), schemas and the ``pg_trgm`` extension; moving
    a legacy layout also needs to own its tables (a superuser does). Everything is created by, and
    belongs to, the ``NOLOGIN`` owner role; the administrator's membership in it, when this granted
    it, is revoked again before the end.

    Raises:
        SessionQueryError: ``SESSION_QUERY_SCHEMA_TOO_NEW``.
        psycopg.Error: the server refused a step (nothing is kept: it is one transaction).
    """
    with connection.transaction():
        connection.execute("SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('sessionref schema'))")
        before = schema_state(connection)
        _refuse_newer(before.version)
        # A schema someone else made first, or anything they put in it, is never adopted.
        foreign = [problem for problem in ownership_problems(connection) if " belongs to " in problem]
        if foreign:
            raise SessionQueryError(
                f"cannot set up the sessionref schema: {'; '.join(foreign)} (remove what does not belong, then run "
                f"{INIT_COMMAND} again)",
                SESSION_QUERY_UNSAFE_OWNER,
            )
        created_role = _ensure_owner_role(connection)
        granted = _become_able_to_act_as_owner(connection)
        connection.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA} AUTHORIZATION {OWNER_ROLE}")
        connection.execute(f"ALTER SCHEMA {SCHEMA} OWNER TO {OWNER_ROLE}")
        connection.execute(f"CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA {SCHEMA}")
        trgm = connection.execute(
            "SELECT n.nspname FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n "
            "ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
        ).fetchone()
        assert trgm is not None
        if before.legacy:
            _move_legacy(connection, before.version)
        connection.execute(f"SET LOCAL ROLE {OWNER_ROLE}")
        if before.version == 0:
            connection.execute(_TABLES.replace("{trgm}", sql.Identifier(trgm[0]).as_string(connection)))
        reached = 4 if before.version == 0 or before.legacy else before.version
        for step in range(reached + 1, SCHEMA_VERSION + 1):
            connection.execute(_STEPS[step])
        connection.execute(_LOGIC)  # every time: a second run repairs what the first one set
        if before.version < SCHEMA_VERSION or before.legacy:
            connection.execute("DELETE FROM sessionref.sessionref_schema")
            connection.execute("INSERT INTO sessionref.sessionref_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
        connection.execute("RESET ROLE")
        if granted:
            connection.execute(f"REVOKE {OWNER_ROLE} FROM CURRENT_USER")
    return InitReport(before, created_role)


def _ensure_owner_role(connection: psycopg.Connection[Any]) -> bool:
    """The owner role, created ``NOLOGIN`` when missing; an existing one that can log in, is a
    superuser or bypasses row-level security is refused (it would not protect anything)."""
    found = connection.execute(
        "SELECT rolcanlogin, rolsuper, rolbypassrls FROM pg_catalog.pg_roles WHERE rolname = %s", (OWNER_ROLE,)
    ).fetchone()
    if found is None:
        try:
            with connection.transaction():  # a savepoint: roles are the cluster's, not the database's
                connection.execute(f"CREATE ROLE {OWNER_ROLE} NOLOGIN")
        except (psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation):
            return _ensure_owner_role(connection)  # db init of another database made it meanwhile
        return True
    if any(found):
        raise SessionQueryError(
            f"the role {OWNER_ROLE} exists and can log in, is a superuser or bypasses row-level security: "
            f"it must be none of these (ALTER ROLE {OWNER_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS)",
            SESSION_QUERY_UNSAFE_OWNER,
        )
    return False


def _become_able_to_act_as_owner(connection: psycopg.Connection[Any]) -> bool:
    """Make the administrator a member of the owner role for this transaction's work; whether it
    had to be granted (and so is revoked at the end)."""
    row = connection.execute(
        "SELECT rolsuper OR pg_catalog.pg_has_role(current_user, %s, 'MEMBER') FROM pg_catalog.pg_roles "
        "WHERE rolname = current_user",
        (OWNER_ROLE,),
    ).fetchone()
    if row is not None and row[0]:
        return False
    connection.execute(f"GRANT {OWNER_ROLE} TO CURRENT_USER")
    return True


def _move_legacy(connection: psycopg.Connection[Any], version: int) -> None:
    """Bring a legacy layout (in ``public``) to its last version, then move its tables and sequence
    into the schema, owned by the owner role; its functions (and their triggers) are dropped, to be
    created again qualified (``_LOGIC``). Run as the administrator, who must own the tables."""
    connection.execute("SET LOCAL search_path = public, sessionref")  # (pg_trgm may be in either)
    for step in range(version + 1, LEGACY_VERSION + 1):
        connection.execute(LEGACY_STEPS[step])
        connection.execute("INSERT INTO public.sessionref_schema (version) VALUES (%s)", (step,))
    connection.execute("SET LOCAL search_path = pg_catalog, sessionref")
    for name in _LEGACY_FUNCTIONS:
        connection.execute(f"DROP FUNCTION IF EXISTS public.{name}() CASCADE")
    for table in ("sessionref_schema", *LEGACY_TABLES):
        connection.execute(f"ALTER TABLE public.{table} OWNER TO {OWNER_ROLE}")
        connection.execute(f"ALTER TABLE public.{table} SET SCHEMA {SCHEMA}")
    connection.execute(f"ALTER SEQUENCE public.sessionref_revisions OWNER TO {OWNER_ROLE}")
    connection.execute(f"ALTER SEQUENCE public.sessionref_revisions SET SCHEMA {SCHEMA}")
