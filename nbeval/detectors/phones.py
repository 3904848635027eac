"""Phone numbers in free text, found with Google's numbering plans (the ``phonenumbers`` package).

``phonenumbers.PhoneNumberMatcher`` proposes every number that is *valid* in its numbering plan,
in international form (``+44 20 7946 0162``) or in the national form of a region we search
(``020 7946 0162`` in GB, ``090-0854-3728`` in JP). The plans alone would also accept many
order numbers and timestamps, so our own guards from the regex era stay in front of them:

* a number without a ``+`` and without a phone word ("tel", "call", "Telefon"...) close before
  it must also be grouped the way its country writes numbers (``STRICT_GROUPING``), so "259-264
  1970" (pages and a year) is not a phone, and a bare run of digits never is;
* ISO dates, clock times, US SSN and ZIP+4 shapes, dots mixed with other separators, numbers
  after "order", "invoice", "ISBN"..., the digits of an IBAN-shaped account number, and a ZIP
  code followed by a house number and a street name ("17151 2450 Crown St") are never phones;
* the matcher only sees runs of digits and separators of phone length: a run longer than
  :data:`MAX_RUN` characters is a table of numbers, and skipping it keeps the scan linear;
* the matcher's search is done once a run (:mod:`nbeval.detectors.phone_matcher`): its
  candidates are the same for every region (and for every run of the same shape), and only
  ``parse`` and ``_verify`` are asked per region, once per candidate; not for a candidate of
  ASCII digits and separators that the region's plan rules out (read by automata built from the
  plan, :mod:`nbeval.detectors.phone_plans`), and for one in the region's national form with
  ``parse``'s own steps and ``_verify``'s questions as one pattern each
  (:mod:`nbeval.detectors.phone_parse`); a region none of the run's candidates could belong to is
  not searched. ``tests/privacy/test_phone_speed_equivalence.py`` and
  ``tests/privacy/test_phone_scan_exact.py`` compare each shortcut, and ``find_pii``, with
  phonenumbers itself;
* a run with no grouping character and no phone word near it is skipped: no match in it can be
  grouped as in its region or announced, so none would be a finding;
* once the whole run is a finding grouped as in a region, later regions are not searched: they
  could only add shorter phones inside it, which ``find_pii`` drops (unless a finding of another
  kind overlaps the run: then a shorter phone may stand, and every region is searched).

On 1 MB of phone-shaped text (``benchmarks/phone_scan_bench.py``) the scan took 98 s before these
filters, 38 s with the first ones, 14 s with the search done once a run, and less than half that
with the plan automata, the shapes and ``parse``'s common path: 8-9.5 s of CPU against 15-18 s
on the same busy two-core machine, 6.5-7.5 s against 17 s for a second MB (the automata built,
0.4 s once a process). The findings are the same (the benchmark's 15,629, and every test's).

``phonenumbers`` is imported on first use, so ``import nbeval`` stays light.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from nbeval.detectors.findings import Finding, mask_digits
from nbeval.detectors.phone_matcher import Match, find_matches, regions_to_search
from nbeval.detectors.phone_plans import phonenumbers_module

__all__ = ["DEFAULT_PHONE_REGIONS", "MAX_RUN", "find_phones"]

#: Longest run of digits and separators handed to the matcher.
MAX_RUN = 48

#: Regions whose national formats are searched when none are given: the ten Faker locales of
#: the test corpus plus the big English-, Spanish- and German-speaking numbering plans.
DEFAULT_PHONE_REGIONS: tuple[str, ...] = (
    "US", "GB", "DE", "FR", "IT", "ES", "NL", "PL", "PT", "BR", "JP", "IN", "AU", "MX", "CH", "AT",
)  # fmt: skip

# Words that announce a phone number, in the corpus languages; checked in a short window.
_PHONE_WORDS = re.compile(
    r"(?i)(?:\b(?:tel|tél|phone|call|ring|dial|reach|contact|mobile|cell|fax|desk|whatsapp|sms|text|"
    r"telefon\w*|téléphone|portable|numéro|teléfono|telefono|telefoon|móvil|cellulare|celular|"
    r"número|numer|komórk\w*|nummer|handy)\b|電話|☎)[^\d\n]{0,48}$"
)
# The words' letters (a word and what \w* adds to it hold them): in an ASCII window none of whose
# lowercase text holds one of the ASCII ones, the pattern finds nothing and is not run.
_PHONE_WORD_TEXTS = tuple(
    word.removesuffix(r"\w*").lower()
    for word in re.search(r"\\b\(\?:(.*?)\)\\b", _PHONE_WORDS.pattern).group(1).split("|")  # type: ignore[union-attr]
    if word.isascii()
)
# The same words just after a number label it too ("3660170548-Fax", "416 60 039 office").
_PHONE_WORDS_AFTER = re.compile(r"(?i)[ \t]*[\-–(]?[ \t]*(?:tel|phone|mobile|cell|fax|office|desk|home|work)\b")
# "17151 2450 Crown St": a ZIP code, then the house number and the street's name.
_ZIP_AND_HOUSE = re.compile(r"\d{5} \d{1,5}")
_STREET_NAME_AFTER = re.compile(
    r" (?:(?!(?i:tel|phone|mobile|cell|fax|office|desk|home|work)\b)[A-Z][a-z]"
    # ... or a street written in lower case, known by its suffix ("17151 2450 crown st")
    r"|[a-z]+(?: [a-z]+){0,3} (?:st|street|ave|avenue|rd|road|blvd|boulevard|ln|lane|dr|drive|way|ct|court"
    r"|pl|place|ter|terrace|hwy|highway|pkwy|parkway|cir|circle|sq|square)\b)"
)
# The start of an account number ("BE71 0961 2345 6760", "NL91 ABNA 0417 1643 00"): the digits
# after it are the rest of that number, not a phone.
_IBAN_START_BEFORE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ \-][A-Z0-9]{4}){0,7}[ \-]$")
# Digits after these words are references, not phones.
_NOT_A_PHONE_BEFORE = re.compile(
    r"(?i)(?:\b(?:order|invoice|ref(?:erence)?|ticket|case|tracking|isbn|issn|id|sku|account|"
    r"acct|serial|build|version|commit|po)\b(?:-1[03])?|#)[\s.:#\-]{0,4}$"  # "ISBN-10 0-7183-4542-8"
)
_NEVER_A_PHONE = re.compile(
    r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\d{2}/\d{2}/\d{2,4}|\d{1,2}\.\d{1,2}\.\d{4}"  # dates and times
    r"|^\d{3}([\- .])\d{2}\1\d{4}$|^\d{5}-\d{4}$"  # US SSN and ZIP+4 shapes
    r"|^\d{4}([ \-])\d{4}\2\d{4}\2\d{4}$"  # a card number's layout
)
# A run of digits and the separators phone numbers use, with an optional extension.
_RUN = re.compile(r"(?<![\w+])\+?\(?\d[\d \t\-().]*\d(?:[ \t]?(?:x|ext\.?)[ \t]?\d{1,5})?")
_GROUPING = re.compile(r"[ ()\-/.+]")


def _phonenumbers() -> Any:
    return phonenumbers_module()


def _plausible(text: str, start: int, end: int) -> bool:
    """Our guards: False for shapes that are never phones and for digits after a reference word."""
    raw = text[start:end]
    if _NEVER_A_PHONE.search(raw):
        return False
    if "." in raw and (raw.count(".") == 1 or re.search(r"[ \-()]", raw)):
        return False  # "4155.552671" is a decimal, "206.766 9881" two numbers
    if _NOT_A_PHONE_BEFORE.search(text, max(0, start - 16), start):
        return False
    if _ZIP_AND_HOUSE.fullmatch(raw) and _STREET_NAME_AFTER.match(text, end):
        return False
    if _IBAN_START_BEFORE.search(text, max(0, start - 48), start):
        return False
    return not (text[end : end + 1] in ("%", "€", "$") or text[max(0, start - 1) : start] in ("$", "€", "£", "/"))


def _word_before(text: str, start: int) -> bool:
    """True when a phone word comes shortly before ``start`` (:data:`_PHONE_WORDS`)."""
    window = text[max(0, start - 64) : start]
    if window.isascii() and not any(word in window.lower() for word in _PHONE_WORD_TEXTS):
        return False
    return _PHONE_WORDS.search(text, max(0, start - 64), start) is not None


def _announced(text: str, start: int, end: int) -> bool:
    """True for an international number or one that a phone word introduces or follows."""
    if text[start] == "+" or _PHONE_WORDS_AFTER.match(text, end):
        return True
    return _word_before(text, start)


def _matcher() -> Callable[..., list[Match]]:
    """``PhoneNumberMatcher`` as a function: (text, region, leniency) to its matches."""
    return find_matches


def _grouped_as_in(raw: str, region: str) -> bool:
    """True when ``raw`` is grouped the way ``region`` writes its numbers."""
    if not _GROUPING.search(raw):
        return False
    pn = _phonenumbers()
    return any(True for _ in _matcher()(raw, region, leniency=pn.Leniency.STRICT_GROUPING))


def _may_be_announced(text: str, start: int, end: int) -> bool:
    """True when some match inside the run ``text[start:end]`` may be :func:`_announced`.

    A match starts at the run's start, after its opening bracket, or after digits of the run (then
    no phone word can come just before it: only non-digits may stand between), and a phone word
    after a match can only follow the run's end (inside it, digits follow).
    """
    if text[start] == "+" or _PHONE_WORDS_AFTER.match(text, end):
        return True
    firsts = (start, start + 1) if text[start] == "(" else (start,)
    return any(_word_before(text, s) for s in firsts)


def _regions_to_scan(run: str, regions: tuple[str, ...]) -> Sequence[str]:
    """Return the regions (upper case, in order) to search ``run`` for.

    "ZZ" alone for an international number (it reads the same from every region), else those whose
    plan may hold a number the matcher finds in it (:func:`regions_to_search`).
    """
    return ("ZZ",) if run.startswith("+") else regions_to_search(run, regions)


def _disjoint(spans: Iterable[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """``spans`` merged where they overlap: (starts, ends), both sorted."""
    starts: list[int] = []
    ends: list[int] = []
    for start, end in sorted(spans):
        if ends and start < ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    return starts, ends


def _overlaps(disjoint: tuple[list[int], list[int]], start: int, end: int) -> bool:
    starts, ends = disjoint
    i = bisect.bisect_left(ends, start + 1)  # the first span that ends after ``start``
    return i < len(starts) and starts[i] < end


class _GroupedAsIn:
    """:func:`_grouped_as_in` for spans of ``text``, each (span, region) checked once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.seen: dict[tuple[tuple[int, int], str], bool] = {}

    def __call__(self, span: tuple[int, int], region: str) -> bool:
        if (span, region) not in self.seen:
            self.seen[span, region] = _grouped_as_in(self.text[span[0] : span[1]], region)
        return self.seen[span, region]


