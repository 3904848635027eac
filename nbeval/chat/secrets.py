"""Keeping secrets out of everything a run leaves behind.

A key can reach a judge through many channels: ``api_key=``, a header (``extra_headers`` in
``judge_params=``, ``default_headers`` in the judge settings), the user information of a base URL
(``https://user:key@host/v1``) or its query (``?api-key=...``). Each chat model registers the
secret values it is given, and the client registers the secret headers and parameters of every
request, with the process-wide registry here. :func:`redact` then replaces every registered value
(and, for error text, anything shaped like an API key) with ``***``; :func:`redact_params` gives
a copy of settings safe to show or store. Results, reports, reprs, logs, errors and the cache go
through these two functions.

A setting or header carries a secret when its name says so (:func:`is_secret_name`):
``Authorization``, ``api-key``, ``X-Api-Key``, anything with ``token``, ``secret``, ``password``,
``auth``, ``credential``, ``cookie`` or ``signature`` in it, or a word ending in ``key``.
Values shorter than :data:`MIN_SECRET_LENGTH` characters are masked in settings but not searched
for in free text (masking every ``test`` in every reply would do more harm than good).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "hash_secrets",
    "install_log_filter",
    "is_secret_name",
    "known_secrets",
    "redact",
    "redact_params",
    "redact_url",
    "register_secrets",
    "secrets_in",
    "secrets_in_params",
    "secrets_in_url",
]

#: What a secret value is replaced with wherever nbeval shows or stores it.
MASK = "***"
#: Shorter values are not searched for in free text (see the module's docstring).
MIN_SECRET_LENGTH = 6

_WORDS = ("token", "secret", "passw", "auth", "credential", "cookie", "signature")
_EXACT = frozenset({"sig", "pwd", "pass"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_AUTH_SCHEME = re.compile(r"^(?:bearer|basic|token|apikey|api-key|key|digest)\s+(\S+)$", re.IGNORECASE)
#: Shapes of well-known API keys, masked in error text even when nobody registered them.
_KEY_PATTERNS = re.compile(r"(sk-[A-Za-z0-9_\-*]{8,}|(?i:bearer)\s+[A-Za-z0-9_\-.=*]{8,}|hf_[A-Za-z0-9]{10,})")
_URL = re.compile(r"[a-z][a-z0-9+.\-]*://[^\s'\"<>]+", re.IGNORECASE)


def is_secret_name(name: Any) -> bool:
    """Whether a header, setting or query parameter called ``name`` carries a secret."""
    words = re.split(r"[^a-z0-9]+", _CAMEL.sub("_", str(name)).lower())
    return any(w in _EXACT or w.endswith("key") or any(s in w for s in _WORDS) for w in words if w)


class _Registry:
    """The secret values this process has been given (held in memory only, never written)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._ordered: tuple[str, ...] = ()

    def add(self, values: Iterable[str]) -> None:
        new = {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LENGTH}
        with self._lock:
            if new <= self._values:
                return
            self._values |= new
            # Longest first, so a value containing another is masked whole.
            self._ordered = tuple(sorted(self._values, key=len, reverse=True))

    def values(self) -> tuple[str, ...]:
        return self._ordered


_REGISTRY = _Registry()


def register_secrets(*values: str | None) -> None:
    """Register ``values`` as secrets of this process.

    For an ``Authorization``-style value, its credential part too: :func:`redact` masks them from
    now on.
    """
    _REGISTRY.add([x for v in values if isinstance(v, str) and v for x in _expand(v)])


def _expand(value: str) -> list[str]:
    out = [value, unquote(value)]
    m = _AUTH_SCHEME.match(value.strip())
    if m:
        cred = m.group(1)
        out.append(cred)
        try:  # Basic credentials: the password inside the base64 too
            user_pw = base64.b64decode(cred, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            user_pw = ""
        if ":" in user_pw:
            out += [user_pw, user_pw.split(":", 1)[1]]
    return out


def known_secrets() -> tuple[str, ...]:
    """The registered secret values, longest first."""
    return _REGISTRY.values()


def redact(text: str, secrets: Iterable[str | None] = (), *, patterns: bool = True) -> str:
    """``text`` with every registered secret (and ``secrets``) replaced by ``***``.

    ``patterns=True`` also masks anything shaped like an API key (``sk-...``, ``Bearer ...``,
    ``hf_...``) and the secrets in URLs: right for error messages and logs, wrong for a judge's
    reply (which may say "Bearer tokens are..."), so replies use ``patterns=False``.
    """
    if not isinstance(text, str) or not text:
        return text
    extra = [s for v in secrets if v for s in _expand(v) if len(s) >= 4]
    for s in sorted(extra, key=len, reverse=True) + list(_REGISTRY.values()):
        if s in text:
            text = text.replace(s, MASK)
    if patterns:
        text = _URL.sub(lambda m: _clean_url_in_text(m.group(0)), text)
        text = _KEY_PATTERNS.sub(MASK, text)
    return text


def _clean_url_in_text(url: str) -> str:
    try:
        parts = urlsplit(url)
        if parts.password is None and not any(is_secret_name(k) for k, _ in parse_qsl(parts.query)):
            return url
    except ValueError:
        return url
    return redact_url(url)


def redact_url(url: str | None) -> str:
    """``url`` without user information and secret query parameters.

    The secret parameters' values are registered as secrets; a trailing slash of the path is
    dropped.
    """
    if not url:
        return ""
    register_secrets(*secrets_in_url(url))
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port:
        host = f"{host}:{parts.port}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not is_secret_name(k)])
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), query, ""))


