"""The team store against its own users, tried as a teammate with psql would, on a real cluster with
real roles: nobody who logs in owns the tables (so nobody can switch row-level security off), no
name is looked up through a search path someone else can plant in, the app never creates the
schema, and ``db init`` / ``doctor --store`` say what is what."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from core.database.health import diagnose_database
from core.database.legacy_schema import LEGACY_STEPS, LEGACY_VERSION
from core.database.setup import initialize_database
from core.database.store import SCHEMA_VERSION, PostgresSessionStore
from core.errors import SessionQueryError
from core.folder.doctor import format_diagnosis
from tests.conftest import say_assistant, say_user
from tests.support.pg_cluster import Team, cluster, database, fresh_database, team

__all__ = ["cluster", "database", "team"]  # the fixtures

REPO = Path(__file__).resolve().parent.parent
TABLES = ("sessionref_sessions", "sessionref_rows", "sessionref_shares", "sessionref_messages")


def _role(conninfo: str) -> str:
    return conninfo.split("user=")[1].split()[0]


def _uri(conninfo: str) -> str:
    parts = dict(item.split("=", 1) for item in conninfo.split())
    return f"postgresql://{parts['user']}@/{parts['dbname']}?host={parts['host']}"


def _write(conninfo: str, session_id: str, text: str) -> None:
    store = PostgresSessionStore(conninfo)
    session = store.create(session_id, cwd="/work/team")
    say_user(session, text)
    say_assistant(session, f"answer to {text}")
    session.append("session/title", {"title": f"title of {session_id}", "messageSeqs": [0], "source": "user"})
    store.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )


# --- 1. whoever starts first owns the tables ----------------------------------------------------------


def test_no_member_owns_the_tables_so_none_can_switch_row_level_security_off(team: Team) -> None:
    _write(team.alice, "alices", "alice's private words")
    _write(team.bob, "bobs", "bob's private words")
    for who in (team.alice, team.bob):
        with psycopg.connect(who, autocommit=True) as connection:
            for table in TABLES:
                for statement in (
                    f"ALTER TABLE sessionref.{table} NO FORCE ROW LEVEL SECURITY",
                    f"ALTER TABLE sessionref.{table} DISABLE ROW LEVEL SECURITY",
                    f"ALTER TABLE sessionref.{table} OWNER TO {_role(who)}",
                    f"DROP POLICY {table.removeprefix('sessionref_')}_read ON sessionref.{table}",
                ):
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        connection.execute(statement)  # type: ignore[arg-type]
            for statement in ("SET ROLE sessionref_owner", "CREATE TABLE sessionref.planted (x int)"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    connection.execute(statement)  # type: ignore[arg-type]
            seen = connection.execute("SELECT id FROM sessionref.sessionref_sessions ORDER BY id").fetchall()
            assert seen == [("alices",)] if who == team.alice else [("bobs",)]
    with psycopg.connect(team.admin, autocommit=True) as admin:
        owners = admin.execute(
            "SELECT DISTINCT pg_catalog.pg_get_userbyid(relowner) FROM pg_catalog.pg_class "
            "WHERE relnamespace = 'sessionref'::regnamespace"
        ).fetchall()
        assert owners == [("sessionref_owner",)]
        login = admin.execute("SELECT rolcanlogin FROM pg_catalog.pg_roles WHERE rolname = 'sessionref_owner'")
        assert login.fetchone() == (False,)
        # db init leaves its runner no membership in the owner role it did not have.
        assert admin.execute(
            "SELECT count(*) FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles r ON r.oid = m.roleid "
            "WHERE r.rolname = 'sessionref_owner'"
        ).fetchone() == (0,)


def test_against_an_empty_database_the_app_and_import_say_what_to_run(cluster: str, tmp_path: Path) -> None:
    empty = cluster.replace("dbname=postgres", f"dbname={fresh_database(cluster)}")
    with pytest.raises(SessionQueryError) as caught:
        PostgresSessionStore(empty)
    assert caught.value.code == "SESSION_QUERY_SCHEMA_MISSING"
    line = (
        "the database has no sessionref schema yet: an administrator creates it once with sessionref db init "
        "--store URL (SESSION_QUERY_SCHEMA_MISSING)"
    )
    done = _cli("--store", _uri(empty), "--check-start")
    assert (done.returncode, done.stdout, done.stderr) == (
        3,
        "",
        f"sessionref: cannot use the session database: {line}\n",
    )
    (tmp_path / "folder").mkdir()
    done = _cli("import", str(tmp_path / "folder"), "--store", _uri(empty))
    assert (done.returncode, done.stderr) == (3, f"sessionref import: {line}\n")
    with psycopg.connect(empty, autocommit=True) as connection:  # nothing was created
        assert connection.execute("SELECT pg_catalog.to_regnamespace('sessionref')").fetchone() == (None,)


def test_a_schema_a_member_planted_first_is_never_used_nor_adopted(team: Team) -> None:
    """alice may create schemas: she makes a ``sessionref`` schema of her own, with a version row and
    tables, before anyone else. Nobody's sessionref uses it, and db init refuses to adopt it."""
    planted = team.admin.replace("dbname=", "dbname=") + ""
    name = fresh_database(team.admin.replace(team.admin.split("dbname=")[1].split()[0], "postgres"))
    planted = team.admin.replace(team.admin.split("dbname=")[1].split()[0], name)
    alice = planted.replace("user=postgres", f"user={_role(team.alice)}")
    bob = planted.replace("user=postgres", f"user={_role(team.bob)}")
    with psycopg.connect(planted, autocommit=True) as admin:
        admin.execute(f"GRANT CREATE ON DATABASE {name} TO {_role(team.alice)}")  # type: ignore[arg-type]
    with psycopg.connect(alice, autocommit=True) as connection:
        connection.execute("CREATE SCHEMA sessionref")
        connection.execute("CREATE TABLE sessionref.sessionref_schema (version integer)")
        connection.execute("INSERT INTO sessionref.sessionref_schema VALUES (%s)", (SCHEMA_VERSION,))
        connection.execute("CREATE TABLE sessionref.sessionref_sessions (id text, header text)")
        connection.execute("GRANT USAGE ON SCHEMA sessionref TO PUBLIC")
        connection.execute("GRANT SELECT ON ALL TABLES IN SCHEMA sessionref TO PUBLIC")
    with pytest.raises(SessionQueryError) as caught:
        PostgresSessionStore(bob)
    assert caught.value.code == "SESSION_QUERY_UNSAFE_OWNER"
    assert f"the schema sessionref belongs to {_role(team.alice)}, not sessionref_owner" in caught.value.message
    with pytest.raises(SessionQueryError) as caught:
        initialize_database(planted)
    assert caught.value.code == "SESSION_QUERY_UNSAFE_OWNER"
    assert f"the relation sessionref.sessionref_sessions belongs to {_role(team.alice)}" in caught.value.message


