"""The store's schema as versions 1 to 3 laid it out: unqualified names in ``public``, the tables
owned by whichever role started first. Kept only to bring such a database up to version 3 before
``sessionref db init`` moves it into its own schema (``core.database.schema``); run with
``search_path = public``, as it always ran.

Version 1 holds sessions (the header line) and rows (the JSONL rows) with the trigger that makes
seqs only increase. Version 2 adds owners, teams and change notification. Version 3 adds message
search and the title column.
"""

from __future__ import annotations

_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS sessionref_sessions (
    id text PRIMARY KEY,
    header text NOT NULL,
    cwd text,
    created_at bigint NOT NULL,
    last_seq bigint NOT NULL DEFAULT -1
);
CREATE TABLE IF NOT EXISTS sessionref_rows (
    session_id text NOT NULL REFERENCES sessionref_sessions (id) ON DELETE CASCADE,
    first_seq bigint NOT NULL,
    last_seq bigint NOT NULL,
    row text NOT NULL,
    PRIMARY KEY (session_id, first_seq),
    CHECK (last_seq >= first_seq)
);
CREATE OR REPLACE FUNCTION sessionref_seqs_only_increase() RETURNS trigger AS $$
DECLARE
    previous bigint;
BEGIN
    SELECT last_seq INTO previous FROM sessionref_sessions WHERE id = NEW.session_id FOR UPDATE;
    IF NEW.first_seq <= previous THEN
        RAISE EXCEPTION 'seq % does not follow % in session %', NEW.first_seq, previous, NEW.session_id
            USING ERRCODE = 'check_violation';
    END IF;
    UPDATE sessionref_sessions SET last_seq = NEW.last_seq WHERE id = NEW.session_id;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS sessionref_seqs_only_increase ON sessionref_rows;
CREATE TRIGGER sessionref_seqs_only_increase BEFORE INSERT ON sessionref_rows
    FOR EACH ROW EXECUTE FUNCTION sessionref_seqs_only_increase();
