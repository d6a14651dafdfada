"""A third corpus, to check new rules against while they are made: other providers' documented token
shapes and other ways credentials are written (XML and .NET configs, PowerShell, Ruby, PHP, fish,
Dockerfiles, name/value lists, JSON inside JSON, HTTP headers and query strings, prose), with
look-alikes of its own. Neither half of ``secret_vendors`` shares a kind or a template with it: the
held-back half stays a measure, this one is what rules are checked on.

Written before any rule was changed against it, and with its baseline in docs/security.md.
"""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Callable

from tests.support.secret_corpus import ALNUM, HEX, URLSAFE, Planted, _pick

LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits

Maker = Callable[[random.Random], str]


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


KINDS: dict[str, tuple[str, Maker]] = {
    # AI providers.
    "mistral": ("MISTRAL_API_KEY", lambda r: _pick(r, ALNUM, 32)),
    "cohere": ("CO_API_KEY", lambda r: _pick(r, ALNUM, 40)),
    "together": ("TOGETHER_API_KEY", lambda r: _pick(r, HEX, 64)),
    "fireworks": ("FIREWORKS_API_KEY", lambda r: "fw_" + _pick(r, ALNUM, 24)),
    "elevenlabs": ("ELEVENLABS_API_KEY", lambda r: "sk_" + _pick(r, HEX, 48)),
    "deepgram": ("DEEPGRAM_API_KEY", lambda r: _pick(r, HEX, 40)),
    "voyage": ("VOYAGE_API_KEY", lambda r: "pa-" + _pick(r, URLSAFE, 43)),
    "cerebras": ("CEREBRAS_API_KEY", lambda r: "csk-" + _pick(r, LOWER_ALNUM, 48)),
    "modal": ("MODAL_TOKEN_SECRET", lambda r: "as-" + _pick(r, ALNUM, 22)),
    "wandb": ("WANDB_API_KEY", lambda r: _pick(r, HEX, 40)),
    "langfuse": ("LANGFUSE_SECRET_KEY", lambda r: "sk-lf-" + _uuid(r)),
    # Cloud and hosting.
    "render": ("RENDER_API_KEY", lambda r: "rnd_" + _pick(r, ALNUM, 32)),
    "neon": ("NEON_API_KEY", lambda r: "napi_" + _pick(r, LOWER_ALNUM, 64)),
    "railway": ("RAILWAY_TOKEN", _uuid),
    "scaleway": ("SCW_SECRET_KEY", _uuid),
    "linode": ("LINODE_TOKEN", lambda r: _pick(r, HEX, 64)),
    "hetzner": ("HCLOUD_TOKEN", lambda r: _pick(r, ALNUM, 64)),
    "cloudflare-api-token": ("CLOUDFLARE_API_TOKEN", lambda r: _pick(r, URLSAFE, 40)),
    "azure-devops": ("AZURE_DEVOPS_EXT_PAT", lambda r: _pick(r, LOWER_ALNUM, 52)),
    "ibm-cloud": ("IBMCLOUD_API_KEY", lambda r: _pick(r, URLSAFE, 44)),
    "upstash": ("UPSTASH_REDIS_REST_TOKEN", lambda r: "AX" + _pick(r, ALNUM, 4) + "ASQgN" + _pick(r, URLSAFE, 60)),
    # Developer tools and services.
    "snyk": ("SNYK_TOKEN", _uuid),
    "sonarqube": ("SONAR_TOKEN", lambda r: "squ_" + _pick(r, HEX, 40)),
    "buildkite": ("BUILDKITE_API_TOKEN", lambda r: "bkua_" + _pick(r, HEX, 40)),
    "honeycomb": ("HONEYCOMB_API_KEY", lambda r: "hcaik_" + _pick(r, LOWER_ALNUM, 58)),
    "posthog": ("POSTHOG_PERSONAL_API_KEY", lambda r: "phx_" + _pick(r, ALNUM, 43)),
    "launchdarkly": ("LD_API_KEY", lambda r: "api-" + _uuid(r)),
    "rollbar": ("ROLLBAR_ACCESS_TOKEN", lambda r: _pick(r, HEX, 32)),
    "pagerduty": ("PAGERDUTY_TOKEN", lambda r: "u+" + _pick(r, URLSAFE, 18)),
    "resend": ("RESEND_API_KEY", lambda r: "re_" + _pick(r, ALNUM, 8) + "_" + _pick(r, ALNUM, 24)),
    "sanity": ("SANITY_API_TOKEN", lambda r: "sk" + _pick(r, ALNUM, 80)),
    "postmark": ("POSTMARK_SERVER_TOKEN", _uuid),
    "algolia": ("ALGOLIA_ADMIN_KEY", lambda r: _pick(r, HEX, 32)),
    "segment": ("SEGMENT_WRITE_KEY", lambda r: _pick(r, ALNUM, 32)),
    "readme": ("README_API_KEY", lambda r: "rdme_" + _pick(r, HEX, 70)),
    "lob": ("LOB_API_KEY", lambda r: "live_" + _pick(r, HEX, 35)),
    "plaid": ("PLAID_SECRET", lambda r: _pick(r, HEX, 30)),
    "paypal": ("PAYPAL_CLIENT_SECRET", lambda r: "E" + _pick(r, URLSAFE, 79)),
    "braintree": (
        "BRAINTREE_ACCESS_TOKEN",
        lambda r: "access_token$production$" + _pick(r, LOWER_ALNUM, 16) + "$" + _pick(r, HEX, 32),
    ),
    "adobe": ("ADOBE_CLIENT_SECRET", lambda r: "p8e-" + _pick(r, ALNUM, 32)),
    "dropbox": ("DROPBOX_ACCESS_TOKEN", lambda r: "sl." + _pick(r, URLSAFE, 130)),
    "box": ("BOX_DEVELOPER_TOKEN", lambda r: _pick(r, ALNUM, 32)),
    "totp-seed": ("TOTP_SECRET", lambda r: _pick(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 32)),
    "db-password": ("DB_PASSWORD", lambda r: _pick(r, ALNUM, 10) + r.choice("!#%^*") + _pick(r, ALNUM, 5)),
}
"""Kind -> (the name a config gives it, its value)."""