def test_a_legacy_database_its_first_user_owned_migrates_and_she_loses_the_keys(cluster: str) -> None:
    """Version 3 in public, created by alice's first start (so she owns the tables), with alice's and
    bob's sessions: db init moves it into the schema, owned by the owner role, every session kept."""
    name = fresh_database(cluster)
    admin = cluster.replace("dbname=postgres", f"dbname={name}")
    alice_role, bob_role = f"{name}_alice", f"{name}_bob"
    with psycopg.connect(admin, autocommit=True) as connection:
        for role in (alice_role, bob_role):
            connection.execute(f"CREATE ROLE {role} LOGIN")  # type: ignore[arg-type]
        connection.execute(f"GRANT CREATE ON SCHEMA public TO {alice_role}")  # type: ignore[arg-type]
        connection.execute(f"GRANT CREATE ON DATABASE {name} TO {alice_role}")  # type: ignore[arg-type]
    alice = admin.replace("user=postgres", f"user={alice_role}")
    bob = admin.replace("user=postgres", f"user={bob_role}")
    # What an earlier sessionref did on alice's first start.
    with psycopg.connect(alice, autocommit=True) as connection, connection.transaction():
        connection.execute("SET LOCAL search_path = public")
        connection.execute("CREATE TABLE sessionref_schema (version integer NOT NULL)")
        for step in range(1, LEGACY_VERSION + 1):
            connection.execute(LEGACY_STEPS[step])
            connection.execute("INSERT INTO sessionref_schema (version) VALUES (%s)", (step,))
    for who, session_id in ((alice, "alices"), (bob, "bobs")):
        with psycopg.connect(who, autocommit=True) as connection:
            header = {
                "type": "session",
                "version": 0,
                "id": session_id,
                "createdAt": 5,
                "cwd": "/w",
                "delegationDepth": 0,
            }
            connection.execute(
                "INSERT INTO public.sessionref_sessions (id, header, cwd, created_at) VALUES (%s, %s, '/w', 5)",
                (session_id, json.dumps(header, separators=(",", ":"))),
            )
            words = {"content": [{"type": "text", "text": f"{session_id} words"}], "source": {"kind": "user"}}
            row = {"type": "user/message", "seq": 0, "time": 6, "surfaceOp": "append", "data": words}
            connection.execute(
                "INSERT INTO public.sessionref_rows (session_id, first_seq, last_seq, row) VALUES (%s, 0, 0, %s)",
                (session_id, json.dumps(row)),
            )
    with pytest.raises(SessionQueryError) as caught:
        PostgresSessionStore(alice)
    assert caught.value.code == "SESSION_QUERY_SCHEMA_OUTDATED"
    done = _cli("db", "init", "--store", _uri(admin))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"migrated the sessionref schema from version 3 in public to {SCHEMA_VERSION}; ")
    # alice, who owned everything, now owns nothing and sees only her own session.
    with psycopg.connect(alice, autocommit=True) as connection, pytest.raises(psycopg.errors.InsufficientPrivilege):
        connection.execute("ALTER TABLE sessionref.sessionref_sessions NO FORCE ROW LEVEL SECURITY")
    for who, mine in ((alice, "alices"), (bob, "bobs")):
        store = PostgresSessionStore(who)
        assert [record.header.id for record in asyncio.run(store.list_sessions())] == [mine]
        surface = asyncio.run(store.read_surface(mine))
        assert surface.events[0].data["content"][0]["text"] == f"{mine} words"
        say_user(store.get(mine), "after the move")  # type: ignore[arg-type]
        store.close()
    assert diagnose_database(admin).findings[0].kind == "sees_everything"
    assert [f.kind for f in diagnose_database(alice).findings] == ["ownership"]


