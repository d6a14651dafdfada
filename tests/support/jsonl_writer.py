"""Helper process for the crash and lock tests: appends to one session and reports each durable seq."""

from __future__ import annotations

import sys
import time

from core import JsonlSessionStore


def main() -> None:
    root, compression, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    store = JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]
    session = store.get("victim") or store.create("victim", cwd="/crash/test")
    if mode == "hold":
        print("locked", flush=True)
        time.sleep(60)
        return
    index = 0
    while True:
        event = session.append(
            "user/message",
            {
                "content": [{"type": "text", "text": f"message {index} " + "x" * (index % 300)}],
                "source": {"kind": "user"},
            },
            surface_op="append",
        )
        print(event.seq, flush=True)
        index += 1


if __name__ == "__main__":
    main()