def secrets_in_url(url: str) -> list[str]:
    """The secrets a URL carries: its user information and its secret query values."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[str] = []
    if parts.password:
        found += [parts.password, f"{parts.username or ''}:{parts.password}"]
        raw = f"{unquote(parts.username or '')}:{unquote(parts.password)}"
        found.append(base64.b64encode(raw.encode()).decode())
    elif parts.username and len(parts.username) >= MIN_SECRET_LENGTH:
        found.append(parts.username)  # a token alone as user information
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if is_secret_name(k) and v]
    return found


def secrets_in(obj: Any, *, _name: str = "") -> list[str]:
    """Every secret value inside ``obj``.

    String values under secret names at any depth, and the secrets of URLs (user information, secret
    query values).
    """
    found: list[str] = []
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            found += secrets_in(v, _name=str(k))
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            found += secrets_in(v, _name=_name)
    elif isinstance(obj, str):
        if _name and is_secret_name(_name):
            found.append(obj)
        elif "://" in obj:
            found += secrets_in_url(obj)
    return found


#: Request options that carry headers or query parameters (the openai client's names and httpx's).
_HEADER_OPTIONS = ("extra_headers", "extra_query", "default_headers", "default_query", "headers", "params")


def secrets_in_params(params: Mapping[str, Any]) -> list[str]:
    """The secrets of one request's parameters.

    Secret headers and query parameters, and string parameters under secret names. Other parameters
    are not searched (a test case's ``key`` field passed to a function is not a secret).
    """
    found: list[str] = []
    for k, v in params.items():
        if k in _HEADER_OPTIONS and isinstance(v, Mapping):
            found += secrets_in(v)
        elif isinstance(v, str) and is_secret_name(k):
            found.append(v)
    return found


def redact_params(obj: Any) -> Any:
    """A copy of settings or parameters that is safe to show or store.

    String values under secret names become ``***``, URLs lose their user information and secret
    query values, and registered secrets are masked wherever they appear. The secrets found are
    registered.
    """
    register_secrets(*secrets_in(obj))
    return _redact_value(obj, "")


def _redact_value(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return {k: _redact_value(v, str(k)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_redact_value(v, name) for v in obj)
    if isinstance(obj, str):
        if name and is_secret_name(name):
            return MASK
        return redact_url(obj) if "://" in obj and secrets_in_url(obj) else redact(obj)
    return obj


def hash_secrets(obj: Any) -> Any:
    """A copy of ``obj`` with every secret replaced by a short hash of it.

    Each secret becomes a short SHA-256 of it: two keys stay apart (in a cache identity, say) while
    neither is readable.
    """
    if isinstance(obj, Mapping):
        return {
            k: _hash_value(v) if is_secret_name(k) and isinstance(v, str) else hash_secrets(v) for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return type(obj)(hash_secrets(v) for v in obj)
    if isinstance(obj, str) and "://" in obj and secrets_in_url(obj):
        return f"{redact_url(obj)}#{_hash_value(obj)}"
    return obj


def _hash_value(value: str) -> str:
    return "sha256:" + hashlib.sha256(("nbeval-secret:" + value).encode("utf-8")).hexdigest()[:16]


class _RedactingFilter(logging.Filter):
    """Masks registered secrets (and key-shaped strings, and URL credentials) in log records."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler to report
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        # A traceback logged with the record (openai 2 logs its HTTP status errors so) can hold the
        # request URL; formatters print exc_text as given, so the masked text replaces the exception.
        if record.exc_info and record.exc_info[0] is not None:
            text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text, record.exc_info = redact(text), None
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_FILTER = _RedactingFilter()
_LOG_ROOTS = ("openai", "httpx", "httpx2", "httpcore", "httpcore2", "urllib3", "transformers", "nbeval")


def install_log_filter() -> None:
    """Add the redacting filter to the loggers of the HTTP and model libraries (and nbeval's).

    A logger's filters see only its own records, so the filter goes on every logger of those
    libraries that exists now; call again after importing one (the chat models do).
    """
    manager = logging.Logger.manager
    names = [n for n in list(manager.loggerDict) if n.split(".")[0] in _LOG_ROOTS]
    for name in {*names, *_LOG_ROOTS}:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
