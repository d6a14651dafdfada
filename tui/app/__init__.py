"""The app: ``SessionRefApp`` builds the workspace and the indexer and reacts to their messages."""

from tui.app.sessionref_app import SessionRefApp, make_app

__all__ = ["SessionRefApp", "make_app"]
