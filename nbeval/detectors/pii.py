"""Regex suite for formatted personal data (PII) in free text.

Each pattern here is ours and anchored on a character-class boundary, so a search is linear in
the text length. A regex only proposes a candidate; each kind then has a structural check that
removes most look-alikes: Luhn and issuer ranges for cards, the full ISO 13616 registry of
``python-stdnum`` for IBANs, SSN block rules, address ranges. Phone numbers come from
:mod:`nbeval.detectors.phones` (Google's numbering plans) and national identifiers from
:mod:`nbeval.detectors.national_ids` (``python-stdnum``).

Decisions worth knowing:

* E-mail addresses on documentation domains (``example.com/.org/.net``, any ``example.<tld>``
  and the reserved ``.test``, ``.invalid``, ``.localhost``, ``.example`` top-level domains) are
  not reported. Internationalised addresses are (Unicode or punycode domains, Unicode local
  parts).
* Card numbers follow the issuer ranges and lengths of the networks in use (13-digit Visa,
  15-digit UATP and older JCB, Maestro from 12 to 19 digits...) and must pass Luhn; a bare run
  of digits after "order", "invoice", "EAN", "IMEI"... is a reference, not a card.
* IBANs may be written in lower case and grouped with spaces or dashes; US SSNs with dashes,
  spaces or dots, or as nine bare digits shortly after "SSN" or "social security".
* Only globally routable IP addresses are PII. Private, loopback, link-local, documentation,
  multicast and reserved ranges are skipped unless ``include_private_ip=True``.
* The userinfo of a URL (``postgres://svc:pw@db.host``) is a credential, reported by
  ``find_secrets``; it is never an e-mail address here.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from nbeval.detectors.findings import Finding, mask_digits, resolve_overlaps, summary
from nbeval.detectors.national_ids import NATIONAL_ID_KINDS, find_national_ids
from nbeval.detectors.phones import DEFAULT_PHONE_REGIONS, find_phones
from nbeval.errors import BadParameter

__all__ = [
    "PII_KINDS",
    "Finding",
    "find_pii",
    "iban_valid",
    "luhn_valid",
    "pii_summary",
    "resolve_overlaps",
    "ssn_valid",
]


# --- checksums and validity rules -------------------------------------------------------------


def luhn_valid(number: str) -> bool:
    """True when the digits of ``number`` (other characters ignored) pass the Luhn check."""
    digits = "".join(c for c in number if c.isdigit())
    return len(digits) >= 2 and bool(_stdnum("luhn").is_valid(digits))


@cache
def _stdnum(name: str) -> Any:
    import importlib  # python-stdnum is imported on first use only

    return importlib.import_module(f"stdnum.{name}")


@cache
def _iban_lengths() -> dict[str, int]:
    """IBAN length per country, from python-stdnum's copy of the ISO 13616 registry."""
    lengths = {}
    for _, country, _, info, _ in _stdnum("numdb").get("iban").prefixes:
        blocks = re.findall(r"(\d+)!", info.get("bban", ""))
        lengths[country] = 4 + sum(int(b) for b in blocks)
    return lengths


def iban_valid(iban: str) -> bool:
    """Check an IBAN's country, length, layout and mod-97 checksum.

    True when ``iban`` (spaces or dashes allowed, upper or lower case) has a registered country,
    that country's length and layout, and a mod-97 of 1. National check digits inside the BBAN are
    not checked: banks differ in how strictly they follow them, and mod-97 already rejects 96
    look-alikes in 97.
    """
    compact = iban.replace(" ", "").replace("-", "").upper()
    if not compact.isascii() or _iban_lengths().get(compact[:2]) != len(compact):
        return False
    try:
        _stdnum("iban").validate(compact, check_country=False)
    except ValueError:  # stdnum's ValidationError derives from ValueError
        return False
    return True


def ssn_valid(area: str, group: str, serial: str) -> bool:
    """True for an SSN the SSA could issue: area not 000/666/9xx, group not 00, serial not 0000."""
    if area in ("000", "666") or area.startswith("9"):
        return False
    return group != "00" and serial != "0000"


