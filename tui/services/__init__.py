"""Services the screens and widgets use: the workspace, the catalog, the indexer, text and colours
(no widget here)."""
