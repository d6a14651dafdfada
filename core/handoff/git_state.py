"""The git state of a session's folder, for a hand-off's briefing: branch, last commit and what is
changed (``git diff --stat``), bounded. Read-only: git takes no optional lock (``GIT_OPTIONAL_LOCKS=0``)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

GIT_SECONDS = 5.0
"""The longest one git command may take (a huge or networked repository must not hang a hand-off)."""
STAT_LINES = 40
"""Lines of ``git diff --stat`` shown; the rest are counted."""
LINE_CHARS = 200
"""Characters of one line shown (a file name can be long)."""


@dataclass(frozen=True, slots=True)
class GitState:
    """What the briefing says of a repository."""

    branch: str
    """The branch, or ``(detached at <sha>)``."""
    last_commit: str
    """``<short sha> <subject> (<relative date>)``, or ``(no commits yet)``."""
    changes: list[str]
    """``git diff HEAD --stat`` lines (bounded), the untracked files counted on a last line; empty when clean."""

    def lines(self) -> list[str]:
        """The state as the briefing writes it."""
        out = [f"Branch: {self.branch}", f"Last commit: {self.last_commit}"]
        if self.changes:
            out.append("Uncommitted changes (git diff HEAD --stat):")
            out.extend(f"  {line}" for line in self.changes)
        else:
            out.append("Working tree clean.")
        return out


def _git(folder: str, *arguments: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", folder, "-c", "core.quotepath=true", *arguments],
            capture_output=True,
            timeout=GIT_SECONDS,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace")


def _bounded(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def git_state(folder: str) -> GitState | None:
    """The state of the repository ``folder`` is in; ``None`` when it is not in one (or git is missing)."""
    inside = _git(folder, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.strip() != "true":
        return None
    branch = (_git(folder, "symbolic-ref", "--quiet", "--short", "HEAD") or "").strip()
    head = _git(folder, "log", "-1", "--format=%h %s (%cr)")
    if not branch:
        short = (_git(folder, "rev-parse", "--short", "HEAD") or "").strip()
        branch = f"(detached at {short})" if short else "(unknown)"
    last = _bounded(head.strip()) if head and head.strip() else "(no commits yet)"
    stat = _git(folder, "diff", "HEAD", "--stat=160") if head else _git(folder, "diff", "--cached", "--stat=160")
    changes = [_bounded(line.strip()) for line in (stat or "").splitlines() if line.strip()]
    if len(changes) > STAT_LINES + 1:  # keep the summary line ("N files changed, ...")
        hidden = len(changes) - STAT_LINES - 1
        changes = [*changes[:STAT_LINES], f"… {hidden} more files", changes[-1]]
    untracked = _git(folder, "ls-files", "--others", "--exclude-standard")
    count = len([name for name in (untracked or "").splitlines() if name])
    if count:
        changes.append(f"{count} untracked file{'' if count == 1 else 's'}")
    return GitState(branch, last, changes)
