r"""``parse`` and ``_verify`` of ``phonenumbers``' matcher for the common candidate, with less work.

Most candidates in a text are ASCII digits with spaces, dashes, brackets and dots, written in the
form of the region searched ("(202) 456-1111" or "1-800-555-0199" in US). For them ``parse``
takes one path: no phone-context, no extension, no international prefix; the region's country
code, and the digits less the country code where ``parse`` takes it for one and less a national
prefix where the region strips one. :func:`plain_number` follows that path with ``parse``'s own
helpers, in its order, and answers ``_verify``'s questions (``is_valid_number``,
``region_code_for_number``, the national prefix's presence) with one pattern each, made of the
metadata patterns that ``phonenumbers`` tries one by one; :func:`grouped` formats the number for
``STRICT_GROUPING`` the same way. "(202) 456-1111" cost 120 µs in ``phonenumbers`` (parse, both
verifications, its region) and costs 16 µs here. Any other candidate (an international prefix,
a tab, an extension, letters, a number of zeros) gets None, and the caller asks ``phonenumbers``.

Why each step is ``phonenumbers``' (``tests/privacy/test_phone_scan_exact.py`` also compares the
answers with ``parse``, ``_verify`` and ``region_code_for_number`` for every region's examples
written in several ways, random candidates and phone-shaped text):

* ``_build_national_number_for_parsing``, ``_is_viable_phone_number`` and
  ``_maybe_strip_extension`` read ``\d`` and no digit's value, so they are asked once per shape
  (digits as "0"); they keep every digit, so ``_normalize`` of what they return is the
  candidate's digits (letters, the only other thing it reads, are not there);
* ``_maybe_extract_country_code`` finds no ``+`` and (we check) no international prefix; digits
  that start with the country code are taken for it by its own test
  (``_without_country_code``): then the number is written with its code (source
  ``FROM_NUMBER_WITHOUT_PLUS_SIGN``) and ``parse`` reads the code's main region's rules; else it
  returns (0, "") and the source is ``FROM_DEFAULT_COUNTRY``;
* the national prefix is stripped by ``_maybe_strip_national_prefix_carrier_code`` (where its
  pattern matches: else nothing changes) and kept as ``parse`` keeps it (``_test_number_length``);
  the carrier code it may find is read by no check;
* the national significant number is that string: ``_set_italian_leading_zeros_for_phone_number``
  records its leading zeros and ``national_significant_number`` writes them back;
* ``_is_national_prefix_present_if_required`` asks only of a number from the default country, and
  ``_all_number_groups_remain_grouped`` starts after the country code in one written with it;
* a pattern of alternatives tried in order (``(?P<f0>...)|(?P<f1>...)``) finds the first
  format that fits, as ``_choose_formatting_pattern_for_number``'s loop does, and names it (the
  outer group closes last).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, NamedTuple

from nbeval.detectors.phone_plans import phonenumbers_module

__all__ = ["NOT_A_NUMBER", "PlainNumber", "grouped", "plain_number"]

#: The candidates :func:`plain_number` answers for: ASCII digits and these separators.
_PLAIN = re.compile(r"[0-9 \-().]+")
_NOT_DIGITS = str.maketrans("", "", " -().")


class PlainNumber(NamedTuple):
    """What ``_verify`` needs of a parsed candidate.

    Its country calling code and national significant number, whether it is valid with its national
    prefix where one is required (``VALID``), and the region it belongs to
    (``region_code_for_number``).
    """

    code: int
    nsn: str
    valid: bool
    region: str | None
    with_code: bool = False  # written with its country code (source FROM_NUMBER_WITHOUT_PLUS_SIGN)


#: ``parse`` raises for the candidate: no leniency accepts it.
NOT_A_NUMBER = PlainNumber(0, "", False, None)


@cache
def _library() -> tuple[Any, Any, Any]:
    pn = phonenumbers_module()
    return pn, pn.phonenumberutil, pn.phonenumbermatcher


_TYPES = ("premium_rate", "toll_free", "shared_cost", "voip", "personal_number", "pager", "uan", "voicemail")


def _desc(desc: Any) -> str | None:
    """Return a pattern, fullmatched, for ``_is_number_matching_desc``.

    One of the lengths, then the national number pattern; None where it matches nothing.
    """
    if desc is None or not desc.national_number_pattern:
        return None
    lengths = "|".join(f"\\d{{{n}}}" for n in desc.possible_length if n > 0)
    if desc.possible_length and not lengths:
        return None
    return (f"(?=(?:{lengths})$)" if lengths else "") + f"(?:{desc.national_number_pattern})$"


def _known_type(meta: Any) -> str:
    """Return ``_number_type_helper(nsn, meta) != UNKNOWN`` as a pattern.

    The general description, and one of the types it tries (mobile only where its pattern differs
    from fixed line's).
    """
    general = _desc(meta.general_desc)
    kinds = [_desc(getattr(meta, kind)) for kind in (*_TYPES, "fixed_line")]
    if not meta.same_mobile_and_fixed_line_pattern:
        kinds.append(_desc(meta.mobile))
    found = [k for k in kinds if k is not None]
    return f"(?={general})(?:{'|'.join(found)})" if general is not None and found else "(?!)"


def _first_format(formats: Any) -> re.Pattern[str]:
    """Return ``_choose_formatting_pattern_for_number(formats, nsn)`` as one pattern.

    Its alternatives are tried in order, and the group ``f<i>`` of the first that matches is the
    last to close.
    """
    alternatives = []
    for i, fmt in enumerate(formats):
        lead = f"(?=(?:{fmt.leading_digits_pattern[-1]}))" if fmt.leading_digits_pattern else ""
        alternatives.append(f"(?P<f{i}>{lead}(?:{fmt.pattern})$)")
    return re.compile("|".join(alternatives) or "(?!)")


class _Country:
    """A country calling code's regions and the patterns that answer ``_verify``'s questions.

    Each pattern is compiled when first asked (the +1 code has 25 regions; a text rarely needs
    many).
    """

    def __init__(self, regions: tuple[str, ...], metas: dict[str, Any]) -> None:
        self.regions = regions
        self.metas = metas
        self.main = metas[regions[0]]  # formats and the national prefix come from the main region
        self.national = _first_format(self.main.number_format)  # the national prefix's presence
        self.formats = self.main.intl_number_format or self.main.number_format  # format_number(RFC3966)'s
        self.rfc3966 = _first_format(self.formats)
        self._valid: dict[str, re.Pattern[str]] = {}
        self._leading: dict[str, re.Pattern[str]] = {}

    def valid(self, region: str, nsn: str) -> bool:
        """``is_valid_number_for_region``: the number is of a known type in ``region``."""
        if region not in self._valid:
            self._valid[region] = re.compile(_known_type(self.metas[region]))
        return self._valid[region].fullmatch(nsn) is not None

    def region_of(self, nsn: str) -> tuple[str | None, bool]:
        """Return ``region_code_for_number`` and ``is_valid_number`` for ``nsn``.

        The region is the only one, else the first whose leading digits start the number or (without
        them) where it is of a known type (regions without metadata skipped); the number is valid
        when it is of a known type in that region.
        """
        if len(self.regions) == 1:
            return self.regions[0], self.valid(self.regions[0], nsn)
        for region in self.regions:
            meta = self.metas[region]
            if meta is None:
                continue
            if meta.leading_digits is None:
                if self.valid(region, nsn):
                    return region, True
                continue
            if region not in self._leading:
                self._leading[region] = _library()[1].re_compile(meta.leading_digits)
            if self._leading[region].match(nsn):
                return region, self.valid(region, nsn)
        return None, False


@cache
def _country(code: int) -> _Country | None:
    """None where a pattern does not compile (then ``phonenumbers`` answers)."""
    _, pu, _ = _library()
    regions = tuple(pu.COUNTRY_CODE_TO_REGION_CODE.get(code, ()))
    metas = {r: pu.PhoneMetadata.metadata_for_region(r.upper(), None) for r in regions}
    if not regions or metas[regions[0]] is None:
        return None
    try:
        return _Country(regions, metas)
    except re.error:
        return None


class _Region(NamedTuple):
    meta: Any
    code: str  # the country calling code, as digits
    idd: re.Pattern[str] | None  # the international prefix
    prefix: re.Pattern[str] | None  # the national prefix for parsing
    country: _Country


@cache
def _not_kept() -> frozenset[Any]:
    """The lengths for which ``parse`` keeps the national prefix."""
    result = _library()[1].ValidationResult
    return frozenset((result.TOO_SHORT, result.IS_POSSIBLE_LOCAL_ONLY, result.INVALID_LENGTH))


@cache
def _region(region: str) -> _Region | None:
    """What :func:`plain_number` reads of a region, or None where it does not answer for it."""
    _, pu, _ = _library()
    meta = pu.PhoneMetadata.metadata_for_region(region, None)
    country = None if meta is None else _country(meta.country_code)
    if meta is None or country is None:
        return None
    idd = None if meta.international_prefix is None else pu.re_compile(meta.international_prefix)
    prefix = pu.re_compile(meta.national_prefix_for_parsing) if meta.national_prefix_for_parsing else None
    return _Region(meta, str(meta.country_code), idd, prefix, country)


def _format_of(pattern: re.Pattern[str], nsn: str, formats: Any) -> Any:
    found = pattern.fullmatch(nsn)
    return None if found is None else formats[int(str(found.lastgroup)[1:])]


# ASCII digits to "0": the first steps of ``parse`` read ``\\d`` and never a digit's value.
_SHAPE = str.maketrans("123456789", "000000000")
_GOES_ON, _RAISES, _EXTENSION = range(3)
_STARTS: dict[tuple[str, str], int] = {}


def _start(shape: str, region: str) -> int:
    """Run the first steps of ``parse`` once per shape of candidate and region.

    These steps (the number in the text, its viability, the region, an extension) read no digit's
    value. Returns whether ``parse`` raises, finds an extension (not answered here), or goes on.
    """
    key = (shape, region)
    found = _STARTS.get(key)
    if found is None:
        _, pu, _ = _library()
        national = pu._build_national_number_for_parsing(shape)
        if len(shape) > pu._MAX_INPUT_STRING_LENGTH or not pu._is_viable_phone_number(national):
            found = _RAISES
        elif not pu._check_region_for_parsing(national, region):
            found = _RAISES
        else:
            found = _EXTENSION if pu._maybe_strip_extension(national)[0] else _GOES_ON
        if len(_STARTS) >= 10_000:
            _STARTS.clear()
        _STARTS[key] = found
    return found


def _without_country_code(digits: str, code: str, meta: Any) -> str | None:
    """Do ``_maybe_extract_country_code`` on digits that start with the region's country code.

    It takes them for the code (the number written without its ``+``) when the number fits the
    general description only without them, or is too long with them; then the digits after the code,
    less a national prefix, are the number (None where it does not take them).
    """
    _, pu, _ = _library()
    _, rest, _ = pu._maybe_strip_national_prefix_carrier_code(digits[len(code) :], meta)
    general = meta.general_desc
    if (not pu._match_national_number(digits, general, False) and pu._match_national_number(rest, general, False)) or (
        pu._test_number_length(digits, meta) == pu.ValidationResult.TOO_LONG
    ):
        return str(rest)
    return None


def plain_number(candidate: str, region: str) -> PlainNumber | None:
    """Parse and verify a common candidate as ``phonenumbers`` would.

    ``parse(candidate, region, keep_raw_input=True)`` and ``_verify`` at ``VALID`` (without the
    grouping of ``STRICT_GROUPING``, see :func:`grouped`), or None where the candidate is not one
    this module answers for. ``region`` in upper case.
    """
    if not _PLAIN.fullmatch(candidate):
        return None
    known = _region(region)
    if known is None:
        return None
    meta, code, idd, prefix, country = known
    _, pu, _ = _library()
    start = _start(candidate.translate(_SHAPE), region)
    if start != _GOES_ON:
        return NOT_A_NUMBER if start == _RAISES else None
    digits = candidate.translate(_NOT_DIGITS)
    if idd is not None and idd.match(digits):
        return None
    nsn = _without_country_code(digits, code, meta) if digits.startswith(code) else None
    with_code = nsn is not None
    if nsn is None:
        nsn = digits
    if len(nsn) < pu._MIN_LENGTH_FOR_NSN:
        return NOT_A_NUMBER
    # The national prefix, stripped where parse strips it: by the rules of the code's main region
    # for a number written with its code (parse reads its metadata then), else by the region's.
    rules = country.main if with_code else meta
    if (prefix is not None and prefix.match(nsn)) or (with_code and rules is not meta):
        _, stripped, _ = pu._maybe_strip_national_prefix_carrier_code(nsn, rules)
        if pu._test_number_length(stripped, rules) not in _not_kept():
            nsn = stripped
    if not pu._MIN_LENGTH_FOR_NSN <= len(nsn) <= pu._MAX_LENGTH_FOR_NSN:
        return NOT_A_NUMBER
    if not nsn.strip("0"):
        return None  # all zeros: format_number returns the raw input
    found, valid = country.region_of(nsn)
    if valid and not with_code:  # _is_national_prefix_present_if_required (FROM_DEFAULT_COUNTRY only)
        fmt = _format_of(country.national, nsn, country.main.number_format)
        rule = None if fmt is None else fmt.national_prefix_formatting_rule
        if rule and not fmt.national_prefix_optional_when_formatting:
            valid = pu._formatting_rule_has_first_group_only(rule) or bool(
                pu._maybe_strip_national_prefix_carrier_code(digits, country.main)[2]
            )
    return PlainNumber(meta.country_code, nsn, valid, found, with_code)


@cache
def _rule(rule: str) -> tuple[tuple[str, int], ...] | None:
    r"""Split a format's rule into (text, group) parts (group 0: none).

    Only a rule made of ``\1`` to ``\9`` and other characters than backslashes is split; else None.
    """
    parts = re.findall(r"\\([1-9])(?![0-9])|([^\\]+)", rule)
    if "".join(f"\\{g}" if g else text for g, text in parts) != rule:
        return None
    return tuple((text, int(g or 0)) for g, text in parts)


def _rfc3966(nsn: str, fmt: Any) -> list[str]:
    """``_format_nsn_using_pattern(nsn, fmt, RFC3966).split("-")`` (no carrier code)."""
    _, pu, _ = _library()
    pattern, rule = pu.re_compile(fmt.pattern), _rule(fmt.format)
    found = pattern.match(nsn)
    if rule is not None and found is not None and found.end() == len(nsn) and not pattern.match(nsn, len(nsn)):
        # re.sub's one match: the whole number (none after it, not even an empty one)
        formatted = "".join([found.group(g) or "" if g else text for text, g in rule])
    else:
        formatted = pattern.sub(fmt.format, nsn)
    lead = pu._SEPARATOR_PATTERN.match(formatted)  # RFC3966: no separator first, a dash for each run
    groups: list[str] = pu._SEPARATOR_PATTERN.split(formatted[lead.end() :] if lead else formatted)
    return groups


@cache
def _has_national_prefix(code: int) -> bool:
    _, pu, _ = _library()
    return pu.ndd_prefix_for_region(pu.region_code_for_country_code(code), True) is not None


def _remain_grouped(plain: PlainNumber, candidate: str, groups: list[str]) -> bool:
    """Do ``_all_number_groups_remain_grouped`` for a number from the default country.

    For a number without an extension (its candidate, ASCII, is its own normalized form): each group
    is found after the previous one, and digits right after the first group (no separator) are only
    allowed, where the country has a national prefix, when the candidate holds the national number
    unbroken.
    """
    at = candidate.find(str(plain.code)) + len(str(plain.code)) if plain.with_code else 0  # after the code
    for i, group in enumerate(groups):
        at = candidate.find(group, at)
        if at < 0:
            return False
        at += len(group)
        if i == 0 and at < len(candidate) and _has_national_prefix(plain.code) and candidate[at].isdigit():
            return candidate[at - len(group) :].startswith(plain.nsn)
    return True  # the extension, "", is found after the last group


def grouped(plain: PlainNumber, candidate: str) -> bool:
    """Do ``_verify`` at ``STRICT_GROUPING`` for a :class:`PlainNumber` of ``candidate``.

    It is valid, has at most one slash (a plain candidate has none), and is grouped as its country
    writes it (``_check_number_grouping_is_valid``: the groups of ``format_number(RFC3966)``, else
    those of an alternate format).
    """
    if not plain.valid:
        return False
    _, pu, pm = _library()
    country = _country(plain.code)
    assert country is not None
    fmt = _format_of(country.rfc3966, plain.nsn, country.formats)
    if _remain_grouped(plain, candidate, [plain.nsn] if fmt is None else _rfc3966(plain.nsn, fmt)):
        return True
    for alternate in pm._ALT_NUMBER_FORMATS.get(plain.code, ()):
        if alternate.leading_digits_pattern and not pu.re_compile(alternate.leading_digits_pattern[0]).match(plain.nsn):
            continue
        if _remain_grouped(plain, candidate, _rfc3966(plain.nsn, alternate)):
            return True
    return False
