"""Which candidates ``parse`` and ``_verify`` could accept, read from Google's numbering plans.

``_branches`` describes, as patterns over a candidate's digits, what the matcher could accept
for a region: the international call prefix and any number, or a country code, a national prefix
(twice: ``parse`` may strip it after the country code and again) or neither, then a national
number of the region's lengths and general pattern, with a national prefix where the region's
format for that number asks for one. The national number must fit the general description and
one valid type's description (pattern and lengths) of a region sharing the country code, as
``is_valid_number`` asks. A candidate none of them accepts is one the matcher would parse and
reject, so skipping it changes no match.

The patterns run as automata (:mod:`nbeval.detectors.phone_dfa`): the re module took up to 30 µs
to backtrack through a region's pattern (17,000 characters for the NANP), 16 times a candidate,
and was half of a scan of phone-shaped text; the automata of all the regions searched read a
candidate's digits once, about 1 µs, once built (0.4 s, once a process, when a text first has
a candidate to read).

``phonenumbers`` is imported on first use, so ``import nbeval`` stays light.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, NamedTuple

from nbeval.detectors.phone_dfa import DigitAutomaton, Patterns, Table, TooLarge

__all__ = ["PLAIN", "Plans", "may_be_valid", "phonenumbers_module", "plans_for"]


@cache
def phonenumbers_module() -> Any:
    """The ``phonenumbers`` package, imported on the first call (it is heavy) with its pattern cache turned on."""
    import phonenumbers  # heavy (metadata for every numbering plan): imported on first use

    # Keep the metadata's compiled patterns: there are more than the re module's cache holds, and
    # recompiling the evicted ones was a tenth of a scan (the set is bounded by the metadata).
    phonenumbers.enable_pattern_cache()
    return phonenumbers


_NUMBER_TYPES = (
    "fixed_line",
    "mobile",
    "toll_free",
    "premium_rate",
    "shared_cost",
    "personal_number",
    "voip",
    "pager",
    "uan",
    "voicemail",
)  # the number types ``is_valid_number`` accepts (all but "unknown")


def _sharing_country_code(region: str) -> list[Any] | None:
    """Return the metadata of every region that shares ``region``'s country code.

    ``region`` is among them; None when any of it is missing.
    """
    pn = phonenumbers_module()
    meta = pn.PhoneMetadata.metadata_for_region(region)
    if meta is None:
        return None
    found = [
        pn.PhoneMetadata.metadata_for_region(r)
        for r in pn.COUNTRY_CODE_TO_REGION_CODE.get(meta.country_code, (region,))
    ]
    return None if any(m is None for m in found) else found


def _described(desc: Any) -> str | None:
    """Return a pattern for the national numbers that fit ``desc``.

    Its pattern and lengths, as ``_is_number_matching_desc`` reads them; None when it has no
    pattern.
    """
    if desc is None or not desc.national_number_pattern:
        return None
    sizes = "|".join(f"\\d{{{n}}}" for n in desc.possible_length if n > 0)
    if desc.possible_length and not sizes:
        return None  # lengths given, none positive: no number fits
    return (f"(?=(?:{sizes})$)" if sizes else "") + f"(?:{desc.national_number_pattern})"


@cache
def _possible_numbers(region: str) -> str | None:
    """Return one pattern for the numbers ``is_valid_number`` could accept near ``region``.

    The national significant numbers that ``is_valid_number`` could accept for a region that shares
    ``region``'s country code: they fit its general description and the description of one of its
    valid types (pattern and lengths). None when some metadata is missing.
    """
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


def _prefix_needed(fmt: Any) -> bool:
    """Tell whether a national number in format ``fmt`` must carry the national prefix.

    As phonenumbers' ``_is_national_prefix_present_if_required`` decides.
    """
    rule = fmt.national_prefix_formatting_rule
    return bool(rule) and not fmt.national_prefix_optional_when_formatting and not re.fullmatch(r"\(?\\1\)?", rule)


def _prefix_not_needed(country_code: int) -> str:
    """Return a zero-width pattern for the numbers written without the national prefix.

    The national numbers that the formats of ``country_code``'s main region let be written without
    the national prefix: the first format whose leading digits and pattern fit the number does not
    ask for it, or none fits.
    """
    pn = phonenumbers_module()
    meta = pn.PhoneMetadata.metadata_for_region(pn.region_code_for_country_code(country_code))
    rest = ""
    for fmt in reversed(meta.number_format if meta is not None else ()):
        lead = f"(?=(?:{fmt.leading_digits_pattern[-1]}))" if fmt.leading_digits_pattern else ""
        fits = f"{lead}(?:{fmt.pattern})$"
        rest = f"(?!{fits}){rest}" if _prefix_needed(fmt) else f"(?:(?={fits})|{rest})"
    return rest


@cache
def _branches(region: str) -> tuple[tuple[str, str, bool], ...] | None:
    r"""Return the digit patterns of the numbers of ``region`` that the matcher accepts.

    The lines of digits (one candidate's digits per line) that ``parse`` could make a number of
    ``region`` from that the matcher accepts, as alternatives: each is a pattern to fullmatch in two
    parts (what comes before the national number, then the number), with True where an automaton had
    better read it backwards. None when the digits cannot tell (then every candidate is parsed).

    Digits that start with the international call prefix may be any country's number. Otherwise
    ``parse`` keeps as the national significant number the digits left after, each optional, the
    region's country code, its national prefix, and its national prefix again (once when it looks
    for the country code, once after); it must be of a valid type, with one of its lengths. A
    prefix rule that rewrites the digits is allowed when it only keeps some of them (``\2``):
    the number is still their tail (any digits, ``\d*``, may go before it: read backwards, an
    automaton reads the number first instead of every place where it may start). Digits with
    neither a country code nor a national prefix are only accepted when the region writes that
    number without its national prefix.
    """
    numbers = _possible_numbers(region)
    if numbers is None:
        return None
    meta = phonenumbers_module().PhoneMetadata.metadata_for_region(region)
    prefix = meta.national_prefix_for_parsing or meta.national_prefix
    rule = meta.national_prefix_transform_rule
    if rule and re.sub(r"[\\$]\d", "", rule):
        return None  # a rule that writes digits of its own
    starts = [(f"(?:{meta.country_code})", False)]  # what may come before the national number
    if prefix:
        anything = bool(rule or "(" in prefix)  # rewritten, captured: any digits
        strip = r"\d*" if anything else f"(?:{prefix})?(?:{prefix})?"
        starts = [(f"(?:{meta.country_code}){strip}", anything), (f"(?=(?:{prefix})){strip}", anything)]
    starts.append((_prefix_not_needed(meta.country_code), False))
    idd = [(f"(?:{meta.international_prefix})\\d*", "", False)] if meta.international_prefix else []
    return (*idd, *((f"(?:{start})", f"(?:{numbers})", backwards) for start, backwards in starts))


@cache
def _candidate_pattern(region: str) -> re.Pattern[str] | None:
    """:func:`_branches` as one pattern (any of them; the national numbers once), or None."""
    branches = _branches(region)
    if branches is None:
        return None
    numbers = branches[-1][1]
    anything = "".join(f"{start}|" for start, number, _ in branches if not number)  # the international prefix
    starts = "|".join(start for start, number, _ in branches if number)
    return re.compile(f"^(?:{anything}(?:{starts}){numbers})$", re.M)


#: A candidate of ASCII digits and these separators is parsed as its digits alone: ``parse`` drops
#: the separators (or, for a tab, rejects the candidate), and none of them marks an extension.
PLAIN = re.compile(r"[0-9 \t\-().]+")
_NOT_DIGITS = str.maketrans("", "", " \t-().")


class _Automata(NamedTuple):
    """A region's :func:`_branches` as automata over the digits.

    Those read forwards, those read backwards (None where there are none), and the branches left to
    the re module.
    """

    forwards: Table | None
    backwards: Table | None
    by_regex: tuple[re.Pattern[str], ...]


@cache
def _automata(region: str) -> _Automata | None:
    """None where the region's plan cannot tell (every candidate may be its)."""
    branches = _branches(region)
    if branches is None:
        return None
    store = Patterns()  # dropped once the automata are built
    numbers = store.compile(branches[-1][1])  # the same national numbers follow every prefix
    read: dict[bool, list[tuple[str, int | None]]] = {False: [], True: []}
    for start, number, backwards in branches:
        node = None if number and numbers is None else store.compile(start, numbers if number else None)
        read[backwards].append((start + number, node if node is None or not backwards else store.reverse(node)))
    tables: dict[bool, Table | None] = {False: None, True: None}
    by_regex: list[re.Pattern[str]] = []
    for backwards, parts in read.items():
        # The branches read the same way make one automaton; one the store cannot read or build
        # leaves them to the re module.
        nodes = [node for _, node in parts if node is not None]
        if parts and len(nodes) == len(parts):
            try:
                tables[backwards] = store.minimal(store.union(nodes))
                continue
            except (TooLarge, RecursionError):
                pass
        by_regex.extend(re.compile(pattern) for pattern, _ in parts)
    return _Automata(tables[False], tables[True], tuple(by_regex))


