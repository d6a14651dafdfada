"""``python -m core.search.builder ROOT``: build or refresh a store's body index in its own process.

The app starts this for a first build (or any large catch-up) so that neither the interpreter lock
nor a core is taken from the UI: the builder reads sessions in a forked helper process while SQLite
writes the index in this one. It holds the index's writer lock while it runs; the app searches the
growing index read-only meanwhile and takes the lock over when the builder exits. Safe to kill at
any moment: what was committed stays, and the next build continues from there.

Exit codes: 0 built (or another process already keeps the index), 3 the store cannot be read,
4 the index cannot be written (the message names the ``SEARCH_INDEX_*`` code).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence

from core.errors import SessionQueryError
from core.folder.jsonl_store import JsonlSessionStore
from core.search.body_index import BodyIndex, index_path_beside
from core.search.index_values import INDEX_READ_ONLY, IndexUnavailable, indexed_session, revision_key
from core.search.meaning import Embedder, MeaningUnavailable, embedder_for
from core.sessions.models import SessionHeader

EXIT_STORE = 3
EXIT_INDEX = 4


def build(
    root: str,
    compression: str = "zstd",
    first_cwd: str | None = None,
    index_path: str | None = None,
    embedder: Embedder | None = None,
    timings: bool = False,
) -> int:
    """Bring the index of the store at ``root`` up to date (its words, then with ``embedder`` its
    messages' vectors); returns the exit code. ``timings`` prints how long each took on stderr."""
    index = BodyIndex(index_path if index_path is not None else index_path_beside(root), embedder=embedder)
    try:
        index.open()
    except IndexUnavailable as problem:
        if problem.code == INDEX_READ_ONLY:
            return 0
        print(f"sessionref-index: {problem.line}", file=sys.stderr)
        return EXIT_INDEX
    if not index.writable:
        return 0  # another process keeps it
    try:
        store = JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]
        records = asyncio.run(store.list_sessions())
    except (OSError, ValueError, SessionQueryError) as error:
        print(f"sessionref-index: cannot list {root}: {error}", file=sys.stderr)
        return EXIT_STORE
    headers: dict[str, SessionHeader] = {}
    first: list[tuple[str, str]] = []
    rest: list[tuple[str, str]] = []
    for record in records:
        header = record.header
        headers[header.id] = header
        entry = (header.id, revision_key(store.listed_revision(header)))
        (first if first_cwd is not None and header.cwd == first_cwd else rest).append(entry)

    def read(session_id: str) -> object:
        stored = store.read_stored(headers[session_id])
        return indexed_session(stored.revision, stored.surface, stored.title)

    try:
        began = time.perf_counter()
        report = index.sync(first + rest, read, processes=True)  # type: ignore[arg-type]
        if report.indexed > 1000:
            index.checkpoint()
        words = time.perf_counter() - began
        if index.meaning is not None:
            try:
                index.meaning.embed_pending()
            except MeaningUnavailable as problem:  # words are searchable; the host embeds later
                print(f"sessionref-index: {problem.line}", file=sys.stderr)
        if timings:
            vectors = time.perf_counter() - began - words
            print(f"sessionref-index: words {words:.1f} s, vectors {vectors:.1f} s", file=sys.stderr)
    except IndexUnavailable as problem:
        print(f"sessionref-index: {problem.line}", file=sys.stderr)
        return EXIT_INDEX
    finally:
        index.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.search.builder", description=__doc__.splitlines()[0])
    parser.add_argument("root", help="the session store folder")
    parser.add_argument("--compression", choices=("zstd", "none"), default="zstd")
    parser.add_argument("--first-cwd", metavar="DIR", help="index the sessions of this folder first")
    parser.add_argument("--index", metavar="FILE", help="the index file (default: beside the store)")
    parser.add_argument("--nice", type=int, default=5, help="lower this process's priority by N (default 5)")
    parser.add_argument("--meaning", action="store_true", help="embed the messages with the shipped model")
    parser.add_argument("--embeddings-url", metavar="URL", help="embed with this OpenAI-compatible endpoint")
    parser.add_argument("--embeddings-model", metavar="NAME", help="the endpoint's embedding model")
    parser.add_argument("--embeddings-key-env", metavar="VAR", help="the variable holding the endpoint's key")
    parser.add_argument("--timings", action="store_true", help="print how long the words and vectors took")
    parser.add_argument("--no-redaction", action="store_true", help="send the endpoint secrets unmasked")
    args = parser.parse_args(argv)
    if args.nice:
        os.nice(args.nice)
    enabled = args.meaning or args.embeddings_url is not None
    embedder = embedder_for(
        enabled, args.embeddings_url, args.embeddings_model, args.embeddings_key_env, redact=not args.no_redaction
    )
    return build(args.root, args.compression, args.first_cwd, args.index, embedder, args.timings)


if __name__ == "__main__":
    raise SystemExit(main())
