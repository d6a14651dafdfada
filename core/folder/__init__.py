"""The folder store: dsh's session logs on disk (STORE.md), one file per session in its project's
folder, written durably by one writer each, listed by revision, read through a cache; ``doctor``
checks one without changing it."""
