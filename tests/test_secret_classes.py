"""The kinds of secret a held-back corpus found leaking, each masked whole: credentials on command
lines and in ``.netrc``, ``*_KEY`` assignments, dotted and dashed tokens, a value however long, an
``Authorization`` header of any scheme or none, key blocks (age, PuTTY), kubeconfig's key data,
signed URLs; and the ways a config or a program writes one, whatever its provider (subscripts, JSON
inside JSON, name/value pairs, XML, a call's two strings, ``ENV NAME value``). And what only looks
like them stays."""

from __future__ import annotations

import pytest

from core.secrets.finder import find_secrets, mask_secrets

GENERATED = "Zx9Qw2Er7Ty4Ui1Op3As6Df8Gh0Jk5Lm"
H40 = "1130a5c4ea9ca6288ace9edccd9052019bde5ac4"
AGE = "AGE-SECRET-KEY-1" + "QYQSZQGPQ8QSZQGPQYQSZ3GPQYQSZQGPQYQS4QGPQYQSZQGPQY7SZQGPQY"
"""A value that looks generated (mixed case, digits, varied)."""


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # Command lines.
        ("curl -u admin:Sup3r-s3cret! https://api.example.com", "Sup3r-s3cret!"),
        ("curl --user 'deploy:hunter2-Xy' https://x", "hunter2-Xy"),
        ("wget --proxy-user=bob:pr0xyPass https://x", "pr0xyPass"),
        ("mysql -h db -u root -pS3cretDbPass shop", "S3cretDbPass"),
        ("mysqldump --single-transaction -u app -pAppPass123 app > dump.sql", "AppPass123"),
        ("mongosh -u admin -p M0ngoPass mydb", "M0ngoPass"),
        ("sshpass -p 'sshP4ss' ssh pi@host", "sshP4ss"),
        ("redis-cli -h cache -a r3disAuth ping", "r3disAuth"),
        ("docker login -u deploy -p d0ckerHubPass registry.example.com", "d0ckerHubPass"),
        ("podman login --username ci -p 'p0dmanPass' quay.io", "p0dmanPass"),
        ("gh api --token ghx9Qw2Er7Ty4Ui1Op3As6 /user", "ghx9Qw2Er7Ty4Ui1Op3As6"),
        ("tool login --password=correct-horse-battery", "correct-horse-battery"),
        ("vault login --api-key " + GENERATED, GENERATED),
        # .netrc, on one line or several.
        ("machine api.heroku.com login me@x.com password hk-9f8e7d6c5b4a", "hk-9f8e7d6c5b4a"),
        ("machine github.com\n  login octocat\n  password gh-n3tRc-Pass\n", "gh-n3tRc-Pass"),
        # Assignments of any *_KEY, dotted or dashed values.
        ("export GROQ_KEY=" + GENERATED, GENERATED),
        ("FIREBASE_KEY: " + GENERATED, GENERATED),
        ('{"apiKey": "' + GENERATED + '"}', GENERATED),
        ("DOPPLER_TOKEN=dp.st.prd." + GENERATED, "dp.st.prd." + GENERATED),
        ("VAULT_TOKEN=hvs." + GENERATED + "Ab", "hvs." + GENERATED + "Ab"),
        ("client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB", None),
        # A value however long (an AWS session token is ~900 characters).
        ("AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjE" + "Ab9Cd8Ef7Gh6" * 80, None),
        # Authorization of any scheme, or none.
        ("Authorization: lin_api_" + GENERATED, "lin_api_" + GENERATED),
        ("Authorization: key=AAAA" + GENERATED, "AAAA" + GENERATED),
        ("authorization: Bearer " + GENERATED, GENERATED),
        ("Authorization: SSWS 00" + GENERATED, "00" + GENERATED),
        # Key blocks and signatures.
        (AGE, AGE[:26]),
        (
            "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIGq3bXR5cHJpdmF0ZWtleWJvZHlleGFtcGxlMTIzNA==\n",
            "AAAAIGq3bXR5cHJpdmF0ZWtleWJvZHlleGFtcGxlMTIzNA==",
        ),
        (
            "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=Zx9Qw2Er7Ty4Ui1Op3As6Df8Gh0%3D",
            "Zx9Qw2Er7Ty4Ui1Op3As6Df8Gh0%3D",
        ),
    ],
)
def test_each_class_is_masked_whole(text: str, secret: str | None) -> None:
    found = find_secrets(text)
    assert found, text
    masked = mask_secrets(text).text
    if secret is None:  # (the value after the name or the marker, to its end)
        secret = text.split("=", 1)[1] if "=" in text else text.split(": ", 1)[1]
        secret = secret.strip()
    assert secret not in masked, masked
    # Nothing of it is left either side (masked whole, however long).
    assert not any(piece in masked for piece in (secret[:12], secret[-12:])), masked
    assert not any(piece in masked for piece in (text[found[0].start :][:12], text[: found[0].end][-12:]))
    assert "[redacted: " in masked


