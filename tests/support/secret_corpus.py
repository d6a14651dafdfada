"""A corpus to measure the secret finder by: planted secrets of every kind our users hold, in the
surroundings they turn up in (env files, shell history, JSON and YAML configs, stack traces, diffs,
chat prose, tool results), and look-alikes that must stay (git SHAs, UUIDs, digests, integrity
hashes, public keys, image data, colours, our own URIs, versions, identifiers, long words).

Deterministic (a seeded generator): the same corpus on every run, for the tests and ``make bench``.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


@dataclass(frozen=True)
class Planted:
    """A text holding ``values`` (each a secret of ``kind``): none may come out of the mask."""

    kind: str
    text: str
    values: tuple[str, ...]


def _pick(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pem(rng: random.Random, label: str) -> str:
    body = base64.b64encode(rng.randbytes(rng.choice((600, 900, 1190)))).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}PRIVATE KEY-----\n" + "\n".join(lines) + f"\n-----END {label}PRIVATE KEY-----"


# Each maker gives (value to find, the text that holds it).
Maker = Callable[[random.Random], tuple[str, ...]]

SECRETS: dict[str, Maker] = {
    "openai-key": lambda r: ("sk-proj-" + _pick(r, URLSAFE, 48) + "T3Blbk" + _pick(r, URLSAFE, 50),),
    "openai-key-legacy": lambda r: ("sk-" + _pick(r, ALNUM, 48),),
    "anthropic-key": lambda r: ("sk-ant-api03-" + _pick(r, URLSAFE, 93) + "AA",),
    "deepseek-key": lambda r: ("sk-" + _pick(r, HEX, 32),),
    "google-api-key": lambda r: ("AIza" + _pick(r, URLSAFE, 35),),
    "github-token": lambda r: (r.choice(("ghp_", "gho_", "ghs_", "ghu_")) + _pick(r, ALNUM, 36),),
    "github-fine-grained": lambda r: (
        "github_pat_11" + _pick(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 20) + "_" + _pick(r, ALNUM, 59),
    ),
    "gitlab-token": lambda r: ("glpat-" + _pick(r, URLSAFE, 20),),
    "aws-access-key-id": lambda r: ("AKIA" + _pick(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),),
    "aws-secret-key": lambda r: (_pick(r, B64, 40),),
    "azure-storage-key": lambda r: (_pick(r, B64, 86) + "==",),
    "slack-token": lambda r: (
        "xoxb-" + _pick(r, string.digits, 12) + "-" + _pick(r, string.digits, 13) + "-" + _pick(r, ALNUM, 24),
    ),
    "slack-webhook": lambda r: (
        "https://hooks.slack.com/services/T"
        + _pick(r, ALNUM.upper(), 8)
        + "/B"
        + _pick(r, ALNUM.upper(), 10)
        + "/"
        + _pick(r, ALNUM, 24),
    ),
    "stripe-key": lambda r: (r.choice(("sk_live_", "sk_test_", "rk_live_")) + _pick(r, ALNUM, 24),),
    "twilio-key": lambda r: (r.choice(("AC", "SK")) + _pick(r, HEX, 32),),
    "npm-token": lambda r: ("npm_" + _pick(r, ALNUM, 36),),
    "pypi-token": lambda r: ("pypi-AgEIcHlwaS5vcmc" + _pick(r, URLSAFE, 120),),
    "jwt": lambda r: (
        _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        + "."
        + _b64url(json.dumps({"sub": str(r.randrange(10**9)), "exp": 1_900_000_000}).encode())
        + "."
        + _pick(r, URLSAFE, 43),
    ),
    "sendgrid-key": lambda r: ("SG." + _pick(r, URLSAFE, 22) + "." + _pick(r, URLSAFE, 43),),
    "private-key": lambda r: (_pem(r, r.choice(("RSA ", "EC ", "OPENSSH ", ""))),),
    "url-password": lambda r: (_pick(r, ALNUM, r.randrange(10, 24)),),
    "connection-password": lambda r: (_pick(r, ALNUM + "!#%", r.randrange(8, 20)),),
    "assigned-secret": lambda r: (_pick(r, ALNUM, r.randrange(24, 48)),),
    "webhook-secret": lambda r: (_pick(r, HEX, 64),),
    "authorization-bearer": lambda r: (_pick(r, URLSAFE + ".", r.randrange(32, 64)),),
    "authorization-basic": lambda r: (base64.b64encode(f"deploy:{_pick(r, ALNUM, 16)}".encode()).decode(),),
    "telegram-token": lambda r: (str(r.randrange(10**8, 10**9)) + ":AA" + _pick(r, URLSAFE, 33),),
    "mailchimp-key": lambda r: (_pick(r, HEX, 32) + "-us" + str(r.randrange(1, 21)),),
}
"""Each kind's value generator (the corpus kind: a few are finer than the finder's kinds)."""


def _surround(rng: random.Random, kind: str, value: str) -> str:
    """``value`` in one of the places such a secret turns up."""
    name = {
        "openai-key": "OPENAI_API_KEY",
        "openai-key-legacy": "OPENAI_API_KEY",
        "anthropic-key": "ANTHROPIC_API_KEY",
        "deepseek-key": "DEEPSEEK_API_KEY",
        "google-api-key": "GOOGLE_API_KEY",
        "github-token": "GITHUB_TOKEN",
        "github-fine-grained": "GH_TOKEN",
        "gitlab-token": "GITLAB_TOKEN",
        "aws-access-key-id": "AWS_ACCESS_KEY_ID",
        "aws-secret-key": "AWS_SECRET_ACCESS_KEY",
        "slack-token": "SLACK_BOT_TOKEN",
        "stripe-key": "STRIPE_SECRET_KEY",
        "twilio-key": "TWILIO_ACCOUNT_SID",
        "npm-token": "NPM_TOKEN",
        "pypi-token": "TWINE_PASSWORD",
        "sendgrid-key": "SENDGRID_API_KEY",
        "assigned-secret": rng.choice(
            ("SESSION_SECRET", "APP_SECRET_KEY", "SIGNING_KEY", "DB_PASSWORD", "CLIENT_SECRET")
        ),
        "webhook-secret": "WEBHOOK_SECRET",
        "telegram-token": "TELEGRAM_BOT_TOKEN",
        "mailchimp-key": "MAILCHIMP_API_KEY",
    }.get(kind, "API_KEY")
    if kind == "url-password":
        host = rng.choice(("db.internal", "10.0.3.7", "redis.example.com"))
        scheme = rng.choice(("postgresql", "mysql", "redis", "mongodb+srv", "amqp", "https"))
        return rng.choice(
            (
                f"DATABASE_URL={scheme}://app_user:{value}@{host}:5432/prod",
                f'psycopg.OperationalError: connection to "{scheme}://admin:{value}@{host}/db" failed: timeout',
                f"I keep getting an auth error with {scheme}://svc:{value}@{host}/main, any idea why?",
            )
        )
    if kind == "connection-password":
        return rng.choice(
            (
                f'conn = psycopg.connect("host=db.internal dbname=prod user=app password={value}")',
                f"Server=tcp:sql.example.net,1433;Database=orders;User Id=sa;Password={value};Encrypt=true;",
                f"DSN: password='{value}' host=10.1.1.4 port=5432 user=report",
            )
        )
    if kind == "aws-secret-key":
        key_id = "AKIA" + _pick(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
        return rng.choice(
            (
                f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {value}\n",
                f"$ aws configure set aws_secret_access_key {value}",
                f"here are the creds: {key_id} {value} (please rotate after)",
                f'{{"AccessKeyId": "{key_id}", "SecretAccessKey": "{value}", "Expiration": "2026-12-05T12:00:00Z"}}',
            )
        )
    if kind == "azure-storage-key":
        return (
            f"DefaultEndpointsProtocol=https;AccountName=prodstore;AccountKey={value};EndpointSuffix=core.windows.net"
        )
    if kind == "slack-webhook":
        return rng.choice((f'requests.post("{value}", json={{"text": "deploy done"}})', f"SLACK_WEBHOOK_URL={value}"))
    if kind == "private-key":
        return rng.choice(
            (
                f"Here is the key the TLS handshake uses:\n{value}\nWhy does nginx reject it?",
                json.dumps({"type": "service_account", "project_id": "prod-42", "private_key": value + "\n"}),
                f"$ cat ~/.ssh/id_ed25519\n{value}\n$ ",
            )
        )
    if kind == "authorization-bearer":
        return rng.choice(
            (
                f'curl -s -H "Authorization: Bearer {value}" https://api.example.com/v1/items',
                f"headers = {{'Authorization': 'Bearer {value}', 'Accept': 'application/json'}}",
                f"> GET /v1/me HTTP/1.1\n> Host: api.example.com\n> authorization: bearer {value}\n",
            )
        )
    if kind == "authorization-basic":
        return f'curl -H "Authorization: Basic {value}" https://ci.example.com/job/build'
    if kind == "jwt":
        return rng.choice(
            (f"Set-Cookie: session={value}; HttpOnly", f"the token from login is {value}, it expires soon")
        )
    return rng.choice(
        (
            f"{name}={value}\n",
            f'export {name}="{value}"',
            f'{{"{name.lower()}": "{value}", "region": "eu-west-1"}}',
            f"{name.lower()}: {value}\n",
            f"+{name}={value}\n-{name}=\n",
            f'Traceback (most recent call last):\n  File "app.py", line 12\n    client = Client(api_key="{value}")\n',
            f"can you check why this fails? I set the key to {value} in my shell"
            if kind not in ("assigned-secret", "webhook-secret", "twilio-key")
            else f"{name} = '{value}'",
            f"$ cat .env\nDEBUG=1\n{name}={value}\nPORT=8080\n",
        )
    )


LOOK_ALIKES: list[Callable[[random.Random], str]] = [
    lambda r: f"commit {_pick(r, HEX, 40)}\nAuthor: Ana <ana@example.com>\n\n    fix the flaky lock test",
    lambda r: f"git checkout {_pick(r, HEX, 7)} && git cherry-pick {_pick(r, HEX, 40)}",
    lambda r: (
        f"request id {r.randbytes(16).hex()[:8]}-{r.randbytes(2).hex()}-4{r.randbytes(2).hex()[1:]}-"
        f"a{r.randbytes(2).hex()[1:]}-{r.randbytes(6).hex()}"
    ),
    lambda r: f"sha256:{_pick(r, HEX, 64)}  image.tar",
    lambda r: f"FROM python:3.11-slim@sha256:{_pick(r, HEX, 64)}",
    lambda r: f'"integrity": "sha512-{base64.b64encode(r.randbytes(64)).decode()}"',
    lambda r: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_pick(r, B64, 43)} ana@laptop",
    lambda r: f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{_pick(r, B64, 300)} ci@runner",
    lambda r: f'<img src="data:image/png;base64,{base64.b64encode(r.randbytes(300)).decode()}">',
    lambda r: f"color: #{_pick(r, HEX, 6)}; background: rgba(0, 0, 0, 0.{r.randrange(10)});",
    lambda r: (
        f"see dsh-session:{r.randbytes(4).hex()}-{r.randbytes(2).hex()}-4{r.randbytes(2).hex()[1:]}-"
        f"8{r.randbytes(2).hex()[1:]}-{r.randbytes(6).hex()} for the earlier discussion"
    ),
    lambda r: (
        f"upgraded from {r.randrange(1, 9)}.{r.randrange(30)}.{r.randrange(30)} to "
        f"{r.randrange(1, 9)}.{r.randrange(30)}.{r.randrange(30)}-rc.{r.randrange(9)}"
    ),
    lambda r: "SECRET_KEY_FALLBACKS = []\nPASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']",
    lambda r: (
        f"the task-sk-{r.randrange(100)} ticket and disk-sk-usage graph, risk-{_pick(r, string.ascii_lowercase, 8)}"
    ),
    lambda r: " ".join(
        r.choice(
            (
                "internationalization",
                "responsibilities",
                "counterproductive",
                "misunderstanding",
                "straightforwardly",
                "authentication",
                "tokenization",
                "passwordless",
                "secretariat",
            )
        )
        for _ in range(8)
    ),
    lambda r: "password = os.environ['DB_PASSWORD']\ntoken: ${GITHUB_TOKEN}\napi_key: <your-api-key-here>",
    lambda r: f"max_tokens: {r.randrange(100, 9000)}\ntoken_count = {r.randrange(10**6)}\nSECRET_KEY_LENGTH = 64",
    lambda r: 'password_reset_url = "/account/password/reset"\nforgot_password_template: "emails/reset.html"',
    lambda r: f"https://github.com/org/repo/blob/{_pick(r, HEX, 40)}/src/main.py#L{r.randrange(900)}",
    lambda r: f"https://user@example.com/path and git@github.com:org/repo.git at {_pick(r, HEX, 12)}",
    lambda r: (
        f'"resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz", "version": "1.3.{r.randrange(9)}"'
    ),
    lambda r: "Bearer tokens are described in RFC 6750; the header is `Authorization: Bearer <token>`.",
    lambda r: f"PRIVATE_KEY_PATH=/etc/ssl/private/server.key  # mode 0600, id {r.randrange(10**6)}",
    lambda r: f"uuid.uuid4() -> {r.randbytes(16).hex()}",
    lambda r: f"md5 {_pick(r, HEX, 32)}  build/app.js",
    lambda r: (
        f"Received heartbeat from node-{_pick(r, string.ascii_lowercase + string.digits, 12)} in {r.randrange(900)} ms"
    ),
    lambda r: f"AccessDenied: User: arn:aws:iam::{r.randrange(10**11, 10**12)}:user/ci is not authorized",
    lambda r: f"const PRIMARY = '#{_pick(r, HEX, 6)}'; const ACCENT = 'hsl({r.randrange(360)}, 70%, 50%)';",
    lambda r: (
        f"-----BEGIN PUBLIC KEY-----\n{base64.b64encode(r.randbytes(270)).decode()[:64]}\n-----END PUBLIC KEY-----"
    ),
    lambda r: "export PATH=$HOME/.local/bin:$PATH\nexport EDITOR=vim\nexport TOKENIZERS_PARALLELISM=false",
    lambda r: (
        "secret = hashlib.sha256(payload).hexdigest()\napi_key=settings.OPENAI_API_KEY\n"
        f"token = jwt.encode(claims, key{r.randrange(9)}, algorithm='HS256')"
    ),
    lambda r: (
        f"password_hash = bcrypt.hashpw(pw, bcrypt.gensalt(rounds={r.randrange(10, 14)}))\n"
        "self.secret_store = SecretStore(path=config.secrets_path)"
    ),
    lambda r: f"TOKEN_TTL_SECONDS={r.randrange(60, 86400)}\nPASSWORD_MIN_LENGTH=12\nAPI_KEY_HEADER=X-Api-Key",
    lambda r: f"access_key_id: !Ref AccessKeyParameter\nsecret: {{{{ secrets.DEPLOY_KEY }}}}  # run {r.randrange(999)}",
    lambda r: f'client_secret: ${{CLIENT_SECRET:-}}\nauth_token: "%(AUTH_TOKEN)s"\nkey: value-{r.randrange(99)}',
]
"""Texts that hold no secret, each made many times with other values."""


def planted(count_per_kind: int = 8, seed: int = 44) -> list[Planted]:
    """``count_per_kind`` planted secrets of every kind, each in its surroundings."""
    rng = random.Random(seed)
    cases = []
    for kind, make in SECRETS.items():
        for _ in range(count_per_kind):
            values = make(rng)
            cases.append(Planted(kind, _surround(rng, kind, values[0]), values))
    return cases


def look_alikes(count: int = 1200, seed: int = 45) -> list[str]:
    """``count`` texts with no secret in them."""
    rng = random.Random(seed)
    return [LOOK_ALIKES[index % len(LOOK_ALIKES)](rng) for index in range(count)]