# (lowest prefix, highest prefix, allowed lengths) of card networks in use, after the ranges
# of Braintree's credit-card-type and ISO/IEC 7812 (a leading 1 is UATP, airline cards).
_CARD_ISSUERS: tuple[tuple[str, str, frozenset[int]], ...] = (
    ("4", "4", frozenset({13, 16, 19})),  # Visa (13 digits on older cards)
    ("1", "1", frozenset({15})),  # UATP
    ("1800", "1800", frozenset({15, 16, 17, 18, 19})),  # JCB (15 digits on older cards)
    ("2131", "2131", frozenset({15, 16, 17, 18, 19})),
    ("51", "55", frozenset({16})),  # Mastercard
    ("2221", "2720", frozenset({16})),  # Mastercard 2-series
    ("34", "34", frozenset({15})),  # American Express
    ("37", "37", frozenset({15})),
    ("300", "305", frozenset({14, 16})),  # Diners Club
    ("36", "36", frozenset({14, 16})),
    ("38", "39", frozenset({14, 16})),
    ("35", "35", frozenset({16, 17, 18, 19})),  # JCB (3528-3589 in use; the rest of 35 reserved for it)
    ("6011", "6011", frozenset({16, 19})),  # Discover
    ("644", "649", frozenset({16, 19})),
    ("65", "65", frozenset({16, 19})),
    ("62", "62", frozenset({16, 17, 18, 19})),  # UnionPay
    ("2200", "2204", frozenset({16, 17, 18, 19})),  # Mir
    ("5018", "5018", frozenset({16, 18, 19})),  # Maestro
    ("5020", "5020", frozenset({16, 18, 19})),
    ("5038", "5038", frozenset({16, 18, 19})),
    ("6304", "6304", frozenset({16, 18, 19})),
    ("6759", "6763", frozenset({16, 18, 19})),
    # Maestro numbers run from 12 to 19 digits in the ranges 50 and 56-69.
    ("50", "50", frozenset(range(12, 20))),
    ("56", "69", frozenset(range(12, 20))),
    ("81", "82", frozenset({16, 17, 18, 19})),  # UnionPay, RuPay
    ("9792", "9792", frozenset({16})),  # Troy
)


def _issuer_plausible(digits: str) -> bool:
    return any(lo <= digits[: len(lo)] <= hi and len(digits) in lengths for lo, hi, lengths in _CARD_ISSUERS)


# --- candidate patterns ----------------------------------------------------------------------

# Internationalised addresses too: Unicode letters in the local part and the domain
# ("用户@例子.广告", "राम@मोहन.ईन्फो": the marks of Indic and Thai scripts are not \w in Python),
# and punycode labels ("a@xn--d1acufc.xn--p1ai").
_W = r"\w\u0300-\u036f\u0900-\u0dff\u0e00-\u0e7f"
_EMAIL = re.compile(
    rf"(?<![{_W}.%+\-@])((?!_)[{_W}][{_W}.%+\-]{{0,63}})@"
    rf"((?:(?![_\-])[{_W}\-]{{1,63}}\.)+((?:(?![\d_])[{_W}]){{2,24}}|xn--[A-Za-z0-9]{{2,59}}))"
    rf"(?![{_W}\-@(]|\.[{_W}])"
)
_DOC_DOMAINS = ("example.com", "example.org", "example.net")
# "example.tld", "example.co.uk": a domain whose first label is "example" is a stand-in too.
_EXAMPLE_LABEL = re.compile(r"(?:^|\.)example\.[a-z]{2,6}(?:\.[a-z]{2})?$")
_DOC_TLDS = frozenset({"test", "invalid", "localhost", "example"})
# "logo@2x.png" is an asset name, not an address.
_FILE_TLDS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "ico", "pdf"})

