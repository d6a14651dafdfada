"""The retrieval benchmark's data: long multi-session conversations with facts planted in them, and
questions about those facts worded differently from the sessions, each with its right session.

Synthetic part: a seeded generator writes ``SESSIONS`` conversations of 40-90 messages about a
shared world: 30 projects, 12 components, 30 people and 20 cities recur across sessions, each
conversation having its own topic (a project, two components, three people, a city) and small talk
about it, so a single word rarely tells a session apart. Each planted fact is said once, in one
session; its question names the fact's subject (often by another name: ``billing service`` /
``payments backend``), shares at most one other word with it and words the rest differently, as
people remember things. ``keywords`` is the question reduced
to the words a person would type into a search box.

Real part: questions written by hand about what was said in the real Claude Code and Codex
transcripts of ``../shared/fixtures/external-real`` (read as the other agents' sessions they are).

Every question has a stable id; ``held_back(id)`` puts half of them aside (a hash, not a choice):
the ranking constants were tuned on the other half only.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

SESSIONS = 160
SEED = 20261206


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    kind: str
    question: str
    keywords: str
    session: str


@dataclass(slots=True)
class Conversation:
    id: str
    title: str
    cwd: str
    messages: list[tuple[str, str]] = field(default_factory=list)  # (role, text)


def held_back(question_id: str) -> bool:
    """Whether a question is in the held-back half (never tuned against)."""
    return hashlib.sha256(question_id.encode()).digest()[0] % 2 == 1


PROJECTS = """Falcon Juniper Nimbus Quartz Harbor Cobalt Meridian Tundra Saffron Beacon Orchid Granite Pioneer
Lantern Mosaic Vertex Summit Cascade Ember Atlas Willow Comet Prism Sequoia Aurora Basalt Citadel Delta
Everest Fjord""".split()
COMPONENTS = [
    ("billing service", "payments backend"),
    ("search indexer", "indexing job"),
    ("login page", "sign-in screen"),
    ("image resizer", "thumbnail pipeline"),
    ("notification worker", "push alerts daemon"),
    ("report generator", "export reports feature"),
    ("API gateway", "edge proxy"),
    ("mobile app", "phone client"),
    ("data warehouse", "analytics store"),
    ("CI pipeline", "build system"),
    ("chat widget", "support messenger"),
    ("recommendation engine", "suggestions model"),
]
TECH = """PostgreSQL Redis Kafka RabbitMQ SQLite DynamoDB Elasticsearch ClickHouse gRPC GraphQL Terraform Nomad
Kubernetes Celery Temporal NATS Cassandra MongoDB Memcached Envoy""".split()
REASONS = [
    "mostly because the team already knows it",
    "since it was the cheapest option we benchmarked",
    "because the vendor support contract covers it",
    "as it handled the load test without tuning",
    "because it keeps operations simple for on-call",
]
PEOPLE = """Priya Mateo Aisha Jonas Keiko Dmitri Amara Lucas Ingrid Rafael Yusuf Elena Tomasz Nadia Oskar Mei
Carlos Hana Felix Zara Gustavo Leila Henrik Ada Viktor Soraya Emil Noor Bruno Lina""".split()
CITIES = """Lisbon Montreal Osaka Nairobi Tallinn Valencia Melbourne Krakow Bogota Reykjavik Hanoi Porto Zurich
Edinburgh Seoul Austin Cairo Oslo Santiago Dublin""".split()
TEAMS = "platform growth security data mobile infra payments design".split()
MONTHS = "January February March April May June July August September October November December".split()
SETTINGS = [
    ("connection pool size", "number of database connections"),
    ("request timeout", "time limit on requests"),
    ("retry limit", "maximum number of retries"),
    ("cache TTL", "cache expiry"),
    ("worker count", "number of workers"),
    ("batch size", "how many items per batch"),
]
MODULES = """scheduler uploader tokenizer checkout invoices webhooks sessions permissions exporter crawler
bundler migrator""".split()
RACES = [
    ("cache warmup", "first request"),
    ("file watcher", "test teardown"),
    ("retry timer", "shutdown hook"),
    ("database migration", "seed script"),
    ("websocket reconnect", "auth refresh"),
]
PREFERENCES = [
    ("tabs", "spaces", "indentation", "how I indent code", "my editor shows them clearly"),
    ("vim", "VS Code", "quick edits on servers", "editing files on a remote box", "it is always installed"),
    ("pytest", "unittest", "writing tests", "a Python test framework", "fixtures are less boilerplate"),
    ("Markdown", "reStructuredText", "documentation", "writing docs", "everyone can read the raw text"),
    ("rebase", "merge commits", "keeping history tidy", "how branches get integrated", "the log stays linear"),
    ("dark mode", "light themes", "late night coding", "the color scheme at night", "it is easier on the eyes"),
]
INDUSTRIES = "fintech biotech robotics gaming logistics climate".split()
EVENTS = ["the trade show", "the audit", "the board meeting", "the holiday freeze", "the partner launch"]

FILLER = [
    "Can you take another look at the {component} for {project}? Something feels off.",
    "I pushed a small cleanup to the {project} repo, mostly renames.",
    "Let's keep the {component} discussion for the {project} sync on {month}.",
    "{person} mentioned the {component} logs are noisy again.",
    "The {project} dashboard looks fine this morning, nothing unusual.",
    "I'm reading through the {component} code to understand the flow first.",
    "Sure, here is a summary of what we changed in the {component} so far: mostly refactoring and tests.",
    "We should write down how the {component} is deployed; nobody remembers the steps.",
    "I think {person} is out until {month}, so let's not block on the review.",
    "Okay, running the test suite for {project} now, it takes a few minutes.",
    "The flaky build earlier was unrelated, a network blip on the runner.",
    "Here's the plan: first reproduce, then bisect, then write the fix with a regression test.",
    "That makes sense. I'll update the ticket with what we found about the {component}.",
    "Do we still need the old {component} flag in {project}, or can it go?",
    "I'd rather not touch the {component} config before the release.",
    "Thanks, that helped. Moving on to the next item on the {project} list.",
    "Quick question about {project}: who reviews changes to the {component}?",
    "Let me know when {person} has time to pair on the {component}.",
    "The meeting notes from {city} are in the shared folder.",
    "I looked at the metrics for {project} and the {component} seems stable this week.",
]


def _facts(rng: random.Random, project: str, used: set[str]) -> list[tuple[str, str, str, str]]:
    """Facts for one session: (kind, what is said, the question, the keywords)."""
    kinds = ["decision", "number", "owner", "relocation", "setting", "flaky", "preference", "deadline", "offsite"]
    facts: list[tuple[str, str, str, str]] = []
    for kind in rng.sample(kinds, 3):
        component, alias = rng.choice(COMPONENTS)
        person = rng.choice(PEOPLE)
        city = rng.choice(CITIES)
        module = rng.choice(MODULES)
        preference = rng.choice(PREFERENCES)
        setting, paraphrase = rng.choice(SETTINGS)
        # One fact per subject in the whole world: a question has exactly one right session.
        subject = {
            "relocation": person,
            "offsite": city,
            "flaky": module,
            "preference": f"{person}:{preference[2]}",
            "deadline": project,
            "setting": f"{project}:{setting}",
        }.get(kind, f"{project}:{component}")
        key = f"{kind}:{subject}"
        if key in used:
            continue
        used.add(key)
        # People name a thing by its name about half the time, else by another name for it.
        alias = alias if rng.random() < 0.5 else component
        if kind == "decision":
            tech = rng.choice(TECH)
            said = rng.choice(
                [
                    f"For the {component} in {project} we settled on {tech}, {rng.choice(REASONS)}.",
                    f"Decision for {project}: the {component} will run on {tech} ({rng.choice(REASONS)}).",
                ]
            )
            question = f"Which technology did {project} settle on for its {alias}?"
            keywords = f"{project} {alias} technology"
        elif kind == "number":
            number = rng.randint(12, 480)
            said = f"After the fix, p99 latency of the {component} in {project} dropped to {number} ms."
            question = f"How fast did the {alias} of {project} get after the fix?"
            keywords = f"{project} {alias} speed"
        elif kind == "owner":
            team = rng.choice(TEAMS)
            said = f"{person} from the {team} team owns the {project} {component} rollout from now on."
            question = f"Who owns shipping the new {alias} of {project}?"
            keywords = f"{project} {alias} responsible"
        elif kind == "relocation":
            industry = rng.choice(INDUSTRIES)
            said = f"Personal news: my friend {person} just moved to {city} for a job at a {industry} startup."
            question = f"Which city did {person} move to for a startup job?"
            keywords = f"{person} relocate"
        elif kind == "setting":
            low = rng.randint(2, 40)
            said = f"We bumped the {setting} for {project} from {low} to {low * rng.randint(2, 5)} after the incident."
            question = f"What value did we raise the {paraphrase} to in {project}?"
            keywords = f"{project} {paraphrase}"
        elif kind == "flaky":
            first, second = rng.choice(RACES)
            said = f"The intermittent failure in the {module} tests was a race between the {first} and the {second}."
            question = f"What caused the intermittent {module} test breakage?"
            keywords = f"{module} unreliable tests"
        elif kind == "preference":
            liked, other, task, paraphrase, reason = preference
            said = f"Honestly I prefer {liked} over {other} for {task}, mostly because {reason}."
            question = f"What did I tell {person} I prefer for {paraphrase}?"
            keywords = f"{paraphrase} favour"
            said = f"{person}, since you asked: " + said[0].lower() + said[1:]
        elif kind == "deadline":
            month = rng.choice(MONTHS)
            event = rng.choice(EVENTS)
            said = f"{project} has to be live before {month} {rng.randint(1, 28)} because of {event}."
            question = f"By when does {project} have to go live?"
            keywords = f"{project} launch cutoff"
        else:
            month = rng.choice(MONTHS)
            said = f"The team offsite in {city} is booked for the second week of {month}; {person} found the venue."
            question = f"When is the team retreat in {city} happening?"
            keywords = f"{city} retreat"
        facts.append((kind, said, question, keywords))
    return facts


def synthetic() -> tuple[list[Conversation], list[Question]]:
    """The synthetic conversations and the questions about them."""
    rng = random.Random(SEED)
    conversations: list[Conversation] = []
    questions: list[Question] = []
    used: set[str] = set()
    for number in range(SESSIONS):
        project = rng.choice(PROJECTS)
        component, _alias = rng.choice(COMPONENTS)
        conversation = Conversation(
            id=f"chat-{number:04d}",
            title=f"{project}: {component} {rng.choice(['work', 'notes', 'follow-up', 'questions', 'review'])}",
            cwd=f"/home/dev/projects/{project.lower()}",
        )
        # A conversation has its own topic: its project, two components, a few people, one city.
        cast = rng.sample(PEOPLE, 3)
        cast_components = [component, rng.choice(COMPONENTS)[0]]
        city = rng.choice(CITIES)
        facts = _facts(rng, project, used)
        length = rng.randint(40, 90)
        slots = sorted(rng.sample(range(2, length), len(facts)))
        planted = dict(zip(slots, facts, strict=True))
        for position in range(length):
            role = "user" if position % 2 == 0 else "assistant"
            fact = planted.get(position)
            if fact is not None:
                kind, said, question, keywords = fact
                conversation.messages.append((role, said))
                qid = f"syn-{conversation.id}-{position}"
                questions.append(Question(qid, kind, question, keywords, conversation.id))
                continue
            template = rng.choice(FILLER)
            conversation.messages.append(
                (
                    role,
                    template.format(
                        project=project if rng.random() < 0.9 else rng.choice(PROJECTS),
                        component=rng.choice(cast_components),
                        person=rng.choice(cast),
                        month=rng.choice(MONTHS),
                        city=city,
                    ),
                )
            )
        conversations.append(conversation)
    return conversations, questions


# Written by hand from the real transcripts' text: session | question | keywords.
_SESSIONS = {
    "spotter-dov": "claude:4d5611e5-241a-462a-8d15-5122611a9569",
    "spotter": "claude:55604662-cf2a-4331-851a-ec234028f8ca",
    "codemie-tools": "claude:3fb74381-1bf4-475e-8c6f-442d872b1bcf",
    "codemie-explore": "claude:9eda1058-9706-484a-b992-d03f9cfa2546",
    "codemie-phase4": "claude:624a4a58-b34c-462d-a70d-13421c8125a8",
    "hello-files": "claude:4c2ddfdc-b619-4525-8d03-1950fb1b0257",
    "response-types": "claude:10cd5911-8704-4996-9e33-32010589c357",
    "audit": "claude:cfa1e878-62b5-4e40-b281-bbf9b250d766",
    "claude-md-ja": "claude:5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
    "todo-app": "claude:fe5e1c67-53e7-4862-81ae-d0e013e3270b",
    "empty-repo": "claude:1af7fc5e-8455-4414-9ccd-011d40f70b2a",
    "demo-prep": "codex:019e1695-0522-7c83-8b39-0dd379793f80",
    "compaction": "codex:019e1625-789d-76c0-80ab-3724b5ddb799",
    "team-sheet": "codex:01997e76-d124-7592-9cac-2ec05abbca08",
    "session-viewer": "codex:cf4def41-21e0-4b91-adb4-5397c1492084",
    "repo-goals": "codex:019b7f94-51b4-7593-922e-ba12b5b73b52",
}
_REAL = """
spotter-dov | which hook absorbed the transcript selection code? | TranscriptSelection hook
spotter-dov | why did dialyzer complain about a guard in the subagent view | dialyzer guard subagent
spotter-dov | the pre-commit hook failed on issues that were already there before | pre-commit pre-existing
spotter-dov | unified transcript visualization epic with debug parity | transcript debug epic
spotter | the phoenix dev server would not come up | phx server
codemie-tools | give me a deep dive into the agents folder of the codemie cli | agent module deep dive
codemie-tools | list which tools are available in the session | show tools
codemie-explore | exploring the repo a second time found work on syncing conversations | conversation sync
codemie-phase4 | should the conversation id simply be the same value as the session id | conversationId sessionId
codemie-phase4 | we dropped failure tracking since the metrics side never had it | failures metrics SyncState
codemie-phase4 | what does the session tracking json look like | session tracking json
hello-files | after making the hello world files, which one did I have removed? | hello delete
response-types | look online for the response types claude code returns | claude code response types
audit | I asked for a review of the whole codebase's quality | audit codebase
claude-md-ja | which Next.js release did the updated CLAUDE.md list? | Next.js CLAUDE.md update
todo-app | build a to-do list web app with next using parallel subtasks | TODO app Next.js
empty-repo | creating the guidance file for a repository with no code in it | empty repository CLAUDE.md
demo-prep | what follow-ups came out of the demo preparation call recording | demo prep action items
demo-prep | who was asked to write the governance and budgeting demo script | governance demo scenario
compaction | what compaction threshold does the generated opencode config use now | compaction threshold
compaction | how the opencode adapter hands its config over in an environment variable | OPENCODE_CONFIG_CONTENT
team-sheet | which branch got the team sheet speed-up pushed to | team optimization branch
team-sheet | why did the team modal keep showing stale members | stale team modal refetch
team-sheet | lint, test and type checks all green for the labs app | lint test check-types
session-viewer | the crash when expanding the file tree, something not iterable | logDiffs not iterable
session-viewer | React wasn't imported and the app threw a reference error | React is not defined
session-viewer | keep the file tree hidden until the user adds it | file tree hidden default
session-viewer | put the apply_patch filter in the main toolbar instead of advanced | apply_patch main filter
session-viewer | how often does the connected workspace get rescanned for changes | workspace rescan watcher
session-viewer | I never asked you to rewrite the memory instructions file | rewrite memory-mcp instructions
session-viewer | which task about directory access and security did you recommend first | directory access security task
repo-goals | summarize what this repository is for and its goals | repository purpose goals
"""
REAL = [[part.strip() for part in line.split(" | ")] for line in _REAL.strip().splitlines()]


def real() -> list[Question]:
    """The questions about the real transcripts."""
    return [
        Question(f"real-{number:02d}", "real transcript", question, keywords, _SESSIONS[name])
        for number, (name, question, keywords) in enumerate(REAL)
    ]
