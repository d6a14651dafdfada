"""Read-only session sources of other coding agents: Claude Code and OpenAI's Codex CLI.

Modules: ``files`` (the shared line reader and source base), ``claude``, ``codex``, ``merged``
(routing ids, one listing over the store and the sources).

Each source implements the ``SessionQuery`` protocol over the agent's own files and maps what it
finds to surface events, so projection, budgets, framing and baking stay the contract's own:

- user-typed text → ``user/message`` with source ``{kind: "user"}``; assistant text →
  ``assistant/message``; a Claude Code compaction summary → a compact checkpoint (the surface
  starts there);
- tool calls and results, thinking/reasoning, system and meta records, sidechains, and Codex's
  ``<user_instructions>`` / ``<environment_context>`` boilerplate are not on the surface.

Ids are namespaced (``claude:<uuid>``, ``codex:<uuid>``). Nothing is ever written under the roots.
A file is read up to its last complete line (an agent appending meanwhile yields a consistent
prefix), line by line; malformed or unknown lines are skipped and counted (``problems``).

Formats are not officially documented. Supported shapes: Claude Code ``projects/<dir>/<uuid>.jsonl``
(records ``user``/``assistant``/``summary``/``system`` with ``uuid``/``parentUuid``, ``cwd``,
``timestamp``, ``isSidechain``, ``isMeta``, ``isCompactSummary``; message content as a string or
block array), as written by Claude Code 1.x–2.x; Codex CLI ``sessions/YYYY/MM/DD/rollout-*.jsonl``
in both layouts: ``{timestamp, type, payload}`` lines (``session_meta``, ``response_item``,
``event_msg``, ``turn_context``; Codex 0.2x+) and the older bare lines (a first ``{id, timestamp,
instructions}`` line, then response items).
"""

from __future__ import annotations