WRITTEN = [
    # Subscripts, symbols, PowerShell, JSON inside JSON.
    ('ENV["RAILWAY_TOKEN"] = "' + GENERATED + '"', GENERATED),
    ("os.environ['SERVICE_API_KEY'] = '" + GENERATED + "'", GENERATED),
    ("settings[:render_api_key] = '" + GENERATED + "'", GENERATED),
    ('$env:DB_PASSWORD = "GCifhAGRQQ^uvmTC"', "GCifhAGRQQ^uvmTC"),
    ('{"body": "{\\"hcloud_token\\":\\"' + GENERATED + '\\"}"}', GENERATED),
    # A config's name and value side by side.
    ("- name: SONAR_TOKEN\n  value: squ_" + H40 + "\n", "squ_" + H40),
    ('"env": [{"name": "PLAID_SECRET", "value": "' + GENERATED + '"}]', GENERATED),
    ('<add key="BoxDeveloperToken" value="' + GENERATED + '" />', GENERATED),
    ("<paypalClientSecret>" + GENERATED + "</paypalClientSecret>", GENERATED),
    ("define('SEGMENT_WRITE_KEY', '" + GENERATED + "');", GENERATED),
    # Dockerfile, fish, csh.
    ("ENV LINODE_TOKEN " + H40, H40),
    ("ARG NPM_TOKEN " + GENERATED, GENERATED),
    ("set -gx SNYK_TOKEN 5924f798-405a-44c1-aad2-d3d66bc54413", "5924f798-405a-44c1-aad2-d3d66bc54413"),
    ("setenv GITLAB_TOKEN " + GENERATED, GENERATED),
    # A personal access token's name, a base32 seed, a sentence with words between.
    ("AZURE_DEVOPS_EXT_PAT=pzsct9gjry1gwohk16oaei2gpn3akga3wowilpj9z2l0vzv13im0", None),
    ('{"name": "TOTP_SECRET", "value": "EBFGLF25FQK4WQBCZF7OPFAO65XIJXAT"}', "EBFGLF25FQK4WQBCZF7OPFAO65XIJXAT"),
    ("here's the api key for staging: " + GENERATED + " (rotate it after)", GENERATED),
]
"""How a config or a program writes a credential, whatever its provider."""


