"""The session tools as an MCP server: ``server`` (``SessionToolServer``, the tools as MCP lists
them, ``serve``) and ``wire`` (its own stdio: every request with a readable id answered)."""
