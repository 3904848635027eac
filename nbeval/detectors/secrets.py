"""Regex suite for credentials and other security-sensitive strings.

Covers PEM private keys and certificates, well-known API key and token formats (OpenAI,
Anthropic, AWS, GitHub, GitLab, Slack, Google, Stripe), JSON Web Tokens and Windows-style
25-character product keys with patterns of ours, boundary-anchored so searches stay linear.
Token families covered by detect-secrets' plugins (Twilio, SendGrid, PyPI, Discord, Telegram,
Azure...) come from :mod:`nbeval.detectors.tokens`, and credentials written beside a name (URL
passwords, ``password = ...``, ``X-API-Key:`` headers) from :mod:`nbeval.detectors.credentials`.

To keep documentation snippets quiet, a token is only reported when its random part looks
random: mixed characters, enough distinct symbols, and none of the usual placeholder markers
(``xxxx``, ``your``, ``example``, ``1234567``...). The well-known AWS documentation keys are
placeholders by that rule (they contain ``EXAMPLE``).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable

from nbeval.detectors.credentials import CREDENTIAL_KINDS, find_credentials
from nbeval.detectors.findings import Finding, resolve_overlaps, summary
from nbeval.detectors.tokens import TOKEN_KINDS, find_tokens

__all__ = ["SECRET_KINDS", "find_secrets", "looks_random", "secrets_summary"]

# fmt: off
_PLACEHOLDER_MARKERS = (
    "xxxx", "your", "example", "placeholder", "dummy", "sample", "redacted", "changeme",
    "0000", "1234567", "abcdef", "...", "****", "<", ">",
)
# fmt: on


# "KEY_HERE", "key-here": "here" as a word of its own; inside random text ("eheReeR") it is chance.
_HERE = re.compile(r"(?:^|[^a-z0-9])here(?:[^a-z0-9]|$)")


def looks_random(body: str, *, min_distinct: int = 10, mixed_case: bool = False, need_digit: bool = True) -> bool:
    """Heuristic: ``body`` is plausibly machine-generated rather than a placeholder."""
    lowered = body.lower()
    if any(marker in lowered for marker in _PLACEHOLDER_MARKERS):
        return False
    if _HERE.search(lowered):
        return False
    if len(set(body)) < min_distinct:
        return False
    if need_digit and not any(c.isdigit() for c in body):
        return False
    if not any(c.isalpha() for c in body):
        return False
    return not mixed_case or (any(c.islower() for c in body) and any(c.isupper() for c in body))


# --- patterns --------------------------------------------------------------------------------

_PEM_HEADER = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?|(?:TRUSTED |X509 )?CERTIFICATE)-----")
# A real PEM body: optional "Name: value" header lines, then base64 text.
_PEM_MAX_BODY = 64 * 1024
_PEM_BODY = re.compile(r"\s*(?:[\w-]+:[^\n]*\n\s*){0,8}[A-Za-z0-9+/]{16}")

_TOKEN_END = r"(?![\w\-])"
_OPENAI = re.compile(r"(?<![\w\-])sk-((?:proj|svcacct|admin|None)-)?([A-Za-z0-9_\-]{20,200})" + _TOKEN_END)
_ANTHROPIC = re.compile(r"(?<![\w\-])sk-ant-[a-z]+\d{2}-([A-Za-z0-9_\-]{32,200})" + _TOKEN_END)
_AWS_KEY_ID = re.compile(r"(?<![A-Za-z0-9])((?:AKIA|ASIA)[A-Z0-9]{16})(?![A-Za-z0-9])")
_AWS_SECRET = re.compile(r"(?i:aws|secret)[\w.\-\"' ]{0,30}[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")
_GITHUB = re.compile(r"(?<![\w\-])(?:gh[pousr]_([A-Za-z0-9]{36,251})|github_pat_([A-Za-z0-9_]{50,240}))" + _TOKEN_END)
_GITLAB = re.compile(r"(?<![\w\-])glpat-([A-Za-z0-9_\-]{20,60})" + _TOKEN_END)
_SLACK = re.compile(r"(?<![\w\-])xox[abpr]-(\d{6,}-[A-Za-z0-9\-]{10,200})" + _TOKEN_END)
_GOOGLE = re.compile(r"(?<![\w\-])AIza([0-9A-Za-z_\-]{35})" + _TOKEN_END)
_STRIPE = re.compile(r"(?<![\w\-])(?:sk|rk)_live_([0-9A-Za-z]{24,99})" + _TOKEN_END)
_JWT = re.compile(
    r"(?<![\w\-.])(eyJ[A-Za-z0-9_\-]{8,})\.([A-Za-z0-9_\-]{8,})\.([A-Za-z0-9_\-]*)"
    r"(?![\w\-]|\.[A-Za-z0-9])"
)
_WINDOWS_KEY = re.compile(r"(?<![A-Za-z0-9\-])[A-Z0-9]{5}(?:-[A-Z0-9]{5}){4}(?![A-Za-z0-9\-])")
# Product keys avoid vowels and look-alike digits; N is allowed for newer keys.
_PRODUCT_KEY_ALPHABET = frozenset("BCDFGHJKMNPQRTVWXY2346789")
_ASSIGNMENT = re.compile(
    r"(?i:private[_\-]?key|secret[_\-]?key|client[_\-]?secret|api[_\-]?secret|auth[_\-]?token)"
    r"[\"']?\s*[:=]\s*[\"']([A-Za-z0-9+/_\-]{24,200})[\"']"
)

_PRIORITY = (
    "pem_private_key",
    "pem_certificate",
    "anthropic_key",
    "openai_key",
    "stripe_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "google_api_key",
    "aws_access_key_id",
    "aws_secret_key",
    "jwt",
    "windows_product_key",
    *TOKEN_KINDS,
    "private_key_assignment",
    "api_key_header",
    "url_credentials",
    "password_assignment",
    "api_key_assignment",
    "secret_assignment",
)

#: Every secret kind ``find_secrets`` reports.
SECRET_KINDS: tuple[str, ...] = tuple(sorted(_PRIORITY))
assert set(CREDENTIAL_KINDS) <= set(SECRET_KINDS)


# --- scanners --------------------------------------------------------------------------------


def _hidden(prefix: str, secret: str) -> str:
    return f"{prefix}****[{len(secret)} chars]"


def _pem(text: str) -> Iterable[Finding]:
    for m in _PEM_HEADER.finditer(text):
        label = m.group(1)
        if not _PEM_BODY.match(text, m.end()):
            continue  # "-----BEGIN PRIVATE KEY----- ... -----END" in docs has no body
        footer = f"-----END {label}-----"
        # Bounded look-ahead keeps many unterminated headers from costing quadratic time.
        stop = text.find(footer, m.end(), m.end() + _PEM_MAX_BODY)
        end = stop + len(footer) if stop >= 0 else m.end()
        kind = "pem_certificate" if label.endswith("CERTIFICATE") else "pem_private_key"
        yield Finding(kind, m.start(), end, f"-----BEGIN {label}----- [redacted]")


def _simple(
    text: str, pattern: re.Pattern[str], kind: str, prefix_len: int, **random_opts: object
) -> Iterable[Finding]:
    for m in pattern.finditer(text):
        body = next(g for g in reversed(m.groups()) if g) if m.groups() else m.group()
        if looks_random(body, **random_opts):  # type: ignore[arg-type]
            yield Finding(kind, m.start(), m.end(), _hidden(m.group()[:prefix_len], m.group()))


def _openai(text: str) -> Iterable[Finding]:
    for m in _OPENAI.finditer(text):
        body = m.group(2)
        if body.startswith("ant-") or not looks_random(body, mixed_case=True):
            continue
        prefix = "sk-" + (m.group(1) or "")
        yield Finding("openai_key", m.start(), m.end(), _hidden(prefix, m.group()))


def _jwts(text: str) -> Iterable[Finding]:
    for m in _JWT.finditer(text):
        header = m.group(1)
        try:
            decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
        except (binascii.Error, ValueError):
            continue
        if isinstance(decoded, dict) and "alg" in decoded:
            yield Finding("jwt", m.start(), m.end(), "eyJ****.****.****")


def _windows_keys(text: str) -> Iterable[Finding]:
    for m in _WINDOWS_KEY.finditer(text):
        groups = m.group().split("-")
        chars = "".join(groups)
        if not set(chars) <= _PRODUCT_KEY_ALPHABET:
            continue
        if any(len(set(g)) == 1 for g in groups) or len(set(chars)) < 10:
            continue
        if not (any(c.isdigit() for c in chars) and any(c.isalpha() for c in chars)):
            continue
        yield Finding("windows_product_key", m.start(), m.end(), "*****-" * 4 + groups[-1])


def _assignments(text: str) -> Iterable[Finding]:
    for m in _ASSIGNMENT.finditer(text):
        value = m.group(1)
        if not looks_random(value, min_distinct=12) or _is_base64_text(value):
            continue
        yield Finding("private_key_assignment", m.start(1), m.end(1), _hidden("", value))


def _is_base64_text(value: str) -> bool:
    """True when ``value`` is just ordinary text in base64 (not a key)."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return sum(c.isprintable() for c in decoded) >= 0.95 * len(decoded)


