"""How a credential is written where it is used, whatever its provider: assigned to a name that says
it is one (env files, shell, YAML, JSON, INI, TOML, code, subscripts, JSON inside JSON), a config's
name/value pair (Kubernetes and ECS env lists, .NET ``<add key= value=>``, XML elements, a call's two
strings), ``ENV NAME value`` and ``set -gx NAME value``, a command line's password, ``.netrc``, a
connection string or URL, an ``Authorization`` header, a signed URL, a sentence. A value is taken
when it looks generated (``random_looking``) or, where only a password can stand, when it is not a
placeholder (``readable_password``).
"""

from __future__ import annotations

from core.secrets.rules import Rule, make_rule, random_looking, readable_password

KEYWORD = (
    r"[A-Za-z0-9_.\-]*(?:api[_\-]?key|apikey|secret|token|passw(?:or)?d|passwd|pwd|auth[_\-]?key|"
    r"access[_\-]?key|private[_\-]?key|client[_\-]?secret|signing[_\-]?key|encryption[_\-]?key|credentials?|"
    r"[_.\-]key(?![a-z])|[_.\-]pat(?![a-z])|(?-i:(?<=[a-z0-9])Key)|(?-i:^KEY|(?<=[^A-Za-z0-9])KEY)(?![A-Za-z]))"
    r"[A-Za-z0-9_.\-]*"
)
"""A name that says it holds a secret: ``*_KEY``, ``apiKey``, ``client-key-data``, ``*_TOKEN``,
``*_SECRET``, ``PASSWORD``, ``credentials``, ``*_PAT``... (a word that merely holds ``key``, ``monkey``, is not)."""

NAME_REST = r"[A-Za-z0-9_.\-]*"
"""The rest of a name after the keyword found in it."""
ASSIGNED = NAME_REST + r"(?:\\?[\"'])?\]?\s{0,3}(?::=|=>|=|:)"
"""After a keyword: the rest of its name (its closing quote, JSON-escaped or not, and bracket), then
``=`` or ``:`` (an assignment, a key of a map, a subscript): a word in a sentence is not one."""

SECRET_WORDS = ("key", "secret", "token", "passw", "pwd", "credential", "_pat")
"""What such a name holds, looked for (in lower, upper and title case) before its pattern is run."""

CONNECTION_VALUE = r"('[^'\n]{3,200}'|\"[^\"\n]{3,200}\"|[^\s;&\"'\n]{3,200})"
"""A password's value in a connection string (quoted, or up to the next separator)."""