@pytest.mark.parametrize(("text", "secret"), WRITTEN)
def test_each_way_of_writing_one_is_masked(text: str, secret: str | None) -> None:
    test_each_class_is_masked_whole(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "docker run -u 1000:1000 image",
        "git push -u origin main",
        "mysql -u root -p shop",  # (-p alone: mysql asks for the password; shop is the database)
        "curl -u $USER:$API_TOKEN https://x",
        'curl --user "${USER}:${PASS}" https://x',
        "Authorization: required for every request",
        "the authorization: Bearer <token> header",
        "KEYBOARD=us",
        "monkey: banana-split-sundae",
        "primary_key: id",
        "SECRET_KEY_FALLBACKS = settings.OLD_SECRET_KEYS",
        "api_key = os.environ['OPENAI_API_KEY']",
        "A machine learning password policy requires rotation.",
        "version: 1.2.3.4567890123456789012",
        "token: my.dotted.config.value.name",
        "--password-stdin < file",
        "redis-cli -a $REDIS_PASSWORD",
        "docker login -u ci --password-stdin ghcr.io",
        "docker run -p 8080:80 -e LOGIN=1 nginx",
        # What configs and programs write beside their credentials.
        'ENV["API_KEY"] = ENV.fetch("FALLBACK_API_KEY")',
        "settings[:api_key] = credentials.dig(:stripe, :secret_key)",
        '$env:PATH = "C:\\tools\\bin;" + $env:PATH',
        "const organizationUrlKey = dashboardData?.organizationUrlKey;",
        "<ApiKey>{organizationUrlKey}</ApiKey>",
        "ENV NODE_ENV production",
        "set -gx EDITOR nvim",
        '{"name": "LOG_LEVEL", "value": "debug"}',
        "- name: API_TOKEN\n  valueFrom:\n    secretKeyRef:\n      name: app-secrets",
        '<add key="LogLevel" value="Information" />',
        "<password>${DB_PASSWORD}</password>",
        "define('DB_HOST', 'db.internal.example.com');",
        "define('AUTH_KEY', 'put your unique phrase here');",
        "Original token count: 1356",
        "the api key for staging is in the vault",
        "password_reset_url = '/account/password/reset?next=/home'",
    ],
)
def test_what_only_looks_like_one_stays(text: str) -> None:
    assert find_secrets(text) == [], [text[s.start : s.end] for s in find_secrets(text)]


# -- the field's vendor rules (Betterleaks') ----------------------------------------------------------

H64 = "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c2b4d6f8e0a1c3e5b7d9f1a3c5e7b9d2f"
WORDS = "Qm7xK2pL9vR4tY8wZ3nB6cD1fG5hJ0sA"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("GROQ=gsk_" + WORDS + "Ab3dE6gH9jK2mN5pQ8sT", "gsk_" + WORDS + "Ab3dE6gH9jK2mN5pQ8sT"),
        ("token dop_v1_" + H64, "dop_v1_" + H64),
        ("hf token: hf_" + "QmxKpLvRtYwZnBcDfGhJsAqWeRtYuIoPzX", "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"),
        ("use shpat_" + H64[:32] + " for the store", "shpat_" + H64[:32]),
        ("databricks: dapi" + H64[:32], "dapi" + H64[:32]),
        ("pulumi login with pul-" + H64[:40], "pul-" + H64[:40]),
        ("sentry sntryu_" + H64, "sntryu_" + H64),
        ("key xkeysib-" + H64 + "-" + WORDS[:16], "xkeysib-" + H64 + "-" + WORDS[:16]),
    ],
)
def test_vendors_named_by_the_field_s_rules_are_masked(text: str, secret: str) -> None:
    masked = mask_secrets(text).text
    assert secret not in masked and secret[-10:] not in masked and "[redacted: " in masked, masked


def test_go_expressions_read_as_python_and_filters_as_checks() -> None:
    from core.secrets.field_rules import _check, field_rules, python_pattern

    assert python_pattern("p8e-(?i)[a-z0-9]{32}") == "p8e-(?i:[a-z0-9]{32})"
    assert python_pattern("a(?i)b|c") == "a(?i:b)|c"
    assert python_pattern(r"(x(?i)y)z\z") == r"(x(?i:y))z\Z"
    assert python_pattern(r"pat[[:alnum:]]{14}") == "pat[A-Za-z0-9]{14}"
    check = _check('entropy(finding["secret"]) <= 3.0 || matchesAny(finding["secret"], [`^sk_live_a2V5Xz`])')
    assert check is not None and check("Zx9Qw2Er7Ty4Ui1Op3As6Df8")
    assert not check("aaaaaaaaaaaaaaaaaaaa") and not check("sk_live_a2V5XzQw2Er7Ty4Ui1Op3As6")
    assert _check('let x = finding["fragment_raw"]; x != ""') is None  # (a context check: the rule is left out)
    # Without Betterleaks (or its rules unreadable), our own rules stand alone.
    assert field_rules("") == [] and field_rules("not [[toml") == []
    toml = "[[rules]]\nid = 'x'\nregex = '''xq_[a-z]{8}'''\nkeywords = ['xq_']\nfilter = ''\n"
    (rule,) = field_rules(toml)
    assert rule.kind == "x" and [m.group() for m in rule.pattern.finditer("a xq_abcdefgh b")] == ["xq_abcdefgh"]