def find_secrets(text: str, *, kinds: Iterable[str] | None = None) -> list[Finding]:
    """Credential-like strings in ``text`` (all of :data:`SECRET_KINDS`, or only ``kinds``),
    sorted by position, values masked."""
    wanted = set(SECRET_KINDS if kinds is None else kinds)
    unknown = sorted(wanted - set(SECRET_KINDS))
    if unknown:
        msg = f"unknown secret kind {', '.join(map(repr, unknown))}; known kinds: {', '.join(SECRET_KINDS)}"
        raise ValueError(msg)
    found: list[Finding] = []
    found.extend(_pem(text))
    found.extend(_openai(text))
    found.extend(_simple(text, _ANTHROPIC, "anthropic_key", 7))
    found.extend(_simple(text, _AWS_KEY_ID, "aws_access_key_id", 4, min_distinct=8, need_digit=False))
    for m in _AWS_SECRET.finditer(text):
        value = m.group(1)
        if looks_random(value, mixed_case=True) and not _is_base64_text(value):
            found.append(Finding("aws_secret_key", m.start(1), m.end(1), _hidden("", value)))
    found.extend(_simple(text, _GITHUB, "github_token", 4))
    found.extend(_simple(text, _GITLAB, "gitlab_token", 6, need_digit=False))
    found.extend(_simple(text, _SLACK, "slack_token", 5))
    found.extend(_simple(text, _GOOGLE, "google_api_key", 4))
    found.extend(_simple(text, _STRIPE, "stripe_key", 8))
    found.extend(_jwts(text))
    found.extend(_windows_keys(text))
    found.extend(_assignments(text))
    found.extend(find_tokens(text, sorted(wanted & set(TOKEN_KINDS)), looks_random))
    found.extend(f for f in find_credentials(text) if not _is_base64_text(text[f.start : f.end]))
    # Overlaps are resolved over every kind first, so a narrowed search reports a value under
    # the same kind as a full one (an AWS secret is never re-labelled a password).
    return [f for f in resolve_overlaps(found, _PRIORITY) if f.kind in wanted]


def secrets_summary(findings: Iterable[Finding]) -> str:
    """Kinds and counts of ``findings``, never their values (same format as ``pii_summary``)."""
    return summary(findings)
