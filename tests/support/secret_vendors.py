"""A second corpus, in two halves with different kinds and different surroundings: the **tuning**
half (with ``secret_corpus``'s 28 kinds), which the rules were checked against, and the **held-back**
half, written once and never tuned against (its misses are reported, not fixed by looking at them).

Each kind is a provider's documented token shape (prefix, alphabet, length) or a way a credential is
written (a command line, a config file), made with a seeded generator.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable

from tests.support.secret_corpus import ALNUM, HEX, URLSAFE, Planted, _pick

UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"

Maker = Callable[[random.Random], str]

TUNING: dict[str, tuple[str, Maker]] = {
    # AI providers.
    "groq": ("GROQ_API_KEY", lambda r: "gsk_" + _pick(r, ALNUM, 52)),
    "huggingface": ("HF_TOKEN", lambda r: "hf_" + _pick(r, string.ascii_letters, 34)),
    "replicate": ("REPLICATE_API_TOKEN", lambda r: "r8_" + _pick(r, ALNUM, 37)),
    "perplexity": ("PPLX_API_KEY", lambda r: "pplx-" + _pick(r, ALNUM, 48)),
    "openrouter": ("OPENROUTER_API_KEY", lambda r: "sk-or-v1-" + _pick(r, HEX, 64)),
    "anthropic-admin": ("ANTHROPIC_ADMIN_KEY", lambda r: "sk-ant-admin01-" + _pick(r, URLSAFE, 93) + "AA"),
    # Cloud and hosting.
    "digitalocean-pat": ("DIGITALOCEAN_TOKEN", lambda r: "dop_v1_" + _pick(r, HEX, 64)),
    "digitalocean-oauth": ("DO_OAUTH_TOKEN", lambda r: "doo_v1_" + _pick(r, HEX, 64)),
    "heroku": ("HEROKU_API_KEY", lambda r: "HRKU-AA" + _pick(r, URLSAFE, 58)),
    "planetscale": ("PLANETSCALE_PASSWORD", lambda r: "pscale_pw_" + _pick(r, URLSAFE, 43)),
    "databricks": ("DATABRICKS_TOKEN", lambda r: "dapi" + _pick(r, HEX, 32)),
    "pulumi": ("PULUMI_ACCESS_TOKEN", lambda r: "pul-" + _pick(r, HEX, 40)),
    "alibaba": ("ALIBABA_ACCESS_KEY_ID", lambda r: "LTAI" + _pick(r, ALNUM, 20)),
    "vault": ("VAULT_TOKEN", lambda r: "hvs." + _pick(r, URLSAFE, 95)),
    "doppler": ("DOPPLER_TOKEN", lambda r: "dp.pt." + _pick(r, ALNUM, 43)),
    "doppler-service": ("DOPPLER_TOKEN", lambda r: "dp.st.prd." + _pick(r, ALNUM, 43)),
    "terraform-cloud": ("TFE_TOKEN", lambda r: _pick(r, ALNUM, 14) + ".atlasv1." + _pick(r, URLSAFE, 67)),
    "grafana-cloud": ("GRAFANA_CLOUD_TOKEN", lambda r: "glc_" + _pick(r, ALNUM, 80)),
    # Developer tools.
    "shopify": ("SHOPIFY_ACCESS_TOKEN", lambda r: "shpat_" + _pick(r, HEX, 32)),
    "sentry": ("SENTRY_AUTH_TOKEN", lambda r: "sntryu_" + _pick(r, HEX, 64)),
    "postman": ("POSTMAN_API_KEY", lambda r: "PMAK-" + _pick(r, HEX, 24) + "-" + _pick(r, HEX, 34)),
    "linear": ("LINEAR_API_KEY", lambda r: "lin_api_" + _pick(r, ALNUM, 40)),
    "brevo": ("BREVO_API_KEY", lambda r: "xkeysib-" + _pick(r, HEX, 64) + "-" + _pick(r, ALNUM, 16)),
    "docker-pat": ("DOCKER_TOKEN", lambda r: "dckr_pat_" + _pick(r, URLSAFE, 27)),
    "figma": ("FIGMA_TOKEN", lambda r: "figd_" + _pick(r, URLSAFE, 40)),
    "stripe-webhook": ("STRIPE_WEBHOOK_SECRET", lambda r: "whsec_" + _pick(r, ALNUM, 32)),
    "age": ("SOPS_AGE_KEY", lambda r: "AGE-SECRET-KEY-1" + _pick(r, BECH32, 58)),
    # Written where it is used.
    "curl-user": ("", lambda r: _pick(r, ALNUM, 14) + "!"),
    "mysql-p": ("", lambda r: _pick(r, ALNUM, 16)),
    "netrc": ("", lambda r: _pick(r, ALNUM + "-", 20)),
    "long-session-token": ("AWS_SESSION_TOKEN", lambda r: "IQoJb3JpZ2luX2Vj" + _pick(r, ALNUM + "+/", 860)),
    "foo-key": ("PAYMENTS_KEY", lambda r: _pick(r, ALNUM, 40)),
    "authorization-schemeless": ("", lambda r: "lin_api_" + _pick(r, ALNUM, 40)),
}
"""The tuning half's new kinds: (the name it is assigned to, its value)."""

