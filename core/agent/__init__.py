"""The agent loop and the model backends (the echo model, OpenAI-compatible APIs, the wire format).

Imports the base modules of ``core``, ``core.sessions`` and ``core.reference``.
"""