class Plans:
    """The ``_branches`` of several regions, read together.

    Their automata (``_automata``), those reading forwards as one product and those reading
    backwards as another, and the re module for a branch they cannot read. ``mask(candidate)`` has
    bit ``i`` set where the candidate may be a number of ``regions[i]`` (:func:`may_be_valid`).
    """

    def __init__(self, regions: tuple[str, ...]) -> None:
        self.regions = regions
        self.index = {region: i for i, region in reversed(list(enumerate(regions)))}
        self.everywhere = 0  # regions whose plan cannot tell: every candidate may be theirs
        self.by_regex: list[tuple[int, re.Pattern[str]]] = []
        ways: dict[bool, tuple[list[Table], list[int]]] = {False: ([], []), True: ([], [])}
        for i, region in enumerate(regions):
            automata = _automata(region)
            if automata is None:
                self.everywhere |= 1 << i
                continue
            for backwards, table in ((False, automata.forwards), (True, automata.backwards)):
                if table is not None:
                    ways[backwards][0].append(table)
                    ways[backwards][1].append(1 << i)
            self.by_regex.extend((1 << i, pattern) for pattern in automata.by_regex)
        self.forwards = DigitAutomaton(*ways[False])
        self.backwards = DigitAutomaton(*ways[True])
        self.known: dict[str, int] = {}  # per candidate's digits: a run's searches ask the same ones

    def mask(self, candidate: str) -> int:
        """For a candidate of ASCII digits and :data:`PLAIN` separators."""
        digits = candidate.translate(_NOT_DIGITS)
        mask = self.known.get(digits)
        if mask is None:
            mask = self.everywhere | self.forwards.matching(digits)
            if self.backwards.tables:
                mask |= self.backwards.matching(digits[::-1])
            for bit, pattern in self.by_regex:
                if not mask & bit and pattern.fullmatch(digits):
                    mask |= bit
            if len(self.known) >= 100_000:
                self.known.clear()
            self.known[digits] = mask
        return mask


_READ_BY: dict[str, Plans] = {}  # the plans that answer for a region: the first built that holds it


@cache
def plans_for(regions: tuple[str, ...]) -> Plans:
    """The :class:`Plans` of ``regions`` (upper case), built once."""
    plans = Plans(regions)
    for region in regions:
        _READ_BY.setdefault(region, plans)
    return plans


def may_be_valid(candidate: str, region: str) -> bool:
    """Tell whether ``candidate`` may be a number of ``region`` that the matcher accepts.

    False only when no ``candidate`` of ASCII digits and :data:`PLAIN` separators is a number of
    ``region`` that the matcher accepts (its digits do not fullmatch ``_candidate_pattern``).
    """
    plans = _READ_BY.get(region) or plans_for((region,))
    return bool(plans.mask(candidate) >> plans.index[region] & 1)
