"""Sharing a session of the PostgreSQL store with a team (a database role its members belong to).

Only the session's owner may share it; the database enforces that and what the team's members may
then do (read and reference, never write) with row-level security (``schema``).
"""

from __future__ import annotations

from core.database.pool import ReadPool
from core.errors import SessionQueryError
from core.serialization import js_json_stringify
from core.sessions.session import not_found

SESSION_QUERY_NOT_OWNER = "SESSION_QUERY_NOT_OWNER"
SESSION_QUERY_UNKNOWN_TEAM = "SESSION_QUERY_UNKNOWN_TEAM"


def not_owner(session_id: str, owner: str) -> SessionQueryError:
    """The error for writing (or sharing) a session another role owns."""
    return SessionQueryError(
        f"session {js_json_stringify(session_id)} belongs to {js_json_stringify(owner)}: it can be read and"
        " referenced, not written",
        SESSION_QUERY_NOT_OWNER,
    )


class TeamSharing:
    """Which teams may read one role's sessions (``PostgresSessionStore.share`` and the rest).

    Args:
        pool: the store's connections.
        user: the role the store acts as (only its own sessions can be shared).
    """

    def __init__(self, pool: ReadPool, user: str) -> None:
        self._pool = pool
        self.user = user

    def share(self, session_id: str, team: str) -> bool:
        """Let the members of ``team`` (a database role) read and reference one of this role's
        sessions; ``False`` when it already was shared with them.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``, ``SESSION_QUERY_NOT_OWNER``,
                ``SESSION_QUERY_UNKNOWN_TEAM``.
        """
        grantee = self._shareable(session_id, team)
        added = self._pool.run(
            "cannot share the session",
            "INSERT INTO sessionref.sessionref_shares (session_id, grantee) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (session_id, grantee),
        ).rowcount
        return bool(added)

    def unshare(self, session_id: str, team: str) -> bool:
        """Stop sharing one of this role's sessions with ``team``; ``False`` when it was not shared.

        Raises:
            SessionQueryError: as ``share``.
        """
        grantee = self._shareable(session_id, team)
        removed = self._pool.run(
            "cannot stop sharing the session",
            "DELETE FROM sessionref.sessionref_shares WHERE session_id = %s AND grantee = %s",
            (session_id, grantee),
        ).rowcount
        return bool(removed)

    def shared_with(self, session_id: str) -> list[str]:
        """The teams a session is shared with, as this role may see them (sorted).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND``.
        """
        if self._pool.owner_of(session_id) is None:
            raise not_found(session_id)
        rows = self._pool.run(
            "cannot read the session's teams",
            "SELECT r.rolname FROM sessionref.sessionref_shares sh JOIN pg_catalog.pg_roles r ON r.oid = sh.grantee "
            "WHERE sh.session_id = %s ORDER BY r.rolname",
            (session_id,),
        ).rows
        return [str(row[0]) for row in rows]

    def _shareable(self, session_id: str, team: str) -> int:
        owner = self._pool.owner_of(session_id)
        if owner is None:
            raise not_found(session_id)
        if owner != self.user:
            raise not_owner(session_id, owner)
        rows = []
        if "\x00" not in team:
            rows = self._pool.run(
                "cannot look the team up", "SELECT oid FROM pg_catalog.pg_roles WHERE rolname = %s", (team,)
            ).rows
        if not rows:
            raise SessionQueryError(
                f"there is no team (database role) named {js_json_stringify(team)}", SESSION_QUERY_UNKNOWN_TEAM
            )
        return int(rows[0][0])
