"""Handing a session to another agent (``sessionref handoff``): the briefing it starts with, the
agents it can start (with ``sessionref mcp`` attached for that run only), and the note that records
where a session went."""