# --- 2. unqualified names follow the search path ------------------------------------------------------

_PLANT = """
CREATE TABLE {schema}.sessionref_messages (session_id text, position integer, role text, body text, folded text);
CREATE TABLE {schema}.sessionref_sessions (id text, header text, cwd text, created_at bigint, title text);
CREATE TABLE {schema}.sessionref_rows (session_id text, first_seq bigint, last_seq bigint, row text);
CREATE TABLE {schema}.sessionref_shares (session_id text, grantee oid);
CREATE TABLE {schema}.caught (what text);
CREATE FUNCTION {schema}.sessionref_notify() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO {schema}.caught VALUES ('notify'); RETURN NULL; END; $$;
CREATE FUNCTION {schema}.sessionref_rows_follow() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO {schema}.caught VALUES ('rows_follow'); RETURN NULL; END; $$;
CREATE FUNCTION {schema}.nextval(text) RETURNS bigint LANGUAGE sql AS $$ SELECT 1::bigint $$;
GRANT USAGE ON SCHEMA {schema} TO PUBLIC;
GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO PUBLIC;
"""


def test_tables_and_functions_planted_on_the_search_path_are_never_reached(team: Team) -> None:
    """bob may create schemas: he makes one named after alice (first on her default search path) and
    plants the store's table and function names there and in public. alice uses sessionref as usual:
    every word lands in the store, none in bob's tables."""
    name = team.admin.split("dbname=")[1].split()[0]
    alice_role = _role(team.alice)
    with psycopg.connect(team.admin, autocommit=True) as admin:
        admin.execute(f"GRANT CREATE ON DATABASE {name} TO {_role(team.bob)}")  # type: ignore[arg-type]
        admin.execute(f"GRANT CREATE ON SCHEMA public TO {_role(team.bob)}")  # type: ignore[arg-type]
    with psycopg.connect(team.bob, autocommit=True) as bob:
        bob.execute(f"CREATE SCHEMA {alice_role}")  # type: ignore[arg-type]
        for schema in (alice_role, "public"):
            bob.execute(_PLANT.format(schema=schema))  # type: ignore[arg-type]
        # What alice's psql would resolve: the planted table comes first on her default path.
    with psycopg.connect(team.alice, autocommit=True) as alice:
        resolved = alice.execute(
            "SELECT relnamespace::regnamespace::text FROM pg_catalog.pg_class "
            "WHERE oid = pg_catalog.to_regclass('sessionref_messages')"
        ).fetchone()
        assert resolved == (alice_role,)
    store = PostgresSessionStore(team.alice)
    session = store.create("private", cwd="/work/team")
    say_user(session, "the private quokka plan")
    say_assistant(session, "noted, quokka")
    session.append("session/title", {"title": "Quokka", "messageSeqs": [0], "source": "user"})
    assert store.share("private", team.team)
    index = store.message_index()
    assert index.candidates("quokka") == {"private": [1]}
    index.close()
    assert [record.header.id for record in asyncio.run(store.list_sessions())] == ["private"]
    with store._pool.connection() as pooled:  # every connection of the store has the fixed path
        assert pooled.execute("SHOW search_path").fetchone() == ("pg_catalog,sessionref",)
    store.close()
    reader = PostgresSessionStore(team.bob)
    assert asyncio.run(reader.read_surface("private")).events[0].data["content"][0]["text"] == "the private quokka plan"
    reader.close()
    with psycopg.connect(team.bob, autocommit=True) as bob:
        for schema in (alice_role, "public"):
            for table in (*TABLES[:2], "sessionref_rows", "sessionref_shares", "caught"):
                found = bob.execute(f"SELECT count(*) FROM {schema}.{table}").fetchone()  # type: ignore[arg-type]
                assert found == (0,), f"{schema}.{table} received something"
    with psycopg.connect(team.admin, autocommit=True) as admin:
        assert admin.execute("SELECT count(*) FROM sessionref.sessionref_messages").fetchone() == (2,)
        # Every function of the store keeps its own search path.
        configs = admin.execute(
            "SELECT proname::text, proconfig FROM pg_catalog.pg_proc WHERE pronamespace = 'sessionref'::regnamespace "
            "AND proname LIKE 'sessionref%%' ORDER BY 1"
        ).fetchall()
        assert [name for name, _ in configs] == [
            "sessionref_notify",
            "sessionref_rows_follow",
            "sessionref_share_changed",
        ]
        assert all(config == ["search_path=pg_catalog, sessionref, pg_temp"] for _, config in configs)


