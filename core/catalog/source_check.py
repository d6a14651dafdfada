"""What ``sessionref doctor`` says of the other agents' sources: where each one reads, how many
sessions it lists there, and which of its files (or its database) it cannot read and why.

Other agents' files are theirs: what cannot be read is a note, never something that makes the
store need attention (``doctor`` exits 0 for a healthy store whatever another tool left behind).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from core.folder.doctor import Finding
from core.sessions.sources.merged import ExternalSource, listed

SHOWN_PROBLEMS = 5
"""Unreadable files named per source; the rest are counted."""


def check_sources(sources: Sequence[ExternalSource]) -> list[Finding]:
    """A note per source (its folder and what it lists) and per file it cannot read."""
    findings: list[Finding] = []
    for source in sources:
        root = str(source.root)
        if not os.path.isdir(root):
            findings.append(
                Finding("info", "source", root, f"{source.name}: nothing here (not installed, or never run)")
            )
            continue
        records, problems = listed(source)
        findings.append(
            Finding(
                "info",
                "source",
                root,
                f"{source.name}: {len(records)} session{'' if len(records) == 1 else 's'} listed read-only",
            )
        )
        for problem in problems[:SHOWN_PROBLEMS]:
            findings.append(
                Finding("info", "source_unreadable", str(problem.path), f"{source.name}: {problem.message}")
            )
        if len(problems) > SHOWN_PROBLEMS:
            findings.append(
                Finding(
                    "info",
                    "source_unreadable",
                    root,
                    f"{source.name}: ... and {len(problems) - SHOWN_PROBLEMS} more files it cannot read",
                )
            )
    return findings
