"""Sessions in PostgreSQL, for several machines and for teams: the store, its schema and row-level
security, writing with reconnection, change notification, message search kept by the store's own
transactions, and moving a folder store in and out.

A layer above ``search`` (it keeps the message index in the append's own transaction, so it
projects and folds what it writes). Imported only when a database is named: psycopg loads with it.
"""