def _place(rng: random.Random, name: str, value: str) -> str:
    """Where a validation secret is written: none of the two halves' templates."""
    camel = "".join(part.capitalize() for part in name.lower().split("_"))
    lower = name.lower()
    return rng.choice(
        (
            f'<configuration>\n  <appSettings>\n    <add key="{camel}" value="{value}" />\n'
            "  </appSettings>\n</configuration>",
            f"<{camel[0].lower() + camel[1:]}>{value}</{camel[0].lower() + camel[1:]}>",
            f'$env:{name} = "{value}"',
            f'ENV["{name}"] = "{value}"',
            f"define('{name}', '{value}');",
            f"set -gx {name} {value}",
            f"ENV {name} {value}",
            f'{{"name": "{name}", "value": "{value}"}}',
            f'"env": [{{"name": "{name}", "value": "{value}"}}]',
            f"- name: {name}\n  value: {value}\n",
            '{"body": "{\\"' + lower + '\\":\\"' + value + '\\"}"}',
            f"X-{camel}: {value}",
            f"GET /v1/items?{lower}={value}&page=2 HTTP/1.1",
            f"here's the {lower.replace('_', ' ')} for staging: {value} (rotate it after)",
            f"{camel[0].lower() + camel[1:]}: '{value}',",
            f"settings[:{lower}] = '{value}'",
            f"{name}={value} make deploy",
            f'credentials = {{ "{lower}" => "{value}" }}',
            f"[profile ci]\n{lower} = {value}\n",
            f"kubectl create secret generic app --from-literal={lower}={value}",
        )
    )


def planted(count_per_kind: int = 8, seed: int = 48) -> list[Planted]:
    """``count_per_kind`` secrets of every kind, each in one of the corpus's surroundings."""
    rng = random.Random(seed)
    cases = []
    for kind, (name, make) in KINDS.items():
        for _ in range(count_per_kind):
            value = make(rng)
            cases.append(Planted(kind, _place(rng, name, value), (value,)))
    return cases


