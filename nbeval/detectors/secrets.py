"""Regex suite for credentials and other security-sensitive strings.

Covers PEM private keys and certificates, well-known API key and token formats (OpenAI,
Anthropic, AWS, GitHub, Google, Stripe), JSON Web Tokens and Windows-style 25-character product
keys with patterns of ours, boundary-anchored so searches stay linear. GitLab and Slack tokens of
every type come from :mod:`nbeval.detectors.prefixed`, Azure storage keys and SAS signatures
from :mod:`nbeval.detectors.azure`, token families covered by detect-secrets' plugins (Twilio,
SendGrid, PyPI, Discord, Telegram...) from :mod:`nbeval.detectors.tokens`, and credentials
written beside a name (URL passwords, ``password = ...``, ``X-API-Key:`` headers) from
:mod:`nbeval.detectors.credentials`.

To keep documentation snippets quiet, a token is only reported when its random part looks
random: mixed characters, enough distinct symbols, and none of the usual placeholder markers
(``xxxx``, ``your``, ``example``, ``1234567``...). The well-known AWS documentation keys are
placeholders by that rule (they contain ``EXAMPLE``), and the keys Microsoft publishes for its
storage and Cosmos DB emulators are public (:data:`nbeval.detectors.azure.PUBLIC_KEYS`).

A JSON Web Token is reported when its header decodes to a JSON object with an ``"alg"``, signed
or not: an unsigned token (``alg: none``, empty or missing signature) still carries its claims
and is accepted by misconfigured servers, so it is as sensitive as a signed one. Without the
second dot (``header.payload``) the payload must decode to a JSON object too.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from typing import Any

from nbeval.detectors.azure import AZURE_KINDS, PUBLIC_KEYS, find_azure
from nbeval.detectors.credentials import CREDENTIAL_KINDS, find_credentials
from nbeval.detectors.findings import Finding, resolve_overlaps, summary
from nbeval.detectors.prefixed import find_gitlab_tokens, find_slack_tokens
from nbeval.detectors.tokens import TOKEN_KINDS, find_tokens
from nbeval.errors import BadParameter

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
_GOOGLE = re.compile(r"(?<![\w\-])AIza([0-9A-Za-z_\-]{35})" + _TOKEN_END)
_STRIPE = re.compile(r"(?<![\w\-])(?:sk|rk)_live_([0-9A-Za-z]{24,99})" + _TOKEN_END)
# header.payload.signature; the signature may be empty ("alg": "none") or missing with its dot.
# A header of pretty-printed JSON ('{\n  "alg"...') starts "ew" rather than "eyJ".
_JWT = re.compile(
    r"(?<![\w\-.])((?:eyJ|ew[A-Za-z0-9])[A-Za-z0-9_\-]{8,})\.([A-Za-z0-9_\-]{8,})(\.[A-Za-z0-9_\-]*)?"
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
    "slack_webhook",
    "google_api_key",
    "aws_access_key_id",
    "aws_secret_key",
    "jwt",
    "azure_storage_key",
    "azure_sas_token",
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
assert set(CREDENTIAL_KINDS) <= set(SECRET_KINDS) and set(AZURE_KINDS) <= set(SECRET_KINDS)


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


def _json_object(part: str) -> dict[str, Any] | None:
    """The JSON object a base64url part of a JWT encodes, or None."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError):
        return None
    return decoded if isinstance(decoded, dict) else None


def _jwts(text: str) -> Iterable[Finding]:
    for m in _JWT.finditer(text):
        header = _json_object(m.group(1))
        if header is None or "alg" not in header:
            continue
        if m.group(3) is None and _json_object(m.group(2)) is None:
            continue  # "eyJ....word": without its second dot, the payload must be claims
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


# Values that start like a token family of their own ("xoxp-", "glpat-", "ghp_"...): that family's
# detector judges them (a placeholder "xoxp-1234567890" is no password because it sits after a name).
_FAMILY_PREFIX = re.compile(
    r"(?:xox[a-z]-|xoxe\.|xapp-|gl(?:pat|oas|dt|rt|cbt|ptt|ft|imt|agent|soat|ffct)-|GR1348941|gh[pousr]_|"
    r"github_pat_|sk-[\w\-]{20}|[sr]k_live_|(?:AKIA|ASIA)[A-Z0-9]{16}|AIza|hf_[A-Za-z]{20}|npm_|pypi-|SG\.|"
    r"sq0csp-|eyJ[\w\-]{8,}\.)"
)


def _deferred(value: str) -> bool:
    """Tell whether a value beside a name is left to another check.

    True for base64 of plain text, or a value of a token family whose own detector decides.
    """
    return _is_base64_text(value) or _FAMILY_PREFIX.match(value) is not None


def find_secrets(text: str, *, kinds: Iterable[str] | None = None) -> list[Finding]:
    """Find credential-like strings in ``text``.

    All of :data:`SECRET_KINDS`, or only ``kinds``; sorted by position, values masked.
    """
    wanted = set(SECRET_KINDS if kinds is None else kinds)
    unknown = sorted(wanted - set(SECRET_KINDS))
    if unknown:
        msg = f"unknown secret kind {', '.join(map(repr, unknown))}; known kinds: {', '.join(SECRET_KINDS)}"
        raise BadParameter(msg)
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
    found.extend(find_gitlab_tokens(text, looks_random))
    found.extend(find_slack_tokens(text, looks_random))
    found.extend(_simple(text, _GOOGLE, "google_api_key", 4))
    found.extend(_simple(text, _STRIPE, "stripe_key", 8))
    found.extend(_jwts(text))
    found.extend(_windows_keys(text))
    found.extend(find_azure(text, looks_random))
    found.extend(_assignments(text))
    found.extend(find_tokens(text, sorted(wanted & set(TOKEN_KINDS)), looks_random))
    found.extend(f for f in find_credentials(text) if not _deferred(text[f.start : f.end]))
    # Overlaps are resolved over every kind first, so a narrowed search reports a value under
    # the same kind as a full one (an AWS secret is never re-labelled a password).
    kept = resolve_overlaps(found, _PRIORITY)
    return [f for f in kept if f.kind in wanted and not _public(text[f.start : f.end])]


def _public(value: str) -> bool:
    """True for a finding that holds a key published for everyone (an emulator's key)."""
    return any(key in value for key in PUBLIC_KEYS)


def secrets_summary(findings: Iterable[Finding]) -> str:
    """Kinds and counts of ``findings``, never their values (same format as ``pii_summary``)."""
    return summary(findings)
