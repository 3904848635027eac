"""Token families that share a prefix scheme across many token types: GitLab and Slack.

GitLab prefixes every token it issues by type (``glpat-`` personal, project and group access
tokens, ``gldt-`` deploy, ``glrt-`` runner, ``glcbt-`` CI/CD job, ``glptt-`` pipeline trigger,
``gloas-`` OAuth application secrets, ``glsoat-`` SCIM, ``glffct-`` feature-flag clients,
``glft-`` feed, ``glimt-`` incoming mail, ``glagent-`` Kubernetes agent, ``GR1348941`` runner
registration...; see GitLab's "Token prefixes" table). An instance may put its own prefix in
front (``mycompany-glpat-``), and newer tokens are *routable*, with a ``.01.xxxxxxxxx`` suffix.
Slack does the same with ``xoxb-`` (bot), ``xoxp-`` (user), ``xoxa-``/``xoxr-`` (workspace
access and refresh), ``xoxs-``/``xoxo-`` (legacy), ``xoxe-`` and ``xoxe.xoxp-`` (configuration
and rotating tokens), ``xoxc-`` (the web client's session token, used with its ``xoxd-``
cookie) and ``xapp-`` (app-level). The ``xoxd-`` cookie and incoming-webhook URLs
(``https://hooks.slack.com/services/T…/B…/…``, also ``workflows/`` and ``triggers/``) grant
access on their own and are reported too.

A prefix alone proves little in documentation (``glpat-XXXXXXXX``, ``xoxb-your-token``), so the
random part must look random, be as long as its type makes it, and a Slack token must carry a
team or user number of six digits or more, as every issued one does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import unquote

from nbeval.detectors.findings import Finding

__all__ = ["find_gitlab_tokens", "find_slack_tokens"]

_GITLAB = re.compile(
    r"(?<![\w\-])(?:[A-Za-z0-9]{1,20}-)?"  # an instance prefix, "mycompany-glpat-..."
    r"(?:(?P<type>gl(?:pat|oas|dt|rtr|rt|cbt|ptt|ft|imt|agent|soat|ffct))-|(?P<rrt>GR1348941))"
    r"(?P<body>[\w\-]{20,1024})(?P<route>(?:\.[0-9a-z]{2})?\.[0-9a-z]{7,9})?(?![\w\-])"
)
# Shortest random part per token type where it is not 20 characters.
_GITLAB_MIN = {"glptt": 40, "gloas": 64, "glagent": 50, "glimt": 25}

# The web client's "d" cookie: URL-encoded base64, as browsers store it.
_SLACK_COOKIE = re.compile(r"(?<![\w\-.])xoxd-(?P<body>(?:[A-Za-z0-9+/=]|%[0-9A-Fa-f]{2}){40,600})(?![\w%+/=])")
_SLACK_WEBHOOK = re.compile(
    r"(?<![\w.])(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"(?P<path>[A-Za-z0-9_]{6,20}/[A-Za-z0-9_]{6,20}/(?:[A-Za-z0-9_]{1,20}/)?(?P<secret>[A-Za-z0-9_]{20,80}))(?![\w/])"
)
_SLACK = re.compile(
    r"(?<![\w\-.])(?P<prefix>xox[abposrec]|xoxe\.xox[bp]|xapp)-"
    r"(?P<body>(?:\d-)?[A-Za-z0-9]{6,250}(?:-[A-Za-z0-9]{1,250}){0,6})(?![\w\-])"
)


def _hidden(prefix: str, token: str) -> str:
    return f"{prefix}****[{len(token)} chars]"


def find_gitlab_tokens(text: str, looks_random: Callable[..., bool]) -> Iterable[Finding]:
    """GitLab tokens of every type in ``text``."""
    for m in _GITLAB.finditer(text):
        kind = m.group("type") or "GR1348941"
        body = m.group("body")
        if len(body) < _GITLAB_MIN.get(kind, 20) or not looks_random(body, need_digit=False):
            continue
        yield Finding("gitlab_token", m.start(), m.end(), _hidden(kind, m.group()))


def find_slack_tokens(text: str, looks_random: Callable[..., bool]) -> Iterable[Finding]:
    """Slack tokens of every prefix in ``text``."""
    for m in _SLACK.finditer(text):
        body = m.group("body")
        # The random part is the last segment; the others are versions and team or user ids.
        random_part = body.rsplit("-", 1)[-1]
        unversioned = body[2:] if body[1:2] == "-" else body  # "xoxe.xoxp-1-...": 1 is a version
        if len(body) < 14 or not any(c.isdigit() for c in unversioned):
            continue
        if not looks_random(random_part, min_distinct=6, need_digit=False):
            continue
        yield Finding("slack_token", m.start(), m.end(), _hidden(m.group("prefix"), m.group()))
    for m in _SLACK_COOKIE.finditer(text):
        if looks_random(unquote(m.group("body")), min_distinct=12, mixed_case=True, need_digit=False):
            yield Finding("slack_token", m.start(), m.end(), _hidden("xoxd", m.group()))
    for m in _SLACK_WEBHOOK.finditer(text):
        # Documentation writes "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX": the last part must look random.
        if looks_random(m.group("secret"), min_distinct=10, need_digit=False):
            yield Finding("slack_webhook", m.start(), m.end(), f"hooks.slack.com/****[{len(m.group('path'))} chars]")
