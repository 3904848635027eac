"""API tokens of services nbeval's own patterns do not cover, using detect-secrets' plugins.

Each detect-secrets ``RegexBasedDetector`` carries a ``denylist`` of compiled patterns; we run
those patterns over the whole text (to get spans, which ``analyze_line`` does not give), then
apply the checks that keep documentation quiet: the match must stand alone (no letter or digit
glued to it) and its random part must look random (:func:`nbeval.detectors.secrets.looks_random`
rejects ``xxxx``, ``your``, ``example``...). detect-secrets' entropy plugins are not used: on
answer-like text they flag hashes, UUIDs and base64 of plain words.

Patterns of our own sit beside them for families detect-secrets has no plugin for, or whose
plugin needs a surrounding file (an npm token outside ``.npmrc``).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from functools import cache

from nbeval.detectors.findings import Finding

__all__ = ["TOKEN_KINDS", "find_tokens"]

# kind -> "module:class" of the detect-secrets plugin whose denylist finds it.
_PLUGINS: dict[str, str] = {
    "twilio_key": "twilio:TwilioKeyDetector",
    "sendgrid_key": "sendgrid:SendGridDetector",
    "pypi_token": "pypi_token:PypiTokenDetector",
    "discord_token": "discord:DiscordBotTokenDetector",
    "telegram_token": "telegram_token:TelegramBotTokenDetector",
    "mailchimp_key": "mailchimp:MailchimpDetector",
    "square_oauth_secret": "square_oauth:SquareOAuthDetector",
}
# What may follow a plugin's match and still belong to the token. detect-secrets fixes the last
# segment of a Discord bot token at 27 characters; tokens issued since 2022 have 38, of which the
# plugin matches the first 27, so the rest is taken here before the boundary check.
_LONGER: dict[str, re.Pattern[str]] = {
    "discord_token": re.compile(r"[A-Za-z0-9_\-]{1,11}(?![A-Za-z0-9_\-])"),
}
# Families without a usable detect-secrets plugin.
_OWN: dict[str, re.Pattern[str]] = {
    "npm_token": re.compile(r"npm_[A-Za-z0-9]{36}"),
    "huggingface_token": re.compile(r"hf_[A-Za-z]{34}"),
    "azure_sas_key": re.compile(r"SharedAccessKey=([A-Za-z0-9+/]{42,44}={0,2})"),
}

#: The kinds of access token the token detector knows: detect-secrets' plugins and nbeval's own patterns.
TOKEN_KINDS: tuple[str, ...] = tuple(sorted({*_PLUGINS, *_OWN}))


@cache
def _patterns(kind: str) -> tuple[re.Pattern[str], ...]:
    if kind in _OWN:
        return (_OWN[kind],)
    module, cls = _PLUGINS[kind].split(":")
    plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)
    return tuple(plugin.denylist)


def _alone(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or after.isalnum() or before in "_-" or after in "_-")


def _body(value: str) -> str:
    """The random part of a token, after its fixed prefix ("SG.", "npm_", "AccountKey=")."""
    head = re.search(r"[._=:]|(?<=^AC)|(?<=^SK)", value[:12])
    return value[head.end() :] if head else value


def find_tokens(text: str, kinds: Iterable[str], looks_random: Callable[..., bool]) -> Iterable[Finding]:
    """Tokens of the given ``kinds`` in ``text``; ``looks_random`` judges their random part."""
    for kind in kinds:
        for pattern in _patterns(kind):
            for m in pattern.finditer(text):
                # A pattern with a group marks the token with it; the rest is context.
                group = next((i for i, g in enumerate(m.groups(), 1) if g), 0)
                start, end = m.span(group)
                longer = _LONGER.get(kind)
                tail = longer.match(text, end) if longer else None
                end = tail.end() if tail else end
                value = text[start:end]
                if not _alone(text, start, end) or not looks_random(_body(value), min_distinct=8, need_digit=False):
                    continue
                yield Finding(kind, start, end, f"{value[:3]}****[{len(value)} chars]")
