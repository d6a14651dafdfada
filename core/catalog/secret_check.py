"""What ``sessionref doctor --secrets`` says of a store: which sessions hold secrets (keys, tokens,
passwords; ``core.secrets``), of which kinds and how many, never a value. A session that holds some
is a warning: it should not be shared or referenced as it is (both mask them; the store keeps them)."""

from __future__ import annotations

from collections import Counter

from core.folder.doctor import Finding
from core.reference.projection import project_conversation
from core.secrets.conversation import describe_secrets, mask_conversation
from core.stores import SessionStore


def check_secrets(store: SessionStore) -> tuple[list[Finding], int]:
    """A warning per session that holds secrets (its kinds, counts and messages), and how many
    characters of conversation were scanned."""
    findings: list[Finding] = []
    scanned = 0
    for record in store.listing():
        session_id = record.header.id
        try:
            items = project_conversation(store.surface(session_id))
        except Exception as error:  # (a session doctor cannot read is reported by its other checks)
            findings.append(Finding("info", "secrets_unread", session_id, f"not scanned: {error}"))
            continue
        scanned += sum(len(item.text) for item in items)
        masked = mask_conversation(items).masked
        if not masked:
            continue
        total: Counter[str] = Counter()
        for kinds in masked.values():
            total.update(kinds)
        count = sum(total.values())
        findings.append(
            Finding(
                "warning",
                "secrets",
                session_id,
                f"{count} secret{'' if count == 1 else 's'}: {describe_secrets(masked)}",
            )
        )
    return findings, scanned
