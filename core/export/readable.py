"""A session as a person reads it, for a pull request or a ticket: Markdown, or one self-contained
HTML page (``sessionref export SESSION --format markdown|html``).

What it holds: the title, the folder, the times, then each turn (the user's and the assistant's
text, the assistant's reasoning folded, tool calls and results cut to ``TOOL_SHOWN`` characters,
the sessions a prompt referenced as ``dsh-session:`` links). Secrets are masked unless ``redact`` is
off (``core.secrets``). The HTML is rendered by ``markdown-it-py`` with raw HTML off, so nothing from
the session can become markup or script; the page carries its style inline and no script at all.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from markdown_it import MarkdownIt

from core.reference.uri import encode_session_reference_uri
from core.secrets.finder import mask_secrets
from core.sessions import event_types as ev
from core.sessions.models import SurfaceSnapshot
from core.sessions.surface import display_prompt_content, event_message, message_content, text_of_blocks

TOOL_SHOWN = 2_000
"""Characters of a tool call's arguments or a tool result shown (the rest is counted)."""


@dataclass
class Turn:
    """One message as exported: who, when, what was said, and around it."""

    role: str
    time: int | None
    text: str
    reasoning: str = ""
    tools: list[tuple[str, str]] = field(default_factory=list)
    """(what, text): a call's name and arguments, or a result."""
    references: list[tuple[str, str]] = field(default_factory=list)
    """(label, session id) of the sessions the prompt referenced."""


@dataclass
class Readable:
    """A session ready to be written: its turns, and how many secrets were masked."""

    session_id: str
    title: str
    cwd: str | None
    created_at: int
    turns: list[Turn]
    masked: int = 0
    redacted: bool = True


