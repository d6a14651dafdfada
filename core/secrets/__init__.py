"""Secrets in session text: found (``finder``, with ``rules`` built on ``detect-secrets``) and masked
wherever a session leaves its owner (``snapshot``: a referenced session's surface)."""