HELD_BACK: dict[str, tuple[str, Maker]] = {
    # AI providers.
    "xai": ("XAI_API_KEY", lambda r: "xai-" + _pick(r, ALNUM, 80)),
    "tavily": ("TAVILY_API_KEY", lambda r: "tvly-" + _pick(r, ALNUM, 32)),
    "langsmith": ("LANGSMITH_API_KEY", lambda r: "lsv2_pt_" + _pick(r, HEX, 32) + "_" + _pick(r, HEX, 10)),
    "pinecone": ("PINECONE_API_KEY", lambda r: "pcsk_" + _pick(r, ALNUM, 6) + "_" + _pick(r, ALNUM, 64)),
    # Cloud and hosting.
    "digitalocean-refresh": ("DO_REFRESH_TOKEN", lambda r: "dor_v1_" + _pick(r, HEX, 64)),
    "planetscale-token": ("PLANETSCALE_SERVICE_TOKEN", lambda r: "pscale_tkn_" + _pick(r, URLSAFE, 43)),
    "supabase": ("SUPABASE_ACCESS_TOKEN", lambda r: "sbp_" + _pick(r, HEX, 40)),
    "tencent": ("TENCENTCLOUD_SECRET_ID", lambda r: "AKID" + _pick(r, ALNUM, 32)),
    "google-oauth-secret": ("GOOGLE_CLIENT_SECRET", lambda r: "GOCSPX-" + _pick(r, URLSAFE, 28)),
    "azure-ad-secret": ("AZURE_CLIENT_SECRET", lambda r: _pick(r, ALNUM, 3) + "8Q~" + _pick(r, URLSAFE + ".~", 31)),
    "dynatrace": ("DT_API_TOKEN", lambda r: "dt0c01." + _pick(r, UPPER_ALNUM, 24) + "." + _pick(r, UPPER_ALNUM, 64)),
    "new-relic": ("NEW_RELIC_API_KEY", lambda r: "NRAK-" + _pick(r, UPPER_ALNUM, 27)),
    "fastly": ("FASTLY_API_TOKEN", lambda r: _pick(r, URLSAFE, 32)),
    "cloudflare-origin-ca": ("CF_ORIGIN_CA_KEY", lambda r: "v1.0-" + _pick(r, HEX, 24) + "-" + _pick(r, HEX, 146)),
    "vault-batch": ("VAULT_TOKEN", lambda r: "hvb." + _pick(r, URLSAFE, 138)),
    "grafana-service-account": ("GRAFANA_SA_TOKEN", lambda r: "glsa_" + _pick(r, ALNUM, 32) + "_" + _pick(r, HEX, 8)),
    "fly": ("FLY_API_TOKEN", lambda r: "fo1_" + _pick(r, URLSAFE, 43)),
    # Developer tools.
    "atlassian": ("JIRA_API_TOKEN", lambda r: "ATATT3xFfGF0" + _pick(r, URLSAFE, 170) + "=" + _pick(r, HEX, 8)),
    "bitbucket": ("BITBUCKET_APP_PASSWORD", lambda r: "ATBB" + _pick(r, ALNUM, 32)),
    "contentful": ("CONTENTFUL_TOKEN", lambda r: "CFPAT-" + _pick(r, URLSAFE, 43)),
    "notion": ("NOTION_TOKEN", lambda r: "ntn_" + _pick(r, ALNUM, 46)),
    "clickup": ("CLICKUP_TOKEN", lambda r: "pk_" + _pick(r, string.digits, 8) + "_" + _pick(r, UPPER_ALNUM, 32)),
    "airtable": ("AIRTABLE_TOKEN", lambda r: "pat" + _pick(r, ALNUM, 14) + "." + _pick(r, HEX, 64)),
    "typeform": ("TYPEFORM_TOKEN", lambda r: "tfp_" + _pick(r, URLSAFE, 44) + "_" + _pick(r, URLSAFE, 14)),
    "jfrog": ("ARTIFACTORY_API_KEY", lambda r: "AKCp" + _pick(r, ALNUM, 69)),
    "mailgun": ("MAILGUN_API_KEY", lambda r: "key-" + _pick(r, HEX, 32)),
    "mapbox": ("MAPBOX_SECRET_TOKEN", lambda r: "sk.eyJ1Ijoi" + _pick(r, URLSAFE, 60) + "." + _pick(r, URLSAFE, 22)),
    "square-access": ("SQUARE_ACCESS_TOKEN", lambda r: "EAAA" + _pick(r, URLSAFE, 60)),
    "shippo": ("SHIPPO_API_TOKEN", lambda r: "shippo_live_" + _pick(r, HEX, 40)),
    "easypost": ("EASYPOST_API_KEY", lambda r: "EZAK" + _pick(r, ALNUM, 54)),
    "frameio": ("FRAMEIO_TOKEN", lambda r: "fio-u-" + _pick(r, URLSAFE, 64)),
    "netlify": ("NETLIFY_AUTH_TOKEN", lambda r: "nfp_" + _pick(r, ALNUM, 36)),
    "slack-app": (
        "SLACK_APP_TOKEN",
        lambda r: "xapp-1-A" + _pick(r, UPPER_ALNUM, 10) + "-" + _pick(r, string.digits, 13) + "-" + _pick(r, HEX, 64),
    ),
    "discord-webhook": (
        "DISCORD_WEBHOOK",
        lambda r: f"https://discord.com/api/webhooks/{_pick(r, string.digits, 18)}/{_pick(r, URLSAFE, 68)}",
    ),
    "gitlab-runner": ("CI_RUNNER_TOKEN", lambda r: "glrt-" + _pick(r, URLSAFE, 20)),
    "npm-legacy-authtoken": ("", lambda r: _pick(r, HEX, 8) + "-" + _pick(r, HEX, 4) + "-" + _pick(r, HEX, 12)),
    "firebase-fcm": ("FCM_SERVER_KEY", lambda r: "AAAA" + _pick(r, URLSAFE, 7) + ":APA91b" + _pick(r, URLSAFE, 134)),
    "twilio-auth-token": ("TWILIO_AUTH_TOKEN", lambda r: _pick(r, HEX, 32)),
    "datadog": ("DD_API_KEY", lambda r: _pick(r, HEX, 32)),
    "okta": ("OKTA_API_TOKEN", lambda r: "00" + _pick(r, URLSAFE, 40)),
    "asana": (
        "ASANA_PAT",
        lambda r: "2/" + _pick(r, string.digits, 16) + "/" + _pick(r, string.digits, 16) + ":" + _pick(r, HEX, 32),
    ),
    "intercom": ("INTERCOM_ACCESS_TOKEN", lambda r: "dG9rOj" + _pick(r, ALNUM, 52) + "=="),
    "circleci": ("CIRCLE_TOKEN", lambda r: "CCIPAT_" + _pick(r, ALNUM, 22) + "_" + _pick(r, HEX, 40)),
    "gitea": ("GITEA_TOKEN", lambda r: _pick(r, HEX, 40)),
    # Written where it is used.
    "docker-login": ("", lambda r: _pick(r, ALNUM, 18)),
    "psql-password-env": ("", lambda r: _pick(r, ALNUM + "#%", 16)),
    "mongosh-p": ("", lambda r: _pick(r, ALNUM, 15)),
    "sshpass": ("", lambda r: _pick(r, ALNUM, 12)),
    "kubeconfig-token": ("", lambda r: "eyJhbGciOiJSUzI1NiIsImtpZCI6I" + _pick(r, URLSAFE, 120)),
    "kubeconfig-key-data": ("", lambda r: base64.b64encode(r.randbytes(180)).decode()),
    "pgp-private-key": ("", lambda r: "lQOYBGV" + base64.b64encode(r.randbytes(400)).decode()),
    "putty-key": ("", lambda r: base64.b64encode(r.randbytes(48)).decode()),
    "azure-sas": (
        "",
        lambda r: (
            base64.b64encode(r.randbytes(32)).decode().replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
        ),
    ),
    "jdbc-password": ("", lambda r: _pick(r, ALNUM, 14)),
    "dotted-config-token": ("SERVICE_TOKEN", lambda r: "svc." + _pick(r, LOWER_ALNUM, 4) + "." + _pick(r, ALNUM, 40)),
    "json-escaped-key": ("", lambda r: _pick(r, ALNUM, 32)),
    "positional-key": ("", lambda r: "sk-proj-" + _pick(r, URLSAFE, 48) + "T3Blbk" + _pick(r, URLSAFE, 50)),
    "yaml-credentials": ("", lambda r: _pick(r, ALNUM, 28)),
    "ini-password": ("", lambda r: _pick(r, ALNUM + "!@", 14)),
    "toml-secret": ("", lambda r: _pick(r, ALNUM, 36)),
}
"""The held-back half's kinds, none of them in the tuning half."""


