"""Regex suite for formatted personal data (PII) in free text.

Every pattern here is written by us and anchored on a character-class boundary, so a search is
linear in the text length. A regex only proposes a candidate; each kind then has a structural
check (Luhn, mod-97, SSN block rules, address ranges) that removes most look-alikes.

Decisions worth knowing:

* E-mail addresses on documentation domains (``example.com/.org/.net`` and the reserved
  ``.test``, ``.invalid``, ``.localhost``, ``.example`` top-level domains) are not reported.
* Only globally routable IP addresses are PII. Private, loopback, link-local, documentation,
  multicast and reserved ranges are skipped unless ``include_private_ip=True``.
* Phone numbers need an explicit ``+`` country code or North-American grouping with separators;
  a bare run of ten digits is ambiguous (order ids, timestamps) and is not reported.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Finding",
    "find_pii",
    "iban_valid",
    "luhn_valid",
    "pii_summary",
    "resolve_overlaps",
    "ssn_valid",
]


@dataclass(frozen=True)
class Finding:
    """One detected item: its kind, its span in the text and a masked rendering of it."""

    kind: str
    start: int
    end: int
    redacted: str


# --- checksums and validity rules -------------------------------------------------------------


def luhn_valid(number: str) -> bool:
    """True when the digits of ``number`` (other characters ignored) pass the Luhn check."""
    digits = [int(c) for c in number if c.isdigit()]
    if len(digits) < 2:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


# Registered IBAN lengths per country (ISO 13616 registry); unknown countries are not reported.
# fmt: off
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}
# fmt: on


def iban_valid(iban: str) -> bool:
    """True when ``iban`` (spaces allowed) has a known country, its length and a mod-97 of 1."""
    compact = iban.replace(" ", "").upper()
    if _IBAN_LENGTHS.get(compact[:2]) != len(compact) or not compact[2:4].isdigit():
        return False
    if not compact.isalnum() or not compact.isascii():
        return False
    moved = compact[4:] + compact[:4]
    # Letters become two-digit numbers A=10 .. Z=35; int(c, 36) does exactly that.
    numeric = "".join(str(int(c, 36)) for c in moved)
    return int(numeric) % 97 == 1


def ssn_valid(area: str, group: str, serial: str) -> bool:
    """True for an SSN the SSA could issue: area not 000/666/9xx, group not 00, serial not 0000."""
    if area in ("000", "666") or area.startswith("9"):
        return False
    return group != "00" and serial != "0000"


# (lowest prefix, highest prefix, allowed lengths) of card networks in use. Visa stopped
# issuing 13-digit numbers long ago, and bare 13-digit runs are mostly ids and timestamps.
_CARD_ISSUERS: tuple[tuple[str, str, frozenset[int]], ...] = (
    ("4", "4", frozenset({16, 19})),  # Visa
    ("51", "55", frozenset({16})),  # Mastercard
    ("2221", "2720", frozenset({16})),  # Mastercard 2-series
    ("34", "34", frozenset({15})),  # American Express
    ("37", "37", frozenset({15})),
    ("300", "305", frozenset({14, 16})),  # Diners Club
    ("36", "36", frozenset({14, 16})),
    ("38", "39", frozenset({16})),
    ("3528", "3589", frozenset({16, 17, 18, 19})),  # JCB
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
)


def _issuer_plausible(digits: str) -> bool:
    return any(lo <= digits[: len(lo)] <= hi and len(digits) in lengths for lo, hi, lengths in _CARD_ISSUERS)


# --- candidate patterns ----------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![\w.%+\-@])([A-Za-z0-9][A-Za-z0-9._%+\-]{0,63})@"
    r"((?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+([A-Za-z]{2,24}))"
    r"(?![\w\-@(]|\.[A-Za-z0-9])"
)
_DOC_DOMAINS = ("example.com", "example.org", "example.net")
_DOC_TLDS = frozenset({"test", "invalid", "localhost", "example"})
# "logo@2x.png" is an asset name, not an address.
_FILE_TLDS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "ico", "pdf"})

_CARD = re.compile(r"(?<![\w.,+\-])\d(?:[ \-]?\d){12,18}(?![\w\-]|[.,]\d)")
# A bare digit run passed to a call or named as a seed is a parameter, not a card.
_CODE_BEFORE = re.compile(r"(?i)(?:\w\(|(?:seed|random_state)\W{0,3})$")
_SSN = re.compile(r"(?<![\w.\-])(\d{3})([\- ])(\d{2})\2(\d{4})(?![\w\-]|[.,]\d)")
# A digit group just before or after ("1.007 276 466 5789") means a table of numbers.
_NANP_PHONE = re.compile(
    r"(?<![\w+.\-])(?<!\d[ .])(?:\+?1(?P<s0>[ .\-]?))?"
    r"(?:\([2-9]\d{2}\)(?P<s1>[ .\-]?)|[2-9]\d{2}(?P<s2>[ .\-]))"
    r"[2-9]\d{2}(?P<s3>[ .\-])\d{4}(?![\w\-]|[.,]\d| \d)"
)
_INTL_PHONE = re.compile(r"(?<![\w+])\+[1-9][\d .()\-]{6,22}\d")
_DATE_LIKE = re.compile(r"\+\d{4}-\d{2}-\d{2}")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}")
# A trailing "/24" makes it a network prefix, not somebody's address.
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w/]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:/])")
# Dotted quads after these words are version or section numbers, not hosts.
_NOT_AN_ADDRESS_BEFORE = re.compile(
    r"(?i)\b(?:versions?|ver\.?|releases?|build|rev\.?|(?:sub)?sections?|sec\.|chapters?|"
    r"ch\.|steps?|figures?|fig\.|tables?|rules?|clauses?|articles?|art\.|paragraphs?|para\.)"
    r"[\s:#\-]*$|§\s*$|version\w*\W{0,5}$|[=<>~!]=\s*$"
)

# Overlapping candidates keep the more specific kind.
_PRIORITY = ("iban", "credit_card", "email", "us_ssn", "ip_address", "phone")


# --- redaction -------------------------------------------------------------------------------


def _mask_digits(value: str, keep_last: int) -> str:
    """Replace every digit but the last ``keep_last`` with ``*``, keeping the layout."""
    remaining = sum(c.isdigit() for c in value)
    out = []
    for c in value:
        if c.isdigit():
            remaining -= 1
            out.append(c if remaining < keep_last else "*")
        else:
            out.append(c)
    return "".join(out)


# --- per-kind scanners -----------------------------------------------------------------------


def _emails(text: str) -> Iterable[Finding]:
    for m in _EMAIL.finditer(text):
        local, domain, tld = m.group(1), m.group(2).lower(), m.group(3).lower()
        if domain in _DOC_DOMAINS or domain.endswith(tuple("." + d for d in _DOC_DOMAINS)):
            continue
        if tld in _DOC_TLDS or tld in _FILE_TLDS:
            continue
        after = text[m.end() : m.end() + 2]
        if after[:1] == ":" and after[1:2].strip():
            continue  # scp-style "git@host:org/repo", a login rather than an address
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
        if not seps and _CODE_BEFORE.search(text, max(0, m.start() - 24), m.start()):
            continue
        yield Finding("credit_card", m.start(), m.end(), _mask_digits(raw, 4))


def _card_grouping_ok(sizes: list[int]) -> bool:
    if sizes in ([4, 6, 5], [4, 6, 4]):  # Amex and Diners layouts
        return True
    return all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4 and len(sizes) >= 4


def _ssns(text: str) -> Iterable[Finding]:
    for m in _SSN.finditer(text):
        if ssn_valid(m.group(1), m.group(3), m.group(4)):
            sep = m.group(2)
            yield Finding("us_ssn", m.start(), m.end(), f"***{sep}**{sep}{m.group(4)}")


def _phones(text: str) -> Iterable[Finding]:
    for m in _NANP_PHONE.finditer(text):
        s0, s1, s2, s3 = m.group("s0", "s1", "s2", "s3")
        if s2 is not None and s2 != s3:
            continue  # "206.766 9881": a number written with mixed separators
        used = {s for s in (s0, s1, s2, s3) if s}
        if "." in used and len(used) > 1:
            continue
        yield Finding("phone", m.start(), m.end(), _mask_digits(m.group(), 2))
    for m in _INTL_PHONE.finditer(text):
        candidate = m.group()
        # Trailing groups may belong to the next number; drop them until the rest is a phone.
        while sum(c.isdigit() for c in candidate) >= 8:
            if _intl_phone_ok(candidate):
                yield Finding("phone", m.start(), m.start() + len(candidate), _mask_digits(candidate, 2))
                break
            candidate = candidate.rstrip("0123456789").rstrip(" .()-")


def _intl_phone_ok(candidate: str) -> bool:
    digits = sum(c.isdigit() for c in candidate)
    if not 8 <= digits <= 15:
        return False
    if _DATE_LIKE.match(candidate):
        return False  # "+1980-02-29" is an ISO date with an explicit sign
    if digits == len(candidate) - 1 and digits < 11:
        return False  # "+2147483647" without any grouping is more likely a signed number
    if candidate.count("(") != candidate.count(")") or candidate.count("(") > 1:
        return False
    seps = candidate.replace("(", "").replace(")", "")
    if re.search(r"[ .\-]{2}", seps):
        return False  # "+40.71 -74.00" is two coordinates, not one number
    kinds = {c for c in seps if c in " .-"}
    # Dots only ever appear alone ("+33.1.23.45.67.89"); one dot is a decimal number.
    return not ("." in kinds and (len(kinds) > 1 or seps.count(".") < 2))


def _ibans(text: str) -> Iterable[Finding]:
    pos = 0
    while (m := _IBAN.search(text, pos)) is not None:
        pos = m.start() + 1  # the greedy run may hide the start of the next IBAN
        expected = _IBAN_LENGTHS.get(m.group()[:2])
        end = _iban_end(text, m.start(), m.end(), expected) if expected else None
        if end is None or (end < len(text) and text[end].isalnum()):
            continue
        value = text[m.start() : end]
        if iban_valid(value):
            pos = end
            compact = value.replace(" ", "")
            yield Finding("iban", m.start(), end, compact[:2] + "*" * (len(compact) - 6) + compact[-4:])


def _iban_end(text: str, start: int, stop: int, length: int) -> int | None:
    """End offset after ``length`` non-space characters from ``start``; the greedy match may
    have swallowed a following capitalised word, so the registry length decides the cut."""
    count = 0
    for i in range(start, stop):
        if text[i] != " ":
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


def resolve_overlaps(findings: Iterable[Finding], priority: tuple[str, ...]) -> list[Finding]:
    """Keep one finding per overlapping region, preferring earlier kinds in ``priority``,
    then longer spans; the result is sorted by position."""
    rank = {k: i for i, k in enumerate(priority)}
    ordered = sorted(findings, key=lambda f: (rank.get(f.kind, len(rank)), f.start - f.end))
    # Kept spans never overlap, so sorted by start they are sorted by end too: each new
    # candidate only needs comparing with its two neighbours (found by bisection).
    starts: list[int] = []
    kept: list[Finding] = []
    for f in ordered:
        i = bisect.bisect_right(starts, f.start)
        if i > 0 and kept[i - 1].end > f.start:
            continue
        if i < len(kept) and kept[i].start < f.end:
            continue
        starts.insert(i, f.start)
        kept.insert(i, f)
    return kept


def find_pii(text: str, *, include_private_ip: bool = False) -> list[Finding]:
    """All formatted PII in ``text``: e-mail addresses, card numbers, US SSNs, phone numbers,
    IBANs and IP addresses, sorted by position. Values are masked in ``Finding.redacted``."""
    found: list[Finding] = []
    found.extend(_emails(text))
    found.extend(_cards(text))
    found.extend(_ssns(text))
    found.extend(_phones(text))
    found.extend(_ibans(text))
    found.extend(_ips(text, include_private_ip))
    return resolve_overlaps(found, _PRIORITY)


def pii_summary(findings: Iterable[Finding]) -> str:
    """A one-line summary naming each kind found and how often, never the values themselves,
    e.g. ``found: credit_card (1), email (2)``."""
    counts = Counter(f.kind for f in findings)
    if not counts:
        return "found: nothing"
    return "found: " + ", ".join(f"{kind} ({n})" for kind, n in sorted(counts.items()))
