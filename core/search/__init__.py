"""Finding a session: the body index beside the store, its builder process, and the picker search.

Imports the base modules of ``core``, ``core.sessions`` and ``core.reference`` (projection).
"""
