"""Passwords and keys written *next to a name*: in a URL, an assignment or an HTTP header.

Three shapes, each with its own kind:

* ``url_credentials``: the password of a URL's userinfo (``postgres://svc:pw@db.host/app``),
  read as RFC 3986 writes userinfo, so "&", "!", "$", "(", "=", "%40"... are part of it;
* ``password_assignment`` / ``api_key_assignment`` / ``secret_assignment``: a literal value
  given to a name from detect-secrets' keyword list (``password = "..."``, ``DB_PASSWORD=...``,
  YAML ``password: ...``, ``api_key: ...``, properties ``db.password=...``);
* ``api_key_header``: ``X-API-Key: ...`` or ``Authorization: Bearer ...``.

detect-secrets' own ``KeywordDetector`` reports anything after such a name, prose included
("password: see the vault"); a value here must look like a credential instead: no reference
to a variable or a call, no placeholder, a digit or symbol or mixed case, six characters or
more. Every pattern is bounded and line-local, so a scan stays linear in the text length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from nbeval.detectors.findings import Finding

__all__ = ["CREDENTIAL_KINDS", "find_credentials", "looks_like_credential"]

#: The kinds of credential :func:`find_credentials` reports.
CREDENTIAL_KINDS: tuple[str, ...] = (
    "api_key_assignment",
    "api_key_header",
    "password_assignment",
    "secret_assignment",
    "url_credentials",
)

# Values that stand for a credential without being one.
# fmt: off
_PLACEHOLDER_WORDS = frozenset({
    "password", "passwd", "pass", "pwd", "secret", "changeme", "change_me", "admin", "root", "user",
    "username", "test", "guest", "example", "none", "null", "nil", "true", "false", "undefined",
    "redacted", "hidden", "masked", "required", "optional", "string", "str", "your_password",
    "mypassword", "my_password", "password123", "secret123", "s3cr3t", "p@ssw0rd", "p@ssword",
    "hunter2", "letmein", "foobar", "foo", "bar", "token", "apikey", "api_key", "key", "value",
})
_PLACEHOLDER_MARKERS = (
    "xxx", "***", "...", "${", "$(", "{{", "}}", "<%", "%(", "your", "example", "placeholder", "dummy",
    "sample", "redacted", "changeme", "change_me", "change-me", "insecure", "insert", "replace", "here",
    "todo", "fixme",
    "env[", "environ", "getenv", "process.env", "secrets.", "vault:", "•",
)
# fmt: on


@cache
def _keyword_alternation() -> str:
    """detect-secrets' list of secret-sounding names, plus a few of ours, as one alternation."""
    from detect_secrets.plugins.keyword import DENYLIST  # imported on first use

    return "|".join((*DENYLIST, "access_?token", "auth_?token", "client_?secret", "token"))


@cache
def _assignment() -> re.Pattern[str]:
    # A name holding a keyword ("DB_PASSWORD", "db.password", "apiKey"), an assignment sign,
    # then a quoted value or a bare one up to the next space, quote or separator.
    return re.compile(
        r"(?i)(?<![\w.\-])(?P<name>[\w.\-]{0,40}?(?:" + _keyword_alternation() + r")[\w.\-]{0,20})"
        r"[\"'\]]{0,2}[ \t]*(?::=|=>|=(?!=)|:)[ \t]*"  # "==" compares, it does not assign
        r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\n]{1,200})(?P=q)|(?P<bare>[^\s\"'`,;]{1,200}))"
    )


_HEADER = re.compile(
    r"(?i)(?<![\w\-])(?:x-api-key|api-key|x-auth-token|authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?:bearer|token|apikey)[ \t]+)?(?P<value>[A-Za-z0-9._~+/=\-]{16,400})"
)
# The userinfo of a URL, "scheme://user:password@host", as RFC 3986 writes it: unreserved
# characters, percent-escapes and the sub-delimiters "!$&'()*+,;=", plus ":" in the password
# ("Tr0ub4dor&3xyz" is one password). "/", "?", "#", "[", "]", "@" and spaces never occur in it,
# so one match never spans two URLs, and its parts are bounded, so a scan stays linear.
_USERINFO_CHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})"
_URL_USERINFO = re.compile(
    rf"://(?P<user>{_USERINFO_CHAR}{{0,128}}):(?P<value>(?:{_USERINFO_CHAR}|:){{1,256}})@(?P<host>[\w.\-]+)"
)
# Names that hold something about a secret (its file, length, policy), not the secret itself.
_NOT_A_SECRET_NAME = re.compile(
    r"(?i)(?:file|path|dir|name|length|len|min|max|policy|hint|field|label|prompt|type|url|uri|_id|"
    r"expiry|expires|expiration|env|var|ref|version|arn|count|reset|manager|store|header|param|"
    r"question|strength|rotation|age|format|regex|pattern)$"
)
# Names of values that are public by design ("public_key", "publishableKey", "NEXT_PUBLIC_...")
# or are no credential ("csrf_token": a per-page anti-forgery value).
_PUBLIC_NAME = re.compile(r"(?i)public|publishable|csrf|xsrf")
# A value made of the words that describe it ("storageaccountkeybase64encoded", "mysecretkey").
_DESCRIPTIVE_WORDS = re.compile(r"key|token|secret|passw|base64|encoded|account|storage")
_NUMBERISH = re.compile(r"[\d.,:/\-]+")
_QUERY_STRING = re.compile(r"[\w.\-]{1,40}=[^&=\s]{0,200}(?:&[\w.\-]{1,40}=[^&=\s]{0,200}){1,20}")


