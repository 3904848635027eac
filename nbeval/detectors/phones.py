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
* a region's matcher only sees a run that could hold one of its valid numbers (:func:`_could_hold`):
  the digits of some span of whole groups are a country code and a national prefix (each
  optional) before a number of a valid type of its country code, or a group starts with its
  international call prefix. The test is two regular expressions over a few short strings,
  where a matcher parses every split of the run: on phone-shaped text about 5 regions of 16 are
  scanned per run instead of all 16 (2.5 times faster, the same findings);
* a matcher parses only the splits of a run that the matcher could accept for its region
  (:func:`_may_be_valid`, one regular expression over the split's digits): a country code, a
  national prefix (twice: ``parse`` may strip it after the country code and again) or the
  international call prefix, then a national number of the region's lengths and general pattern,
  and a national prefix where the region's format for that number asks for one. A split with a
  ``+``, an extension or other than ASCII digits and separators is always parsed. A run of such
  splits is only scanned for a region when one of its spans of whole groups passes
  (:func:`_some_valid`). The national number must fit the general description and one valid
  type's description (pattern and lengths) of a region sharing the country code, as
  ``is_valid_number`` asks. The splits skipped are those the matcher would parse and reject, so
  the matches are the same; on phone-shaped text 0.9 splits a run are parsed instead of 14;
* a run with no grouping character and no phone word near it is skipped: no match in it can be
  grouped as in its region or announced, so none would be a finding;
* once the whole run is a finding grouped as in a region, later regions are not searched: they
  could only add shorter phones inside it, which ``find_pii`` drops (unless a finding of another
  kind overlaps the run: then a shorter phone may stand, and every region is searched).

On 1 MB of phone-shaped text (``benchmarks/phone_scan_bench.py``) the scan took 98 s before these
filters, 38 s with the first ones, and 16 s of CPU on a busy machine with all of them (the
findings the same on the red-team, privacy and external corpora).

``phonenumbers`` is imported on first use, so ``import nbeval`` stays light.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from typing import Any

from nbeval.detectors.findings import Finding, mask_digits

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


@cache
def _phonenumbers() -> Any:
    import phonenumbers  # heavy (metadata for every numbering plan): imported on first use

    # Keep the metadata's compiled patterns: there are more than the re module's cache holds, and
    # recompiling the evicted ones was a tenth of a scan (the set is bounded by the metadata).
    phonenumbers.enable_pattern_cache()
    return phonenumbers


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


def _announced(text: str, start: int, end: int) -> bool:
    """True for an international number or one that a phone word introduces or follows."""
    if text[start] == "+" or _PHONE_WORDS_AFTER.match(text, end):
        return True
    return _PHONE_WORDS.search(text, max(0, start - 64), start) is not None


#: The most digits of a national significant number (phonenumbers' ``_MAX_LENGTH_FOR_NSN``), and
#: of what may come before it in a national or international form (prefixes, country code).
_MAX_NSN = 17
_MAX_PREFIX = 11
_DIGIT_GROUP = re.compile(r"\d+")
# The number types ``is_valid_number`` accepts (all but "unknown").
_NUMBER_TYPES = ("fixed_line", "mobile", "toll_free", "premium_rate", "shared_cost", "personal_number", "voip",
                 "pager", "uan", "voicemail")


def _sharing_country_code(region: str) -> list[Any] | None:
    """The metadata of every region that shares ``region``'s country code (``region`` among
    them), or None when any of it is missing."""
    pn = _phonenumbers()
    meta = pn.PhoneMetadata.metadata_for_region(region)
    if meta is None:
        return None
    found = [pn.PhoneMetadata.metadata_for_region(r)
             for r in pn.COUNTRY_CODE_TO_REGION_CODE.get(meta.country_code, (region,))]
    return None if any(m is None for m in found) else found


@cache
def _valid_number_types(region: str) -> str | None:
    """One pattern for the national significant numbers of every valid type of every region that
    shares ``region``'s country code, or None when some metadata is missing."""
    sharing = _sharing_country_code(region)
    if sharing is None:
        return None
    numbers = []
    for other_meta in sharing:
        for kind in _NUMBER_TYPES:
            desc = getattr(other_meta, kind, None)
            if desc is not None and desc.national_number_pattern:
                numbers.append(f"(?:{desc.national_number_pattern})")
    return "|".join(numbers) or None


def _described(desc: Any) -> str | None:
    """A pattern for the national numbers that fit ``desc`` (its pattern and lengths, as
    ``_is_number_matching_desc`` reads them), or None when it has no pattern."""
    if desc is None or not desc.national_number_pattern:
        return None
    sizes = "|".join(f"\\d{{{n}}}" for n in desc.possible_length if n > 0)
    if desc.possible_length and not sizes:
        return None  # lengths given, none positive: no number fits
    return (f"(?=(?:{sizes})$)" if sizes else "") + f"(?:{desc.national_number_pattern})"


@cache
def _possible_numbers(region: str) -> str | None:
    """One pattern for the national significant numbers that ``is_valid_number`` could accept for
    a region that shares ``region``'s country code: they fit its general description and the
    description of one of its valid types (pattern and lengths). None when some metadata is
    missing."""
    sharing = _sharing_country_code(region)
    if sharing is None:
        return None
    numbers = []
    for other_meta in sharing:
        general = _described(other_meta.general_desc)
        if general is None:
            return None
        kinds = [k for k in (_described(getattr(other_meta, kind, None)) for kind in _NUMBER_TYPES) if k]
        if kinds:
            numbers.append(f"(?={general}$)(?:{'|'.join(kinds)})")
    return "|".join(numbers) or None


@cache
def _region_patterns(region: str) -> tuple[re.Pattern[str], re.Pattern[str] | None] | None:
    """(national numbers, international call prefix) of ``region`` as patterns over lines of
    digits, or None when its metadata lacks a pattern (then every run is scanned).

    A national number is an optional country code, an optional national prefix (for a region that
    rewrites it, any few digits) and a number of one of the valid types of a region that shares
    the country code (``is_valid_number`` accepts "416..." as Canadian when the US is searched)."""
    numbers = _valid_number_types(region)
    if numbers is None:
        return None
    meta = _phonenumbers().PhoneMetadata.metadata_for_region(region)
    prefix = meta.national_prefix_for_parsing or meta.national_prefix
    if meta.national_prefix_transform_rule or (prefix and "(" in prefix):
        prefix = rf"\d{{0,{_MAX_PREFIX}}}"  # rewritten or captured: any short prefix
    national = f"^(?:{meta.country_code})?" + (f"(?:{prefix})?" if prefix else "") + f"(?:{numbers})$"
    idd = re.compile(f"^(?:{meta.international_prefix})", re.M) if meta.international_prefix else None
    return re.compile(national, re.M), idd


def _could_hold(lines: str, starts: str, region: str) -> bool:
    """False only when no match of ``region``'s matcher in this run can be a valid number.

    A match starts where a group of digits starts and ends where one ends (or before an
    extension, also a group's end): ``lines`` holds the digits of every such span, one per line,
    and ``starts`` the first digits from each group on. The span of a valid number is a country
    code and a national prefix (each optional) before a number of a valid type of the region's
    country code, unless it starts with the international call prefix (then it may be any
    country's number, and the region is scanned)."""
    patterns = _region_patterns(region)
    if patterns is None:
        return True
    national, idd = patterns
    if national.search(lines):
        return True
    return idd is not None and idd.search(starts) is not None


def _prefix_needed(fmt: Any) -> bool:
    """True when a national number in format ``fmt`` must be written with the national prefix
    (phonenumbers' ``_is_national_prefix_present_if_required``)."""
    rule = fmt.national_prefix_formatting_rule
    return bool(rule) and not fmt.national_prefix_optional_when_formatting and not re.fullmatch(r"\(?\\1\)?", rule)


def _prefix_not_needed(country_code: int) -> str:
    """A pattern (zero width) for the national numbers that the formats of ``country_code``'s main
    region let be written without the national prefix: the first format whose leading digits and
    pattern fit the number does not ask for it, or none fits."""
    pn = _phonenumbers()
    meta = pn.PhoneMetadata.metadata_for_region(pn.region_code_for_country_code(country_code))
    rest = ""
    for fmt in reversed(meta.number_format if meta is not None else ()):
        lead = f"(?=(?:{fmt.leading_digits_pattern[-1]}))" if fmt.leading_digits_pattern else ""
        fits = f"{lead}(?:{fmt.pattern})$"
        rest = f"(?!{fits}){rest}" if _prefix_needed(fmt) else f"(?:(?={fits})|{rest})"
    return rest


@cache
def _candidate_pattern(region: str) -> re.Pattern[str] | None:
    """The lines of digits (one candidate's digits per line) that ``parse`` could make a number
    of ``region`` from that the matcher accepts, or None when the digits cannot tell (then every
    candidate is parsed).

    Digits that start with the international call prefix may be any country's number. Otherwise
    ``parse`` keeps as the national significant number the digits left after, each optional, the
    region's country code, its national prefix, and its national prefix again (once when it looks
    for the country code, once after); it must be of a valid type, with one of its lengths. A
    prefix rule that rewrites the digits is allowed when it only keeps some of them (``\\2``):
    the number is still their tail. Digits with neither a country code nor a national prefix are
    only accepted when the region writes that number without its national prefix."""
    numbers = _possible_numbers(region)
    if numbers is None:
        return None
    meta = _phonenumbers().PhoneMetadata.metadata_for_region(region)
    prefix = meta.national_prefix_for_parsing or meta.national_prefix
    rule = meta.national_prefix_transform_rule
    if rule and re.sub(r"[\\$]\d", "", rule):
        return None  # a rule that writes digits of its own
    starts = [f"(?:{meta.country_code})"]  # what may come before the national number
    if prefix:
        strip = r"\d*" if rule or "(" in prefix else f"(?:{prefix})?(?:{prefix})?"  # rewritten, captured: any
        starts = [f"(?:{meta.country_code}){strip}", f"(?=(?:{prefix})){strip}"]
    starts.append(_prefix_not_needed(meta.country_code))
    idd = f"(?:{meta.international_prefix})\\d*|" if meta.international_prefix else ""
    return re.compile(f"^(?:{idd}(?:{'|'.join(starts)})(?:{numbers}))$", re.M)


# A candidate of ASCII digits and these separators is parsed as its digits alone: ``parse`` drops
# the separators (or, for a tab, rejects the candidate), and none of them marks an extension.
_PLAIN = re.compile(r"[0-9 \t\-().]+")
_NOT_DIGITS = str.maketrans("", "", " \t-().")


def _may_be_valid(digits: str, region: str) -> bool:
    """False only when no candidate with these ASCII ``digits`` is a number of ``region`` that
    the matcher accepts."""
    pattern = _candidate_pattern(region)
    return pattern is None or pattern.fullmatch(digits) is not None


def _some_valid(lines: str, region: str) -> bool:
    """True when the digits on some line of ``lines`` may be a number of ``region`` that the
    matcher accepts."""
    pattern = _candidate_pattern(region)
    return pattern is None or pattern.search(lines) is not None


def _all_spans(run: str) -> str:
    """The digits of every span of whole groups of digits in the ASCII ``run``, one per line."""
    groups = _DIGIT_GROUP.findall(run)
    return "\n".join("".join(groups[i:j]) for i in range(len(groups)) for j in range(i + 1, len(groups) + 1))


@cache
def _matcher() -> Any:
    """phonenumbers' ``PhoneNumberMatcher`` that parses a candidate of ASCII digits and separators
    only when :func:`_may_be_valid`: a candidate it skips is one the matcher would have parsed
    and rejected (its number is not valid, or lacks a required national prefix), so the matches
    are the same."""
    pn = _phonenumbers()
    checked = (pn.Leniency.VALID, pn.Leniency.STRICT_GROUPING)  # both reject what VALID rejects
    base: Any = pn.phonenumbermatcher.PhoneNumberMatcher

    class Matcher(base):
        def _parse_and_verify(self, candidate: str, offset: int) -> Any:
            if (
                self.leniency in checked
                and _PLAIN.fullmatch(candidate)
                and not _may_be_valid(candidate.translate(_NOT_DIGITS), self.preferred_region)
            ):
                return None
            return super()._parse_and_verify(candidate, offset)

    return Matcher


def _digit_spans(run: str) -> tuple[str, str]:
    """The digits (as ASCII) of every span of whole groups of digits in ``run`` that is short
    enough to be a phone number, one per line; and the digits from each group's start."""
    groups = [g if g.isascii() else "".join(str(int(c)) for c in g) for g in _DIGIT_GROUP.findall(run)]
    lines, starts = [], []
    for i in range(len(groups)):
        span = ""
        starts.append("".join(groups[i:])[:8])
        for group in groups[i:]:
            span += group
            if len(span) > _MAX_NSN + _MAX_PREFIX:
                break
            lines.append(span)
    return "\n".join(lines), "\n".join(starts)


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
    after a match can only follow the run's end (inside it, digits follow)."""
    if text[start] == "+" or _PHONE_WORDS_AFTER.match(text, end):
        return True
    firsts = (start, start + 1) if text[start] == "(" else (start,)
    return any(_PHONE_WORDS.search(text, max(0, s - 64), s) is not None for s in firsts)


def _regions_to_scan(run: str, regions: Sequence[str]) -> Iterator[str]:
    """The regions (upper case, in order) whose matcher may find a number in ``run``: "ZZ" alone
    for an international number (it reads the same from every region), else those that
    :func:`_could_hold` it and, for a run of ASCII digits and separators, :func:`_some_valid`."""
    if run.startswith("+"):
        yield "ZZ"
        return
    if _PLAIN.fullmatch(run):  # then every candidate's digits are a line, and _some_valid is the finer test
        lines = _all_spans(run)
        yield from (code for code in map(str.upper, regions) if _some_valid(lines, code))
        return
    spans = _digit_spans(run)
    yield from (code for code in map(str.upper, regions) if _could_hold(*spans, code))


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


def find_phones(text: str, regions: Sequence[str] = DEFAULT_PHONE_REGIONS, *,
                outranked: Iterable[tuple[int, int]] = ()) -> Iterable[Finding]:
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
    for run in _RUN.finditer(text):
        if len(run.group()) > MAX_RUN or sum(c.isdigit() for c in run.group()) < 7:
            continue
        if not _GROUPING.search(run.group()) and not _may_be_announced(text, run.start(), run.end()):
            continue  # a finding is grouped as in its region or announced: no match here can be either
        pn = _phonenumbers()
        options: dict[tuple[int, int], list[tuple[str, Any]]] = {}
        grouped = _GroupedAsIn(text)
        whole = (run.start(), run.end())
        may_settle = not _overlaps(disjoint, *whole)
        for region in _regions_to_scan(run.group(), regions):
            for match in _matcher()(run.group(), region, leniency=pn.Leniency.VALID):
                span = (run.start() + match.start, run.start() + match.end)
                options.setdefault(span, []).append((region, match))
            if (may_settle and whole in options and _plausible(text, *whole)
                    and any(grouped(whole, r) for r, _ in options[whole])):
                break  # settled: the whole run is a finding, and its first grouped region is known
        for span, candidates in options.items():
            if not _plausible(text, *span):
                continue
            # The first candidate grouped as in its region, else the first one for an announced number.
            chosen = next((c for c in candidates if grouped(span, c[0])), None)
            if chosen is None and not _announced(text, *span):
                continue
            _, match = chosen or candidates[0]
            locale = pn.region_code_for_number(match.number)
            yield Finding("phone", span[0], span[1], mask_digits(match.raw_string, 2), locale)