def find_phones(
    text: str, regions: Sequence[str] = DEFAULT_PHONE_REGIONS, *, outranked: Iterable[tuple[int, int]] = ()
) -> Iterable[Finding]:
    """Valid phone numbers in ``text``, each with the region it belongs to as its locale.

    Every region in ``regions`` is searched for national formats; international numbers are
    found whatever the regions. When a national number is valid in several regions, the first
    region that groups its digits that way wins ("02 32 45 98 03" is French). Overlapping spans
    are all yielded, except those a caller that keeps the longest phone would drop anyway: once a
    whole run of digits is a number grouped as in a region, later regions are not searched (they
    could only find numbers inside it), unless the run overlaps one of the ``outranked`` spans
    (findings the caller prefers to a phone, which may leave a shorter phone standing).
    """
    disjoint = _disjoint(outranked)
    upper = tuple(map(str.upper, regions))
    valid: Any = None  # phonenumbers' Leniency.VALID, once a run needs the matcher
    for run in _RUN.finditer(text):
        raw = run.group()
        if len(raw) > MAX_RUN or sum(map(str.isdigit, raw)) < 7:
            continue
        if not _GROUPING.search(raw) and not _may_be_announced(text, run.start(), run.end()):
            continue  # a finding is grouped as in its region or announced: no match here can be either
        if valid is None:
            valid = _phonenumbers().Leniency.VALID
        options: dict[tuple[int, int], list[tuple[str, Any]]] = {}
        grouped = _GroupedAsIn(text)
        plausible: dict[tuple[int, int], bool] = {}  # per span: _plausible, asked once
        whole = (run.start(), run.end())
        may_settle = not _overlaps(disjoint, *whole)
        for region in _regions_to_scan(raw, upper):
            for match in _matcher()(raw, region, leniency=valid):
                span = (run.start() + match.start, run.start() + match.end)
                options.setdefault(span, []).append((region, match))
            if may_settle and whole in options:
                if whole not in plausible:
                    plausible[whole] = _plausible(text, *whole)
                if plausible[whole] and any(grouped(whole, r) for r, _ in options[whole]):
                    break  # settled: the whole run is a finding, and its first grouped region is known
        for span, candidates in options.items():
            if span not in plausible:
                plausible[span] = _plausible(text, *span)
            if not plausible[span]:
                continue
            # The first candidate grouped as in its region, else the first one for an announced number.
            chosen = next((c for c in candidates if grouped(span, c[0])), None)
            if chosen is None and not _announced(text, *span):
                continue
            _, match = chosen or candidates[0]
            yield Finding("phone", span[0], span[1], mask_digits(match.raw_string, 2), match.locale)