"""

_SCHEMA_V2 = """
-- Owners and teams: a session belongs to the role that created it; its owner may share it with
-- roles (teams) whose members then read it. Row-level security enforces both, forced on the tables'
-- owner too (only superusers and BYPASSRLS roles see everything).
ALTER TABLE sessionref_sessions ADD COLUMN owner name NOT NULL DEFAULT current_user;
CREATE SEQUENCE sessionref_revisions;
ALTER TABLE sessionref_sessions ADD COLUMN revision bigint NOT NULL DEFAULT nextval('sessionref_revisions');
CREATE TABLE sessionref_shares (
    session_id text NOT NULL REFERENCES sessionref_sessions (id) ON DELETE CASCADE,
    grantee oid NOT NULL,
    owner name NOT NULL DEFAULT current_user,
    PRIMARY KEY (session_id, grantee)
);
-- Listeners hear that something changed, never what: they re-list what they may see.
CREATE OR REPLACE FUNCTION sessionref_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('sessionref_changed', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER sessionref_sessions_changed AFTER INSERT OR UPDATE OR DELETE ON sessionref_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION sessionref_notify();
CREATE TRIGGER sessionref_shares_changed AFTER INSERT OR UPDATE OR DELETE ON sessionref_shares
    FOR EACH STATEMENT EXECUTE FUNCTION sessionref_notify();

ALTER TABLE sessionref_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessionref_sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE sessionref_rows ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessionref_rows FORCE ROW LEVEL SECURITY;
ALTER TABLE sessionref_shares ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessionref_shares FORCE ROW LEVEL SECURITY;
-- A share is seen by its owner and by the members of its grantee (no reference back to sessions,
-- so the policies below never recurse).
CREATE POLICY shares_read ON sessionref_shares FOR SELECT
    USING (owner = current_user OR pg_has_role(current_user, grantee, 'MEMBER'));
CREATE POLICY shares_add ON sessionref_shares FOR INSERT WITH CHECK (
    owner = current_user
    AND EXISTS (SELECT 1 FROM sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));
CREATE POLICY shares_remove ON sessionref_shares FOR DELETE USING (owner = current_user);
CREATE POLICY sessions_read ON sessionref_sessions FOR SELECT USING (
    owner = current_user
    OR EXISTS (SELECT 1 FROM sessionref_shares sh
               WHERE sh.session_id = id AND pg_has_role(current_user, sh.grantee, 'MEMBER')));
CREATE POLICY sessions_create ON sessionref_sessions FOR INSERT WITH CHECK (owner = current_user);
CREATE POLICY sessions_write ON sessionref_sessions FOR UPDATE
    USING (owner = current_user) WITH CHECK (owner = current_user);
CREATE POLICY sessions_delete ON sessionref_sessions FOR DELETE USING (owner = current_user);
CREATE POLICY rows_read ON sessionref_rows FOR SELECT
    USING (EXISTS (SELECT 1 FROM sessionref_sessions s WHERE s.id = session_id));
CREATE POLICY rows_append ON sessionref_rows FOR INSERT WITH CHECK (
    EXISTS (SELECT 1 FROM sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));
GRANT SELECT, INSERT, UPDATE, DELETE ON sessionref_sessions, sessionref_rows, sessionref_shares TO PUBLIC;
GRANT USAGE ON SEQUENCE sessionref_revisions TO PUBLIC;
GRANT SELECT ON sessionref_schema TO PUBLIC;
"""

_SCHEMA_V3 = """
-- Message search in the database: the projected conversation of every session (what a reference
-- would send), kept current by the append's own transaction, with a trigram index so substrings
-- and CJK match as in the SQLite index. Titles are kept on the session row for the listing.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
-- Seqs only increase, checked once per statement over all its rows (a batch is one multi-row
-- insert): the session row is updated once per batch, not once per row.
DROP TRIGGER IF EXISTS sessionref_seqs_only_increase ON sessionref_rows;
DROP FUNCTION IF EXISTS sessionref_seqs_only_increase();
CREATE OR REPLACE FUNCTION sessionref_rows_follow() RETURNS trigger AS $$
DECLARE
    broken record;
BEGIN
    PERFORM 1 FROM sessionref_sessions s WHERE s.id IN (SELECT session_id FROM new_rows) FOR UPDATE;
    SELECT * INTO broken FROM (
        SELECT n.session_id, n.first_seq,
               coalesce(lag(n.last_seq) OVER (PARTITION BY n.session_id ORDER BY n.first_seq), s.last_seq) AS previous
        FROM new_rows n JOIN sessionref_sessions s ON s.id = n.session_id
    ) c WHERE c.first_seq <= c.previous LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'seq % does not follow % in session %', broken.first_seq, broken.previous, broken.session_id
            USING ERRCODE = 'check_violation';
    END IF;
    UPDATE sessionref_sessions s SET last_seq = m.last_seq, revision = nextval('sessionref_revisions')
        FROM (SELECT session_id, max(last_seq) AS last_seq FROM new_rows GROUP BY session_id) m
        WHERE s.id = m.session_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER sessionref_rows_follow AFTER INSERT ON sessionref_rows
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sessionref_rows_follow();
-- A share or unshare gives the session a new revision: listings fetch only what moved.
CREATE OR REPLACE FUNCTION sessionref_share_changed() RETURNS trigger AS $$
BEGIN
    UPDATE sessionref_sessions SET revision = nextval('sessionref_revisions')
        WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.session_id ELSE NEW.session_id END;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER sessionref_share_revision AFTER INSERT OR DELETE ON sessionref_shares
    FOR EACH ROW EXECUTE FUNCTION sessionref_share_changed();
ALTER TABLE sessionref_sessions ADD COLUMN title text;
CREATE TABLE sessionref_messages (
    session_id text NOT NULL REFERENCES sessionref_sessions (id) ON DELETE CASCADE,
    position integer NOT NULL,
    role text NOT NULL,
    body text NOT NULL,
    folded text NOT NULL,
    PRIMARY KEY (session_id, position)
);
CREATE INDEX sessionref_messages_folded ON sessionref_messages USING gin (folded gin_trgm_ops);
ALTER TABLE sessionref_messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessionref_messages FORCE ROW LEVEL SECURITY;
CREATE POLICY messages_read ON sessionref_messages FOR SELECT
    USING (EXISTS (SELECT 1 FROM sessionref_sessions s WHERE s.id = session_id));
CREATE POLICY messages_add ON sessionref_messages FOR INSERT WITH CHECK (
    EXISTS (SELECT 1 FROM sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));
CREATE POLICY messages_remove ON sessionref_messages FOR DELETE USING (
    EXISTS (SELECT 1 FROM sessionref_sessions s WHERE s.id = session_id AND s.owner = current_user));
GRANT SELECT, INSERT, DELETE ON sessionref_messages TO PUBLIC;
"""

LEGACY_STEPS = {1: _SCHEMA_V1, 2: _SCHEMA_V2, 3: _SCHEMA_V3}
"""Version -> the SQL that brought the version before it there (in ``public``)."""
LEGACY_VERSION = 3