def _when(milliseconds: int | None) -> str:
    if milliseconds is None:
        return ""
    try:
        return datetime.fromtimestamp(milliseconds / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (ValueError, OverflowError, OSError):  # past the year 9999 (another tool's odd time): no date
        return f"{milliseconds} ms after 1970"


def _cut(text: str) -> str:
    if len(text) <= TOOL_SHOWN:
        return text
    return text[:TOOL_SHOWN] + f"\n… {len(text) - TOOL_SHOWN:,} more characters"


def _blocks_text(blocks: Any, kind: str) -> str:
    if not isinstance(blocks, list):
        return ""
    return "\n".join(
        b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == kind and isinstance(b.get("text"), str)
    )


def readable(snapshot: SurfaceSnapshot, title: str | None, *, redact: bool = True) -> Readable:
    """The session's turns as a person reads them (its secrets masked unless ``redact`` is off)."""
    turns: list[Turn] = []
    for event in snapshot.events:
        data = event.data
        match event.type:
            case ev.USER_MESSAGE | ev.STEERING_MESSAGE:
                text = text_of_blocks(display_prompt_content(data))
                references = []
                envelope = data.get("envelope")
                for context in envelope.get("prefixContexts", []) if isinstance(envelope, dict) else []:
                    meta = context.get("meta") if isinstance(context, dict) else None
                    for reference in meta.get("references", []) if isinstance(meta, dict) else []:
                        if isinstance(reference, dict) and isinstance(reference.get("sessionId"), str):
                            references.append(
                                (str(reference.get("label") or reference["sessionId"]), reference["sessionId"])
                            )
                if text.strip() or references:
                    turns.append(Turn("user", event.time, text, references=references))
            case ev.ASSISTANT_MESSAGE:
                content = message_content(data)
                tools = [
                    (f"call {block.get('name')}", str(block.get("arguments") or ""))
                    for block in content
                    if isinstance(block, dict) and block.get("type") == "tool-call"
                ]
                turn = Turn(
                    "assistant", event.time, _blocks_text(content, "text"), _blocks_text(content, "reasoning"), tools
                )
                if turn.text.strip() or turn.reasoning.strip() or tools:
                    turns.append(turn)
            case ev.TOOL_RESULT:
                # Either shape the logs hold: rc.8's (a user message holding the tool-result block,
                # what this app's agent writes) and the contract's (``content`` on the event).
                message = event_message(event)
                for block in message["content"] if message is not None else []:
                    if not isinstance(block, dict) or block.get("type") != "tool-result":
                        continue
                    result = block.get("content")
                    text = (
                        text_of_blocks(result) if isinstance(result, list) else json.dumps(result, ensure_ascii=False)
                    )
                    if turns and turns[-1].role == "assistant":
                        turns[-1].tools.append(("result", text))
    masked = 0
    if redact:
        if title:
            found = mask_secrets(title)  # (a title is often the first prompt's words)
            masked += sum(found.kinds.values())
            title = found.text
        for turn in turns:
            for name in ("text", "reasoning"):
                found = mask_secrets(getattr(turn, name))
                masked += sum(found.kinds.values())
                setattr(turn, name, found.text)
            for index, (what, text) in enumerate(turn.tools):
                found = mask_secrets(text)
                masked += sum(found.kinds.values())
                turn.tools[index] = (what, found.text)
    header = snapshot.session
    return Readable(header.id, title or header.id, header.cwd, header.created_at, turns, masked, redact)


def _code(value: str) -> str:
    """``value`` as inline code on one line, fenced by more backticks than any run inside it."""
    value = " ".join(value.splitlines())
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{pad}{value}{pad}{ticks}"


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{text}\n{ticks}"


def _below_turns(text: str) -> str:
    """A message's Markdown with its own headings two levels down (``##`` -> ``####``, at most
    ``######``) and a setext underline made a rule: no line a message says can read as a turn's
    heading (``## You · …``). Code blocks are left as they are (the headings are found by parsing)."""
    lines = text.split("\n")
    below: dict[int, str] = {}
    for token in MarkdownIt("commonmark").parse(text):
        if token.type != "heading_open" or token.map is None:
            continue
        first, end = token.map
        if token.markup.startswith("#"):
            line = lines[first]
            at = line.find(token.markup)
            deeper = "#" * min(len(token.markup) + 2, 6)
            below[first] = line[:at] + deeper + line[at + len(token.markup) :]
        else:  # setext: its underline after a blank line is a rule (or text), not a heading's
            below[end - 1] = "\n" + lines[end - 1]
    return "\n".join(below.get(number, line) for number, line in enumerate(lines))


def to_markdown(session: Readable) -> str:
    """The session as Markdown."""
    lines = [f"# {' '.join(session.title.split())}", ""]  # (one line: a title never opens a section)
    facts = [f"session {_code(session.session_id)}"]
    if session.cwd:
        facts.append(f"folder {_code(session.cwd)}")
    facts.append(f"started {_when(session.created_at)}")
    if session.turns and session.turns[-1].time:
        facts.append(f"last message {_when(session.turns[-1].time)}")
    lines += ["- " + " · ".join(facts)]
    if session.redacted:
        lines.append(f"- {session.masked} secret{'' if session.masked == 1 else 's'} masked (`[redacted: <kind>]`)")
    else:
        lines.append("- secrets are shown as they are (masking was off)")
    lines.append("")
    for turn in session.turns:
        who = "You" if turn.role == "user" else "Assistant"
        lines += [f"## {who} · {_when(turn.time)}", ""]
        if turn.reasoning.strip():
            quoted = "\n".join("> " + line for line in turn.reasoning.splitlines())
            lines += ["> **Reasoning**", ">", quoted, ""]
        if turn.text.strip():
            lines += [_below_turns(turn.text), ""]
        for label, session_id in turn.references:
            lines.append(f"- referenced: [{label}]({encode_session_reference_uri(session_id)})")
        if turn.references:
            lines.append("")
        for what, text in turn.tools:
            lines += [f"**Tool {what}**", "", _fence(_cut(text)), ""]
    return "\n".join(lines).rstrip() + "\n"


_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""The page's Content-Security-Policy: no script, no outside resource (style inline, images inline)."""

_STYLE = """
body { font: 15px/1.55 system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; color: #1d2127; }
header { border-bottom: 1px solid #d8dde3; margin-bottom: 1.5rem; }
.meta { color: #5a6470; font-size: 13px; }
article { border-left: 3px solid #c9d3de; padding: 0.2rem 0 0.2rem 1rem; margin: 1.2rem 0; }
article.user { border-color: #3d7be0; }
article.assistant { border-color: #2fa36b; }
article h2 { font-size: 14px; margin: 0 0 0.4rem; color: #5a6470; }
details { background: #f4f6f8; border-radius: 6px; padding: 0.4rem 0.8rem; margin: 0.5rem 0; }
pre { background: #f4f6f8; padding: 0.6rem; border-radius: 6px; overflow-x: auto; white-space: pre-wrap; }
code { font: 13px ui-monospace, monospace; }
"""


def to_html(session: Readable) -> str:
    """The session as one self-contained HTML page: no script, no outside resource, nothing from the
    session as markup (``markdown-it-py`` with raw HTML off; our own structure escapes every value)."""
    markdown = MarkdownIt("commonmark", {"html": False, "linkify": False})

    def escaped(value: str) -> str:
        return html.escape(value, quote=True)

    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
        f"<title>{escaped(session.title)}</title><style>{_STYLE}</style></head><body>",
        f'<header><h1>{escaped(session.title)}</h1><p class="meta">session <code>{escaped(session.session_id)}</code>',
    ]
    if session.cwd:
        parts.append(f" · folder <code>{escaped(session.cwd)}</code>")
    parts.append(f" · started {escaped(_when(session.created_at))}")
    masked = (
        f"{session.masked} secret{'' if session.masked == 1 else 's'} masked"
        if session.redacted
        else "secrets shown as they are (masking was off)"
    )
    parts.append(f"<br>{escaped(masked)}</p></header>")
    for turn in session.turns:
        who = "You" if turn.role == "user" else "Assistant"
        parts.append(f'<article class="{turn.role}"><h2>{who} · {escaped(_when(turn.time))}</h2>')
        if turn.reasoning.strip():
            parts.append(f"<details><summary>Reasoning</summary>{markdown.render(turn.reasoning)}</details>")
        if turn.text.strip():
            parts.append(markdown.render(turn.text))
        for label, session_id in turn.references:
            uri = encode_session_reference_uri(session_id)
            parts.append(f'<p class="meta">referenced: <a href="{escaped(uri)}">{escaped(label)}</a></p>')
        for what, text in turn.tools:
            parts.append(
                f"<details><summary>Tool {escaped(what)}</summary>"
                f"<pre><code>{escaped(_cut(text))}</code></pre></details>"
            )
        parts.append("</article>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