LOOK_ALIKES: list[Callable[[random.Random], str]] = [
    lambda r: f"request_id={_uuid(r)} status=200 duration_ms={r.randrange(999)}",
    lambda r: f'"integrity": "sha512-{_pick(r, ALNUM + "+/", 86)}=="',
    lambda r: f"golang.org/x/net v0.{r.randrange(40)}.0 h1:{_pick(r, ALNUM + '+/', 43)}=",
    lambda r: f"/nix/store/{_pick(r, '0123456789abcdfghijklmnpqrsvwxyz', 32)}-python3-3.12.{r.randrange(9)}",
    lambda r: f'ETag: "{_pick(r, HEX, 40)}"',
    lambda r: f"def test_should_reject_the_token_when_it_has_expired_{r.randrange(99)}(self):",
    lambda r: f"class AbstractTokenRefreshingCredentialsProviderFactory{r.randrange(9)}:",
    lambda r: f'<link rel="stylesheet" href="/static/main.{_pick(r, HEX, 8)}.chunk.css">',
    lambda r: f"API_KEY=${{API_KEY}}  # from the vault, run {r.randrange(999)}",
    lambda r: f"password: ${{{{ secrets.DB_PASSWORD }}}}\ntoken: ${{{{ github.token }}}}  # {r.randrange(99)}",
    lambda r: f"valueFrom:\n  secretKeyRef:\n    name: app-secrets\n    key: api-key-{r.randrange(9)}",
    lambda r: f'i18n key settings.security.api_key.label_{r.randrange(99)} = "API key"',
    lambda r: f"key_length = {r.choice((16, 32, 64))}\ntoken_ttl_seconds = {r.randrange(9999)}",
    lambda r: (
        f"secret_santa_{2020 + r.randrange(6)} is on; passwordless login shipped in {r.randrange(9)}.{r.randrange(9)}"
    ),
    lambda r: f"client_id: Iv1.{_pick(r, HEX, 16)}  # the GitHub App's public id",
    lambda r: f"{r.randrange(10**11, 10**12)}-{_pick(r, LOWER_ALNUM, 32)}.apps.googleusercontent.com",
    lambda r: f"fe80::{_pick(r, HEX, 4)}:{_pick(r, HEX, 4)}:{_pick(r, HEX, 4)}:{_pick(r, HEX, 4)} dev eth0",
    lambda r: (
        f"commit {_pick(r, HEX, 40)}\nAuthor: Dev <dev@example.com>\n\n    fix token refresh ({r.randrange(999)})"
    ),
    lambda r: f"data:image/png;base64,iVBORw0KGgo{_pick(r, ALNUM + '+/', 120)}",
    lambda r: f"the api key is stored in the OS keychain, never in ~/.config (issue #{r.randrange(9999)})",
    lambda r: f"X-Request-Id: {_uuid(r)}\nX-RateLimit-Remaining: {r.randrange(5000)}",
    lambda r: f"GET /v1/items?page={r.randrange(99)}&per_page=50&sort=created_at HTTP/1.1",
    lambda r: f'<add key="LogLevel" value="{r.choice(("Debug", "Information", "Warning"))}" />',
    lambda r: f'$env:PATH = "C:\\\\tools\\\\bin;" + $env:PATH  # {r.randrange(99)}',
    lambda r: f"set -gx EDITOR nvim; set -gx PAGER less  # {r.randrange(99)}",
    lambda r: f"ENV NODE_ENV production\nENV PORT {r.randrange(3000, 9000)}",
    lambda r: f'{{"name": "LOG_LEVEL", "value": "{r.choice(("debug", "info"))}"}}',
    lambda r: f"the secret to a good sourdough is time ({r.randrange(12, 48)} hours)",
    lambda r: f"s3://backups-{_pick(r, LOWER_ALNUM, 12)}/db/{r.randrange(2020, 2026)}/dump.sql.gz",
    lambda r: f"wheel: mypkg-1.{r.randrange(9)}.0-py3-none-any.whl sha256={_pick(r, HEX, 64)}",
]
"""Texts with no secret in them, each made many times with other values."""


def look_alikes(count: int = 600, seed: int = 49) -> list[str]:
    rng = random.Random(seed)
    return [LOOK_ALIKES[index % len(LOOK_ALIKES)](rng) for index in range(count)]
