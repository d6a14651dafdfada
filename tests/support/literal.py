"""A slow, literal transcription of the original retention algorithm (CONTRACT §6).

It re-serialises the whole data object after every change, exactly as the TypeScript does; the
tests compare the engine's near-linear implementation against it bit for bit.
"""

from __future__ import annotations

from typing import Any

from core import SurfaceSnapshot, project_conversation, stringify_tag_safe_json


def _utf8(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def _text_decoder(data: bytes) -> str:
    """JavaScript's ``new TextDecoder().decode(data)``: a leading byte-order mark is dropped."""
    decoded = data.decode("utf-8")
    return decoded[1:] if decoded.startswith("\ufeff") else decoded


def literal_head_tail(text: str, head: int, tail: int) -> tuple[str, int]:
    data = _utf8(text)
    total = len(data)
    prefix = data[: min(total, head)]
    suffix = data[total - min(total - len(prefix), tail) :] if min(total - len(prefix), tail) else b""
    if total <= head + tail:
        return _text_decoder(data), 0
    while prefix:
        try:
            prefix.decode("utf-8")
            break
        except UnicodeDecodeError:
            prefix = prefix[:-1]
    while suffix and 0x80 <= suffix[0] < 0xC0:
        suffix = suffix[1:]
    kept = _text_decoder(prefix) + _text_decoder(suffix)
    return kept, total - len(prefix) - len(suffix)


def literal_truncate(text: str, max_out: int) -> tuple[str, int]:
    if len(_utf8(text)) <= max_out:
        return text, 0
    low, high = 0, max_out
    best = ("", len(_utf8(text)))
    while low <= high:
        retained = (low + high) // 2
        kept, omitted = literal_head_tail(text, -(-retained // 2), retained // 2)
        candidate = f"{kept}\n[… omitted {omitted} UTF-8 bytes …]"
        if len(_utf8(candidate)) <= max_out:
            best = (candidate, omitted)
            low = retained + 1
        else:
            high = retained - 1
    return best


def literal_retain(
    snapshot: SurfaceSnapshot, label: str, max_bytes: int
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    original = [
        {"role": i.role, "text": i.text, "checkpoint": i.checkpoint, "orig": i.text, "cut": 0}
        for i in project_conversation(snapshot)
    ]
    retained = [dict(item) for item in original]
    omitted_messages = 0
    dropped_bytes = 0

    def data() -> dict[str, Any]:
        return {
            "sessionId": snapshot.session.id,
            "label": label,
            "cwd": snapshot.session.cwd,
            "capturedThroughSeq": snapshot.captured_through_seq,
            "conversation": [{"role": item["role"], "text": item["text"]} for item in retained],
        }

    def size() -> int:
        return len(stringify_tag_safe_json(data()).encode("utf-8"))

    while size() > max_bytes:
        newest = len(retained) - 1
        drop = next((i for i, item in enumerate(retained) if not item["checkpoint"] and i != newest), -1)
        if drop < 0:
            break
        removed = retained.pop(drop)
        omitted_messages += 1
        dropped_bytes += len(_utf8(removed["orig"]))
    while size() > max_bytes:
        longest, longest_bytes = -1, 0
        for i, item in enumerate(retained):
            length = len(_utf8(item["text"]))
            if length > longest_bytes:
                longest, longest_bytes = i, length
        if longest < 0 or longest_bytes == 0:
            return None
        target = max(0, longest_bytes - (size() - max_bytes))
        shortened, omitted = literal_truncate(retained[longest]["orig"], target)
        if shortened == retained[longest]["text"]:
            return None
        retained[longest] = {**retained[longest], "text": shortened, "cut": omitted}
    omitted_bytes = dropped_bytes + sum(item["cut"] for item in retained)
    stats = {
        "compacted": any(item["checkpoint"] for item in original),
        "originalMessages": len(original),
        "retainedMessages": len(retained),
        "omittedMessages": omitted_messages,
        "omittedBytes": omitted_bytes,
        "truncated": omitted_messages > 0 or omitted_bytes > 0,
    }
    return data(), stats
