"""Real agents use ``sessionref mcp``: Codex CLI (``@openai/codex``, pinned in ``tests/interop``) runs
``codex exec`` with sessionref in its ``[mcp_servers]`` and a model provider pointing at a local stub
that speaks the Responses API. The stub asks for a ``reference_session`` call; Codex makes it through
our server (its tools are read-only, so ``approval_policy = "never"`` lets it) and sends the result
back, which must be the snapshot ``prepare`` gives."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from core import JsonlSessionStore, ReferenceInput, SessionReferenceService
from tests.rc8 import INTEROP, NODE
from tests.test_mcp import _store

REPO = Path(__file__).resolve().parent.parent
CODEX = INTEROP / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"

pytestmark = pytest.mark.skipif(
    NODE is None or not CODEX.exists(), reason="the interop packages are not installed (make interop)"
)


def _snapshot(root: Path) -> str:
    store = JsonlSessionStore(root)
    prepared = asyncio.run(
        SessionReferenceService(store).prepare(
            type("Caller", (), {"id": "x"})(), [{"type": "text", "text": ""}], [ReferenceInput("design")]
        )
    )
    store.close()
    return str(prepared.contexts[0].content[0]["text"])


class _Responses(BaseHTTPRequestHandler):
    """A Responses API model: it calls ``reference_session`` first, then answers DONE."""

    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).requests.append(body)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        answered = any(item.get("type") == "function_call_output" for item in body.get("input", []))
        if answered:
            item: dict[str, Any] = {"type": "message", "role": "assistant", "id": "msg_1",
                                    "content": [{"type": "output_text", "text": "DONE"}]}  # fmt: skip
        else:
            item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "reference_session",
                    "namespace": "mcp__sessionref", "arguments": json.dumps({"session": "design"})}  # fmt: skip
        number = len(self.requests)
        for kind, data in (
            ("response.created", {"response": {"id": f"resp_{number}"}}),
            ("response.output_item.done", {"item": item, "output_index": 0}),
            ("response.completed", {"response": {"id": f"resp_{number}",
                                                 "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}}),
        ):  # fmt: skip
            self.wfile.write(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())

    def log_message(self, *_args: Any) -> None:
        pass


def test_codex_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _store(root)
    _Responses.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Responses)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(
        f"""model = "stub-model"
model_provider = "stub"
tool_output_token_limit = 40000
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.stub]
name = "stub"
base_url = "http://127.0.0.1:{server.server_address[1]}/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"

[mcp_servers.sessionref]
command = {json.dumps(sys.executable)}
args = ["-m", "tui.cli", "mcp", "--root", {json.dumps(str(root))}, "--no-external"]
env = {{ PYTHONPATH = {json.dumps(str(REPO))} }}
required = true
"""
    )
    environment = {**os.environ, "CODEX_HOME": str(home), "STUB_API_KEY": "stub", "HOME": str(tmp_path)}
    assert NODE is not None
    try:
        done = subprocess.run(
            [NODE, str(CODEX), "exec", "--skip-git-repo-check", "reference the design session"],
            cwd=work, env=environment, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcp: sessionref/reference_session (completed)" in done.stdout + done.stderr
    assert done.stdout.strip().endswith("DONE")
    # Codex offered our server's tools as one namespace, and sent the snapshot back as the call's output.
    offered = json.dumps(_Responses.requests[0].get("tools"))
    assert "mcp__sessionref" in offered and "reference_session" in offered
    (output,) = [item for item in _Responses.requests[-1]["input"] if item.get("type") == "function_call_output"]
    texts = [part["text"] for part in output["output"] if part.get("type") == "input_text"]
    assert _snapshot(root) in texts  # whole: tool_output_token_limit lets a 64 KiB snapshot through uncut