_CARD = re.compile(r"(?<![\w.,+\-])\d(?:[ \-]?\d){11,18}(?![\w\-]|[.,]\d)")
# A bare digit run passed to a call or named as a seed is a parameter, not a card.
_CODE_BEFORE = re.compile(r"(?i)(?:\w\(|(?:seed|random_state)\W{0,3})$")
# A bare digit run after these words is a reference or a product code, not a card.
_REFERENCE_BEFORE = re.compile(
    r"(?i)\b(?:order|invoice|ref(?:erence)?|ticket|case|tracking|isbn|issn|ean|upc|gtin|imei|sku|"
    r"serial|build|commit|po|id)\b(?:\s*(?:no\.?|number|#))?[\s.:#\-]{0,4}$"
)
_SSN = re.compile(r"(?<![\w.\-])(\d{3})([\- .])(\d{2})\2(\d{4})(?![\w\-]|[.,]\d)")
# Nine bare digits are an SSN only shortly after a word that names one.
_BARE_SSN = re.compile(r"(?<![\w.\-])(\d{3})(\d{2})(\d{4})(?![\w\-]|[.,]\d)")
_SSN_WORDS = re.compile(r"(?i)(?:\bSSNs?\b|social\s+security)[^\n\d]{0,40}$")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ \-]?[A-Za-z0-9]){11,30}")
# A trailing "/24" makes it a network prefix, not somebody's address.
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w/]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:/])")
# Dotted quads after these words are version or section numbers, not hosts.
_NOT_AN_ADDRESS_BEFORE = re.compile(
    r"(?i)\b(?:versions?|ver\.?|releases?|build|rev\.?|(?:sub)?sections?|sec\.|chapters?|"
    r"ch\.|steps?|figures?|fig\.|tables?|rules?|clauses?|articles?|art\.|paragraphs?|para\.)"
    r"[\s:#\-]*$|§\s*$|version\w*\W{0,5}$|[=<>~!]=\s*$"
)

#: Every PII kind ``find_pii`` reports.
PII_KINDS: tuple[str, ...] = ("credit_card", "email", "iban", "ip_address", "phone", "us_ssn", *NATIONAL_ID_KINDS)

# Overlapping candidates keep the more specific kind.
_PRIORITY = ("iban", "credit_card", "email", "us_ssn", *NATIONAL_ID_KINDS, "ip_address", "phone")
# The text just before an address that makes it the userinfo of a URL ("https://svc:pw@").
_URL_USERINFO_BEFORE = re.compile(r"://[^\s/@]*$")


# --- per-kind scanners -----------------------------------------------------------------------


def _emails(text: str) -> Iterable[Finding]:
    for m in _EMAIL.finditer(text):
        local, domain, tld = m.group(1), m.group(2).lower(), m.group(3).lower()
        if domain in _DOC_DOMAINS or domain.endswith(tuple("." + d for d in _DOC_DOMAINS)):
            continue
        if _EXAMPLE_LABEL.search(domain):
            continue
        if tld in _DOC_TLDS or tld in _FILE_TLDS:
            continue
        after = text[m.end() : m.end() + 2]
        if after[:1] == ":" and after[1:2].strip():
            continue  # scp-style "git@host:org/repo", a login rather than an address
        if _URL_USERINFO_BEFORE.search(text, max(0, m.start() - 256), m.start()):
            continue  # "postgres://svc:pw@db.host": a credential, reported by find_secrets
        yield Finding("email", m.start(), m.end(), f"{local[0]}***@{domain[0]}***.{tld}")


def _cards(text: str) -> Iterable[Finding]:
    for m in _CARD.finditer(text):
        raw = m.group()
        seps = {c for c in raw if not c.isdigit()}
        if len(seps) > 1:
            continue
        groups = re.split(r"[ \-]", raw)
        if seps and not _card_grouping_ok([len(g) for g in groups]):
            continue
        digits = "".join(groups)
        if not (_issuer_plausible(digits) and luhn_valid(digits)):
            continue
        if not seps and (
            _CODE_BEFORE.search(text, max(0, m.start() - 24), m.start())
            or _REFERENCE_BEFORE.search(text, max(0, m.start() - 24), m.start())
        ):
            continue
        yield Finding("credit_card", m.start(), m.end(), mask_digits(raw, 4))


def _card_grouping_ok(sizes: list[int]) -> bool:
    if sizes in ([4, 6, 5], [4, 6, 4]):  # Amex and Diners layouts
        return True
    # 4-4-4-4(-3) for most cards; 4-4-4 and 4-4-4-1.. for the short Maestro numbers.
    return all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4 and len(sizes) >= 3


def _ssns(text: str) -> Iterable[Finding]:
    for m in _SSN.finditer(text):
        if ssn_valid(m.group(1), m.group(3), m.group(4)):
            sep = m.group(2)
            yield Finding("us_ssn", m.start(), m.end(), f"***{sep}**{sep}{m.group(4)}")
    for m in _BARE_SSN.finditer(text):
        if ssn_valid(*m.groups()) and _SSN_WORDS.search(text, max(0, m.start() - 64), m.start()):
            yield Finding("us_ssn", m.start(), m.end(), f"*****{m.group(3)}")


