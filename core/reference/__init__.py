"""Session references: URIs and mentions, projection, retention under byte budgets, baking into the
prompt event, and ``SessionReferenceService``.

Imports the base modules of ``core`` and ``core.sessions``.
"""
