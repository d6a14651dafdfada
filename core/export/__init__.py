"""A session written for people to read (``readable``: Markdown or one self-contained HTML page)."""
