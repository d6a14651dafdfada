"""The package's version, as ``sessionref --version`` and the MCP server's ``serverInfo`` say it (a
leaf module: ``--version`` answers with nothing else imported)."""

from __future__ import annotations


def sessionref_version() -> str:
    """The installed package's version (its metadata), or ``unknown`` for a source tree never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessionref")
    except PackageNotFoundError:
        return "unknown"
