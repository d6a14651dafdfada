"""Sessions and their stores: the event models, the surface fold, the query protocol, the memory and
JSONL (dsh) stores, and the read-only sources of other agents (Claude Code, Codex).

Imports only the base modules of ``core`` (``errors``, ``constants``, ``serialization``,
``abort``, ``collector``).
"""