def _placeholder(value: str) -> bool:
    lowered = value.lower()
    if lowered.strip("\"'`") in _PLACEHOLDER_WORDS:
        return True
    if any(marker in lowered for marker in _PLACEHOLDER_MARKERS):
        return True
    if lowered.startswith(("$", "<", "{", "[")) or lowered.endswith((">", "}", "]")):
        return True  # "$DB_PASS", "<password>", "{password}": a template, not a value
    if value.isalnum() and value.islower() and len(_DESCRIPTIVE_WORDS.findall(value)) >= 2:
        return True  # the value spells out what belongs there
    return len(set(lowered)) <= 2  # "aaaaaa", "------"


def looks_like_credential(value: str, *, quoted: bool) -> bool:
    """A value a person or a machine would use as a password or key, not prose or a reference."""
    if len(value) < 6 or _placeholder(value):
        return False
    if " " in value.strip():
        return False  # a quoted sentence
    if not quoted and re.fullmatch(r"[A-Za-z_][\w.]*\(?.*", value) and ("(" in value or "." in value):
        return False  # "settings.DB_PASSWORD", "get_password()": a reference or a call
    if not quoted and (re.fullmatch(r"[A-Z][A-Z0-9_]*", value) or re.fullmatch(r"[a-z]+(?:_[a-z]+)+:?", value)):
        return False  # "API_KEY", "confirm_password": the name of a constant or a variable
    if not quoted and value.startswith("!"):
        return False  # a YAML tag such as "!vault"
    if value.startswith(("/", "~", "./", "../", "http:", "https:", "file:", "@")):
        return False
    if _NUMBERISH.fullmatch(value) and not value.isdigit():
        return False  # "2024-01-31", "1.2.3", "12:30"
    if _QUERY_STRING.fullmatch(value):
        return False  # "st=2025-03-04&se=2025-04-04&sr=c": parameters, not one value
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed_case = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return has_digit or has_symbol or mixed_case


def _assignment_kind(name: str) -> str:
    lowered = name.lower()
    if any(w in lowered for w in ("pass", "pwd", "contrase")):
        return "password_assignment"
    if "secret" in lowered:
        return "secret_assignment"
    return "api_key_assignment"


def _hidden(value: str) -> str:
    return f"****[{len(value)} chars]"


def find_credentials(text: str) -> Iterable[Finding]:
    """Credentials written beside a name in ``text``; spans cover the value only."""
    for m in _URL_USERINFO.finditer(text):
        # The host decides nothing: "db.example.com" may stand in for a real host beside a real
        # password; the password itself must look like one (no placeholder, no variable).
        value = m.group("value")
        if not looks_like_credential(value, quoted=True):
            continue
        yield Finding("url_credentials", m.start("value"), m.end("value"), _hidden(value))
    for m in _HEADER.finditer(text):
        value = m.group("value")
        if looks_like_credential(value, quoted=True) and any(c.isdigit() for c in value):
            yield Finding("api_key_header", m.start("value"), m.end("value"), _hidden(value))
    for m in _assignment().finditer(text):
        name = m.group("name")
        if _NOT_A_SECRET_NAME.search(name.rstrip("\"'")) or _PUBLIC_NAME.search(name):
            continue
        quoted = m.group("quoted") is not None
        group = "quoted" if quoted else "bare"
        value = m.group(group)
        if looks_like_credential(value, quoted=quoted):
            yield Finding(_assignment_kind(name), m.start(group), m.end(group), _hidden(value))
