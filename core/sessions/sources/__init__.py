"""Read-only session sources of other coding agents, each read from the files the real tool writes.
``registry.AGENTS`` lists them (one row an agent: its reader module, prefix, badge, folder);
``files`` holds the shared line reader and file source base, ``row_source`` the base of a source
whose sessions are database rows, ``sqlite_reads`` the read-only SQLite access, ``pi`` the fold of
pi's format its forks share; ``merged`` routes ids and makes one listing over the store and the
sources.

Each source implements the ``SessionQuery`` protocol over the agent's own files and maps what it
finds to surface events, so projection, budgets, framing and baking stay the contract's own: what
the user typed becomes ``user/message`` with source ``{kind: "user"}``, the agent's answers
``assistant/message``, its compaction summary a compact checkpoint (the surface starts there); tool
calls and results, thinking, system and meta records and the text an agent injects itself are not on
the surface. Each module's docstring gives the format it reads and the versions it was tested with.

Ids are namespaced by the agent's prefix (``claude:<uuid>``, ``codex:<uuid>``...). Nothing is
ever written under the roots. A file is read up to its last complete line (an agent appending
meanwhile yields a consistent prefix); malformed or unknown records are skipped and counted
(``problems``); a record too long to take at once is read in pieces, each long text in it cut to its
head and the contract's omission notice (``oversized``).
"""

from __future__ import annotations