# --- db init and doctor --store -----------------------------------------------------------------------


def test_db_init_needs_an_administrator_and_says_what_it_did(cluster: str, team: Team) -> None:
    empty = cluster.replace("dbname=postgres", f"dbname={fresh_database(cluster)}")
    as_alice = empty.replace("user=postgres", f"user={_role(team.alice)}")
    done = _cli("db", "init", "--store", _uri(as_alice))
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.startswith("sessionref db init: cannot set up the session database: ")
    assert done.stderr.endswith("(SESSION_QUERY_DATABASE_UNAVAILABLE)\n") and done.stderr.count("\n") == 1
    done = _cli("db", "init", "--store", _uri(empty))
    assert (done.returncode, done.stdout) == (
        0,
        f"created the sessionref schema (version {SCHEMA_VERSION}); owned by the NOLOGIN role sessionref_owner\n",
    )
    done = _cli("db", "init", "--store", _uri(empty))
    assert done.stdout.startswith(f"the sessionref schema is current (version {SCHEMA_VERSION})")


def test_doctor_store_says_who_owns_it_and_warns_whoever_could_read_around_it(team: Team) -> None:
    _write(team.alice, "one", "words")
    done = _cli("doctor", "--no-external", "--store", _uri(team.alice))
    name = team.alice.split("dbname=")[1].split()[0]
    assert done.returncode == 0, done.stdout
    assert done.stdout.splitlines() == [
        f"store: database {name} as {_role(team.alice)} (schema version {SCHEMA_VERSION}): 1 sessions visible to "
        f"{_role(team.alice)}",
        "info: ownership: schema sessionref: the schema and everything in it belong to sessionref_owner, a role "
        "that cannot log in; row-level security is forced on sessionref.sessionref_sessions, "
        "sessionref.sessionref_rows, sessionref.sessionref_shares, sessionref.sessionref_messages, "
        "sessionref.sessionref_vectors",
        "healthy (1 notes)",
    ]
    done = _cli("doctor", "--no-external", "--store", _uri(team.admin))
    assert done.returncode == 1
    assert "warning: sees_everything: postgres: you connect as a superuser" in done.stdout
    with psycopg.connect(team.admin, autocommit=True) as admin:
        admin.execute(f"GRANT sessionref_owner TO {_role(team.bob)}")  # type: ignore[arg-type]
        try:
            kinds = [finding.kind for finding in diagnose_database(team.bob).findings]
            assert kinds == ["owner_member", "ownership"]
            # What such a member could do, the doctor then reports as it stands.
            with psycopg.connect(team.bob, autocommit=True) as bob:
                bob.execute("SET ROLE sessionref_owner")
                bob.execute("ALTER TABLE sessionref.sessionref_rows NO FORCE ROW LEVEL SECURITY")
            report = format_diagnosis(diagnose_database(team.alice))
            assert (
                "error: unsafe_owner: schema sessionref: row-level security is not forced on sessionref.sessionref_rows"
                in report
            )
            with pytest.raises(SessionQueryError) as caught:
                PostgresSessionStore(team.alice)
            assert caught.value.code == "SESSION_QUERY_UNSAFE_OWNER"
            initialize_database(team.admin)  # db init puts it back
            assert [f.kind for f in diagnose_database(team.alice).findings] == ["ownership"]
        finally:
            admin.execute(f"REVOKE sessionref_owner FROM {_role(team.bob)}")  # type: ignore[arg-type]
    empty = team.admin.replace(f"dbname={name}", f"dbname={fresh_database(team.admin.replace(name, 'postgres'))}")
    done = _cli("doctor", "--no-external", "--store", _uri(empty))
    assert done.returncode == 3
    assert "error: missing_schema: schema sessionref: there is no sessionref schema" in done.stdout


def test_an_administrator_who_is_not_a_superuser_can_init_and_keeps_no_key(cluster: str) -> None:
    """A role with CREATEROLE and CREATE on the database (a hosted server's admin, not a superuser):
    db init works, and leaves it no membership in the owner role (so no way around the security)."""
    name = fresh_database(cluster)
    admin = f"{name}_admin"
    with psycopg.connect(cluster, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {admin} LOGIN CREATEROLE")  # type: ignore[arg-type]
        connection.execute(f"GRANT CREATE ON DATABASE {name} TO {admin}")  # type: ignore[arg-type]
    as_admin = cluster.replace("dbname=postgres", f"dbname={name}").replace("user=postgres", f"user={admin}")
    initialize_database(as_admin)
    with psycopg.connect(as_admin, autocommit=True) as connection:
        member = connection.execute("SELECT pg_catalog.pg_has_role(current_user, 'sessionref_owner', 'MEMBER')")
        assert member.fetchone() == (False,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("ALTER TABLE sessionref.sessionref_rows NO FORCE ROW LEVEL SECURITY")
    assert [finding.kind for finding in diagnose_database(as_admin).findings] == ["ownership"]
    initialize_database(as_admin)  # and again (a later upgrade), still without keeping the key