def _tuning_place(rng: random.Random, kind: str, name: str, value: str) -> str:
    """Where a tuning-half secret is written: env files, shell, JSON, prose, a diff."""
    if kind == "curl-user":
        return rng.choice(
            (f"curl -u admin:{value} https://api.example.com/v2/export", f"curl --user 'ci:{value}' https://x")
        )
    if kind == "mysql-p":
        return f"$ mysql -h db.internal -u root -p{value} orders < fix.sql"
    if kind == "netrc":
        return rng.choice(
            (
                f"machine api.example.com login me@example.com password {value}\n",
                f"machine git.example.com\n  login ci\n  password {value}\n",
            )
        )
    if kind == "authorization-schemeless":
        return f'curl -H "Authorization: {value}" https://api.linear.app/graphql'
    return rng.choice(
        (
            f"{name}={value}\n",
            f'export {name}="{value}"',
            f'{{"{name.lower()}": "{value}", "timeout": 30}}',
            f"+{name}={value}\n-{name}=\n",
            f"I set the token to {value} and it still says unauthorized",
            f"$ cat .env\nLOG_LEVEL=debug\n{name}={value}\n",
        )
    )


def _held_back_place(rng: random.Random, kind: str, name: str, value: str) -> str:
    """Where a held-back secret is written: other files and other sentences than the tuning half's."""
    if kind == "docker-login":
        return rng.choice(
            (
                f"docker login -u deploy -p {value} registry.example.com",
                f"echo done; docker login --username ci --password {value} ghcr.io",
            )
        )
    if kind == "psql-password-env":
        return f"PGPASSWORD='{value}' psql -h 10.0.0.5 -U report -d sales -c 'select 1'"
    if kind == "mongosh-p":
        return f'mongosh "mongodb://db.internal:27017/app" --username admin -p {value}'
    if kind == "sshpass":
        return f"sshpass -p '{value}' scp build.tgz deploy@10.0.0.9:/srv/"
    if kind == "kubeconfig-token":
        return f"users:\n- name: ci\n  user:\n    token: {value}\n"
    if kind == "kubeconfig-key-data":
        return (
            "users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTi\n"
            f"    client-key-data: {value}\n"
        )
    if kind == "pgp-private-key":
        body = "\n".join(value[i : i + 64] for i in range(0, len(value), 64))
        return f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----"
    if kind == "putty-key":
        return (
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ci\nPublic-Lines: 2\n"
            f"AAAAC3NzaC1lZDI1NTE5\nAAAAIB7\nPrivate-Lines: 1\n{value}\nPrivate-MAC: ab12\n"
        )
    if kind == "azure-sas":
        return f"https://store.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31&sig={value}"
    if kind == "jdbc-password":
        return f"spring.datasource.url=jdbc:postgresql://db:5432/app?user=app&password={value}"
    if kind == "json-escaped-key":
        return '{"config": "{\\"api_key\\": \\"' + value + '\\", \\"region\\": \\"eu\\"}"}'
    if kind == "positional-key":
        return f'client = OpenAI("{value}")'
    if kind == "yaml-credentials":
        return f"services:\n  billing:\n    credentials:\n      password: {value}\n"
    if kind == "ini-password":
        return f"[database]\nhost = 10.0.0.4\nuser = app\npassword = {value}\n"
    if kind == "toml-secret":
        return f'[auth]\nclient_secret = "{value}"\nissuer = "https://id.example.com"\n'
    if kind == "npm-legacy-authtoken":
        return f"//registry.npmjs.org/:_authToken={value}-{value[:8]}"
    return rng.choice(
        (
            f"{name}: {value}\n",
            f'  - name: {name}\n    value: "{value}"\n',
            f"os.environ['{name}'] = '{value}'",
            f"ENV {name}={value}",
            f"set -x; {name}={value} ./deploy.sh",
            f"the log printed {name.lower()}={value} right before the crash",
        )
    )


