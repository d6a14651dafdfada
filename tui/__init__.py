"""The Textual host of the sessionref engine."""