def written_rules() -> list[Rule]:
    """The rules of this module, in the order the finder runs them."""
    return [
        make_rule(
            "url-password",
            r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@\"'<>]{1,100}:([^\s@/\"'<>]{3,200})@[^\s/@\"'<>]",
            readable_password,
            anchors=("://",),
        ),
        make_rule(
            "connection-password",
            r"(?i)\b(?:host|server|user|uid|dbname|database|data source)\s*=[^\n]{0,300}?\b(?:password|pwd)\s*=\s*"
            + CONNECTION_VALUE,
            readable_password,
            keywords=("password", "pwd"),
        ),
        make_rule(
            "connection-password",
            r"(?i)\b(?:password|pwd)\s*=\s*"
            + CONNECTION_VALUE
            + r"(?=[^\n]{0,300}?\b(?:host|server|user|uid|dbname|database)\s*=)",
            readable_password,
            keywords=("password", "pwd"),
        ),
        make_rule(
            "authorization-header",
            r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+([A-Za-z0-9._~+/\-]{8,}=*)",
            keywords=("authorization",),
        ),
        # Any other scheme, or none (Linear's ``Authorization: lin_api_…``, FCM's ``key=…``): a value that
        # looks generated.
        make_rule(
            "authorization-header",
            r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:(?!bearer|basic|token)[A-Za-z][\w\-]{0,30}\s+|key=)?"
            r"([A-Za-z0-9._~+/:\-]{12,}=*)",
            random_looking,
            keywords=("authorization",),
        ),
        # A secret said in a sentence: "I set the token to …", "the key is …", "the api key for staging: …".
        make_rule(
            "said-secret",
            r"(?i)\b(?:api[ _\-]?)?(?:token|key|secret|password|passphrase|passcode|credentials?)\b"
            r"(?:\s+(?!is\b|was\b|to\b|as\b)[A-Za-z][\w\-]*){0,4}?"
            r"(?:\s+(?:is|was|to|as)|\s*[=:])\s+[\"'`]?([^\s\"'`,;)}\]\\]{15,}[^\s\"'`,;)}\].!?\\])",
            random_looking,
            keywords=("token", "key", "secret", "password", "passphrase", "passcode", "credential"),
        ),
        # -- command lines and files that hold a password --------------------------------------------
        # curl, wget, httpie, git... ``-u user:pass`` / ``--user user:pass`` (the password only).
        make_rule(
            "cli-password",
            r"(?<![\w\-])(?:-u|--user|--proxy-user)(?:=|\s+)[\"']?[^\s:\"'@]{1,100}:([^\s\"']{3,})",
            lambda value: readable_password(value) and not value.isdigit(),
            anchors=("-u", "--user", "--proxy-user"),
        ),
        # ``--password X``, ``--token=X``, ``--api-key X``...
        make_rule(
            "cli-password",
            r"(?<![\w\-])--(?:password|passwd|pass|token|api[_\-]?key|secret|client[_\-]secret|access[_\-]token|"
            r"auth[_\-]token|bearer[_\-]token)(?:=|\s+)[\"']?([^\s\"']{3,})",
            readable_password,
            anchors=("--pass", "--token", "--api", "--secret", "--client", "--access", "--auth", "--bearer"),
        ),
        # A database client's password: ``mysql -pX``, ``mongosh -p X``, ``sshpass -p X``, ``redis-cli -a X``.
        make_rule(
            "cli-password",
            r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb(?:-dump|-admin)?)\b[^\n|;&]{0,300}?\s-p([^\s\"'-][^\s\"']{2,})",
            readable_password,
            keywords=("mysql", "mariadb"),
        ),
        make_rule(
            "cli-password",
            r"\b(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|sshpass)\b[^\n|;&]{0,300}?\s"
            r"(?:-p|--password)(?:\s+|=)?[\"']?([^\s\"'-][^\s\"']{2,})",
            readable_password,
            keywords=("mongo", "sshpass"),
        ),
        # ``docker login -p X`` (``--password X`` is the rule above's).
        make_rule(
            "cli-password",
            r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm\s+registry)\s+login\b[^\n|;&]{0,300}?\s-p(?:\s+|=)?[\"']?"
            r"([^\s\"'-][^\s\"']{2,})",
            readable_password,
            keywords=("docker", "podman", "nerdctl", "buildah", "skopeo", "helm"),
        ),
        make_rule(
            "cli-password",
            r"\bredis-cli\b[^\n|;&]{0,300}?\s(?:-a|--pass)\s+[\"']?([^\s\"'-][^\s\"']{2,})",
            readable_password,
            anchors=("redis-cli",),
        ),
        # ``.netrc``: ``machine HOST login USER password PASS`` on one line or over several.
        make_rule(
            "netrc-password",
            r"\bmachine\s+\S+\s+(?:(?:login|account|port)\s+\S+\s+){1,3}password\s+(\S+)",
            readable_password,
            anchors=("machine",),
        ),
        # A cloud storage shared access signature (Azure SAS, signed URLs).
        make_rule(
            "sas-signature",
            r"[?&](?:sig|Signature|X-Goog-Signature|X-Amz-Signature)=([A-Za-z0-9%+/=_\-]{20,})",
            anchors=("sig=", "Signature="),
        ),
        # ``NAME=value``, ``name: value``, ``"name": "value"``, ``ENV["NAME"] = value``, ``[:name] = value``,
        # ``$env:NAME = value``, also JSON-escaped (``\\"name\\": \\"value\\"``).
        make_rule(
            "assigned-secret",
            r"(?i)(?<![A-Za-z0-9_.\-])(?:\\?[\"'])?:?" + KEYWORD + r"(?:\\?[\"'])?\]?\s*(?::=|=>|=|:)\s*"
            r"(?:\\?[\"'`]([^\"'`\s\\]{8,})|([^\s\"'`,;)}\]\\]{8,}))",
            random_looking,
            keywords=SECRET_WORDS,
            follows=ASSIGNED,
        ),
        # A config's name and value side by side, read at the name: Kubernetes' and ECS's ``name: X`` then
        # ``value: Y`` (YAML or JSON, also ``{"key": "X", "value": "Y"}``), .NET's ``<add key="X" value="Y" />``,
        # an XML element ``<apiKey>Y</apiKey>``, a call's or tuple's two strings (``define('X', 'Y')``).
        _read_at_name(r"[\"']?\s*(?:,\s*|\n[ \t\-]*)[\"']?value[\"']?\s*:", r"\s*[\"']?([^\s\"',}]{8,})", reach=200),
        _read_at_name(r"[\"']\s+value\s*=", r"\s*[\"']([^\"'\s]{8,})[\"']"),
        _read_at_name(r"(?:\s[^<>]*)?>", r"\s*([^<\s]{8,})\s*</", lead=r"(?<=<)"),
        _read_at_name(r"[\"']\s*,\s*[\"']", r"([^\"'\s]{8,})[\"']", lead=r"(?<=[\"'])"),
        # ``ENV NAME value``, ``ARG NAME value`` (Dockerfile), ``set -gx NAME value`` (fish), ``setenv NAME value``.
        make_rule(
            "assigned-secret",
            r"(?:(?<![\w\-])(?:ENV|ARG)|\bsetenv|\bset(?:\s+-[A-Za-z]+)+)\s+(?i:"
            + KEYWORD
            + r")\s+[\"']?([^\s\"'=]{8,})",
            random_looking,
            anchors=("ENV ", "ARG ", "setenv ", "set -"),
        ),
    ]


def _read_at_name(after_name: str, value: str, *, lead: str = "", reach: int = 0) -> Rule:
    """A rule read at a name that says it holds a secret (``KEYWORD``): what must follow the name
    (``after_name``, also its ``follows``), then the value, its group; ``lead``, a look-behind before
    the name (``<`` of an element, the quote of a string)."""
    return make_rule(
        "assigned-secret",
        r"(?i)" + lead + KEYWORD + after_name + value,
        random_looking,
        keywords=SECRET_WORDS,
        follows=NAME_REST + after_name,
        reach=reach,
    )