def planted_half(held_back: bool, count_per_kind: int = 6, seed: int = 46) -> list[Planted]:
    """``count_per_kind`` secrets of every kind of one half, each in that half's surroundings."""
    rng = random.Random(seed + held_back)
    kinds, place = (HELD_BACK, _held_back_place) if held_back else (TUNING, _tuning_place)
    cases = []
    for kind, (name, make) in kinds.items():
        for _ in range(count_per_kind):
            value = make(rng)
            cases.append(Planted(kind, place(rng, kind, name, value), (value,)))
    return cases


HELD_BACK_LOOK_ALIKES: list[Callable[[random.Random], str]] = [
    lambda r: f"docker run --rm -u {r.randrange(1000, 1999)}:{r.randrange(1000, 1999)} -p 8080:80 nginx",
    lambda r: f"git push -u origin feature/{_pick(r, string.ascii_lowercase, 8)}",
    lambda r: "mysql -u root -p shop  # asks for the password",
    lambda r: f"ssh -p {r.randrange(1024, 65000)} deploy@10.0.0.{r.randrange(255)}",
    lambda r: f"key_id: {r.randrange(10**6)}\nkey_name: deploy-{r.randrange(99)}\nkeyboard_layout: us",
    lambda r: f"Authorization is required ({r.randrange(400, 404)}); see the docs on auth scopes.",
    lambda r: f"token_type: bearer\nexpires_in: {r.randrange(3600)}\nscope: read write",
    lambda r: f"pk_{_pick(r, string.ascii_lowercase, 6)}_index on table users ({r.randrange(9)} rows)",
    lambda r: f"the machine {_pick(r, string.ascii_lowercase, 6)} has login prompts and a password policy",
    lambda r: f"settings.AUTH_PASSWORD_VALIDATORS[{r.randrange(4)}]['NAME']",
    lambda r: f"SELECT password_hash, salt FROM users WHERE id = {r.randrange(10**6)};",
    lambda r: f'curl -u "$API_USER:$API_TOKEN" https://api.example.com/v{r.randrange(1, 4)}',
    lambda r: f"version {r.randrange(9)}.{r.randrange(99)}.{r.randrange(999)}.{_pick(r, string.digits, 14)}",
    lambda r: f"sha1 {_pick(r, HEX, 40)} refs/heads/main\nsha256 {_pick(r, HEX, 64)}",
    lambda r: f"trace_id={_pick(r, HEX, 32)} span_id={_pick(r, HEX, 16)} status=OK",
    lambda r: f"--password-stdin < ~/.docker/pass  # run {r.randrange(999)}",
    lambda r: f"const apiKeyHeader = 'X-Api-Key'; const tokenTtl = {r.randrange(9999)};",
    lambda r: f"Private-Lines are base64 in a .ppk file; see section {r.randrange(9)}.",
    lambda r: f"age-encryption.org/v1 -> X25519 {_pick(r, URLSAFE, 43)}",  # (a recipient stanza, public)
    lambda r: f"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY{_pick(r, ALNUM + '+/', 100)} me@host",
    lambda r: f"https://cdn.example.com/assets/app.{_pick(r, HEX, 20)}.js?v={r.randrange(999)}",
    lambda r: f"image: ghcr.io/org/app@sha256:{_pick(r, HEX, 64)}",
    lambda r: (
        f"workflow run {r.randrange(10**9)} finished in {r.randrange(999)} s on runner {_pick(r, LOWER_ALNUM, 10)}"
    ),
    lambda r: f"The word 'secret' appears {r.randrange(99)} times in the novel's {r.randrange(40)} chapters.",
    lambda r: f"redis-cli -a $REDIS_PASSWORD --no-auth-warning ping  # {r.randrange(99)}",
]
"""The held-back half's look-alikes: none of the tuning half's templates."""


def look_alikes_held_back(count: int = 600, seed: int = 47) -> list[str]:
    rng = random.Random(seed)
    return [HELD_BACK_LOOK_ALIKES[index % len(HELD_BACK_LOOK_ALIKES)](rng) for index in range(count)]
