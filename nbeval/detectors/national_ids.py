"""National identity and tax numbers, checked with ``python-stdnum``.

A regex of ours proposes a candidate in the usual written layout; the stdnum module of that
number then validates it (check digits, embedded dates, reserved ranges). The kind is the
stdnum module name, so it already names the country (``fr.nir``, ``pl.pesel``).

Some numbers are only a run of digits with one check digit (a random 11-digit order id passes
the PESEL check one time in ten). Those kinds are reported only after a word that names them
("PESEL", "BSN", "Steuer-ID"...) shortly before; the ones with a distinctive layout or a strong
check (``it.codicefiscale``, ``es.nie``, a dotted ``br.cpf``) are reported anywhere. stdnum has
no British National Insurance number, so ``gb.nino`` is checked by HMRC's prefix rules here.
Identifiers with letters are found in upper or lower case ("x9613851n"), never mixed.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from nbeval.detectors.findings import Finding

__all__ = ["NATIONAL_ID_KINDS", "find_national_ids"]


@dataclass(frozen=True)
class _IdRule:
    pattern: re.Pattern[str]
    validator: str | None  # stdnum module to call, None for our own check
    keywords: re.Pattern[str] | None  # required shortly before the number; None: not needed


def _words(*words: str) -> re.Pattern[str]:
    return re.compile(r"(?i)(?:" + "|".join(words) + r")[^\n]{0,64}$")


_B = r"(?<![\w.\-/])"
_E = r"(?![\w\-/]|[.,]\d)"
# fmt: off
_RULES: tuple[tuple[str, _IdRule], ...] = (
    ("it.codicefiscale", _IdRule(
        re.compile(_B + r"(?i:[A-Z]{6}[0-9LMNPQRSTUV]{2}[A-EHLMPR-T][0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{3}[A-Z])"
                   + _E),
        "it.codicefiscale", None)),
    ("es.nie", _IdRule(re.compile(_B + r"[XYZxyz]-?\d{7}-?[A-Za-z]" + _E), "es.nie", None)),
    # Numbers below 10,000,000 are often written without their leading zero ("1111111-G").
    ("es.dni", _IdRule(re.compile(_B + r"\d{7,8}-?[A-Za-z]" + _E), "es.dni", None)),
    ("fr.nir", _IdRule(
        re.compile(_B + r"[1278] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}" + _E), "fr.nir", None)),
    ("br.cpf", _IdRule(re.compile(_B + r"\d{3}\.\d{3}\.\d{3}-\d{2}" + _E), "br.cpf", None)),
    ("br.cpf", _IdRule(re.compile(_B + r"\d{11}" + _E), "br.cpf", _words(r"\bCPF\b"))),
    ("gb.nino", _IdRule(
        re.compile(_B + r"(?i:(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
                   r" ?\d{2} ?\d{2} ?\d{2} ?[A-D])" + _E),
        None, None)),
    ("de.idnr", _IdRule(re.compile(_B + r"\d{2} ?\d{3} ?\d{3} ?\d{3}" + _E), "de.idnr",
                        _words(r"steuer", r"\bIdNr\b", r"identifikationsnummer", r"\btax\s*(?:id|number)\b",
                               r"\bTIN\b"))),
    ("pl.pesel", _IdRule(re.compile(_B + r"\d{11}" + _E), "pl.pesel", _words(r"\bPESEL\b"))),
    ("nl.bsn", _IdRule(re.compile(_B + r"\d{4}\.?\d{2}\.?\d{3}" + _E), "nl.bsn",
                      _words(r"\bBSN\b", r"burgerservicenummer", r"sofi-?nummer"))),
    ("in.aadhaar", _IdRule(re.compile(_B + r"[2-9]\d{3} ?\d{4} ?\d{4}" + _E), "in.aadhaar",
                          _words(r"aadhaa?r", r"\bUIDAI?\b", r"आधार"))),
)
# fmt: on

#: The national identifier kinds this module reports.
NATIONAL_ID_KINDS: tuple[str, ...] = tuple(sorted({kind for kind, _ in _RULES}))


@cache
def _validator(name: str) -> object:
    return importlib.import_module(f"stdnum.{name.replace('in.', 'in_.')}")


# A compact lower-case NINO whose letters are all hex digits ("ce123456a") is more likely a hash.
_HEX_LETTERS = frozenset("abcdef")


def _valid(rule: _IdRule, value: str) -> bool:
    letters = [c for c in value if c.isalpha()]
    if not (all(c.isupper() for c in letters) or all(c.islower() for c in letters)):
        return False  # one case throughout: "x9613851n" or "X9613851N", not "x9613851N"
    if rule.validator is None:  # gb.nino: the pattern already carries every rule HMRC publishes
        return " " in value or not (value.islower() and set(letters) <= _HEX_LETTERS)
    if rule.validator == "es.dni" and len(value.replace("-", "")) == 8:
        value = "0" + value  # the leading zero left out
    return bool(_validator(rule.validator).is_valid(value))  # type: ignore[attr-defined]


def _redact(value: str) -> str:
    return "*" * (len(value) - 2) + value[-2:]


def find_national_ids(text: str, kinds: Iterable[str] = NATIONAL_ID_KINDS) -> Iterable[Finding]:
    """National identifiers of the given ``kinds`` in ``text`` (overlaps not yet resolved)."""
    wanted = set(kinds)
    for kind, rule in _RULES:
        if kind not in wanted:
            continue
        for m in rule.pattern.finditer(text):
            if rule.keywords is not None and not rule.keywords.search(text, max(0, m.start() - 96), m.start()):
                continue
            if _valid(rule, m.group()):
                yield Finding(kind, m.start(), m.end(), _redact(m.group()))