def _ibans(text: str) -> Iterable[Finding]:
    pos = 0
    while (m := _IBAN.search(text, pos)) is not None:
        pos = m.start() + 1  # the greedy run may hide the start of the next IBAN
        expected = _iban_lengths().get(m.group()[:2].upper())
        end = _iban_end(text, m.start(), m.end(), expected) if expected else None
        if end is None or (end < len(text) and text[end].isalnum()):
            continue
        value = text[m.start() : end]
        letters = [c for c in value if c.isalpha()]
        if not (all(c.isupper() for c in letters) or all(c.islower() for c in letters)):
            continue  # "GI75 aWBK ...": one case throughout, as people and banks write them
        if len({c for c in value if c in " -"}) <= 1 and iban_valid(value):
            pos = end
            compact = value.replace(" ", "").replace("-", "").upper()
            masked = compact[:2] + "*" * (len(compact) - 6) + compact[-4:]
            yield Finding("iban", m.start(), end, masked, compact[:2])


def _iban_end(text: str, start: int, stop: int, length: int) -> int | None:
    """Return the end offset after ``length`` characters other than separators from ``start``.

    The greedy match may have swallowed a following capitalised word, so the registry length decides
    the cut.
    """
    count = 0
    for i in range(start, stop):
        if text[i] not in " -":
            count += 1
            if count == length:
                return i + 1
    return None


def _ips(text: str, include_private: bool) -> Iterable[Finding]:
    for m in _IPV4.finditer(text):
        parts = m.group().split(".")
        if any(len(p) > 1 and p[0] == "0" for p in parts) or any(int(p) > 255 for p in parts):
            continue
        if parts[3] in ("0", "255"):
            continue  # network and broadcast addresses; "1.0.0.0" is usually a version
        if _NOT_AN_ADDRESS_BEFORE.search(text, max(0, m.start() - 14), m.start()):
            continue
        if _ip_reportable(m.group(), include_private):
            yield Finding("ip_address", m.start(), m.end(), parts[0] + ".*.*.*")
    for m in _IPV6.finditer(text):
        if m.group().count(":") < 2 or not _ip_reportable(m.group(), include_private):
            continue
        yield Finding("ip_address", m.start(), m.end(), m.group().split(":")[0] + ":****")


def _ip_reportable(value: str, include_private: bool) -> bool:
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        return False
    if addr.is_unspecified or addr.is_multicast:
        return False
    return include_private or (addr.is_global and not addr.is_reserved)


# --- public entry points ---------------------------------------------------------------------


def find_pii(
    text: str,
    *,
    include_private_ip: bool = False,
    kinds: Iterable[str] | None = None,
    regions: Sequence[str] = DEFAULT_PHONE_REGIONS,
) -> list[Finding]:
    """Formatted PII in ``text``, sorted by position, values masked in ``Finding.redacted``.

    ``kinds`` limits the search to some of :data:`PII_KINDS` (all by default); ``regions`` are
    the countries whose national phone formats are searched (international ones always are).
    """
    wanted = set(PII_KINDS if kinds is None else kinds)
    unknown = sorted(wanted - set(PII_KINDS))
    if unknown:
        msg = f"unknown PII kind {', '.join(map(repr, unknown))}; known kinds: {', '.join(PII_KINDS)}"
        raise BadParameter(msg)
    found: list[Finding] = []
    if "email" in wanted:
        found.extend(_emails(text))
    if "credit_card" in wanted:
        found.extend(_cards(text))
    if "us_ssn" in wanted:
        found.extend(_ssns(text))
    if "iban" in wanted:
        found.extend(_ibans(text))
    if "ip_address" in wanted:
        found.extend(_ips(text, include_private_ip))
    found.extend(find_national_ids(text, wanted & set(NATIONAL_ID_KINDS)))
    if "phone" in wanted:  # last: every other kind outranks a phone (see _PRIORITY)
        found.extend(find_phones(text, regions, outranked=[(f.start, f.end) for f in found]))
    return resolve_overlaps(found, _PRIORITY)


def pii_summary(findings: Iterable[Finding]) -> str:
    """Summarise findings in one line: each kind found and how often, never the values themselves.

    For example ``found: credit_card (1), email (2)``.
    """
    return summary(findings)
