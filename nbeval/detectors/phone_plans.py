"""Which candidates ``parse`` and ``_verify`` could accept, read from Google's numbering plans.

:func:`may_be_valid` is one regular expression over a candidate's digits: a country code, a
national prefix (twice: ``parse`` may strip it after the country code and again) or the
international call prefix, then a national number of the region's lengths and general pattern,
and a national prefix where the region's format for that number asks for one. The national
number must fit the general description and one valid type's description (pattern and lengths)
of a region sharing the country code, as ``is_valid_number`` asks. A candidate it rejects is one
the matcher would parse and reject, so skipping it changes no match.

``phonenumbers`` is imported on first use, so ``import nbeval`` stays light.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

__all__ = ["PLAIN", "may_be_valid", "phonenumbers_module", "regions_of"]


@cache
def phonenumbers_module() -> Any:
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
    """The metadata of every region that shares ``region``'s country code (``region`` among
    them), or None when any of it is missing."""
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


def _prefix_needed(fmt: Any) -> bool:
    """True when a national number in format ``fmt`` must be written with the national prefix
    (phonenumbers' ``_is_national_prefix_present_if_required``)."""
    rule = fmt.national_prefix_formatting_rule
    return bool(rule) and not fmt.national_prefix_optional_when_formatting and not re.fullmatch(r"\(?\\1\)?", rule)


def _prefix_not_needed(country_code: int) -> str:
    """A pattern (zero width) for the national numbers that the formats of ``country_code``'s main
    region let be written without the national prefix: the first format whose leading digits and
    pattern fit the number does not ask for it, or none fits."""
    pn = phonenumbers_module()
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
    meta = phonenumbers_module().PhoneMetadata.metadata_for_region(region)
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


#: A candidate of ASCII digits and these separators is parsed as its digits alone: ``parse`` drops
#: the separators (or, for a tab, rejects the candidate), and none of them marks an extension.
PLAIN = re.compile(r"[0-9 \t\-().]+")
_NOT_DIGITS = str.maketrans("", "", " \t-().")


@cache
def _lengths(region: str) -> tuple[int, int, re.Pattern[str] | None]:
    """The fewest and most digits of a candidate of ``region`` that does not start with its
    international call prefix (the widths of :func:`_candidate_pattern` without that branch, as
    the re module counts them: lookaheads take no width), and that prefix as a pattern."""
    meta = phonenumbers_module().PhoneMetadata.metadata_for_region(region)
    idd = re.compile(f"(?:{meta.international_prefix})") if meta.international_prefix else None
    pattern = _candidate_pattern(region)
    assert pattern is not None
    rest = pattern.pattern[len("^(?:") : -len(")$")]
    if idd is not None:
        rest = rest[len(f"(?:{meta.international_prefix})\\d*|") :]
    try:
        low, high = re._parser.parse(rest).getwidth()  # type: ignore[attr-defined]
    except Exception:  # another re module: no bounds
        low, high = 0, 1 << 30
    return low, high, idd


# Per candidate's digits: whether they may be a number of each region asked about so far.
_FITS: dict[str, dict[str, bool]] = {}


def _fits(digits: str, region: str) -> bool:
    """Whether ``digits`` may be a number of ``region`` (:func:`may_be_valid`), remembered per
    digits, so that the regions asked about a run's candidates and each region's search of them
    test each (digits, region) once."""
    known = _FITS.get(digits)
    if known is None:
        if len(_FITS) >= 200_000:
            _FITS.clear()
        known = _FITS[digits] = {}
    fits = known.get(region)
    if fits is None:
        pattern = _candidate_pattern(region)
        if pattern is None:  # the plan cannot tell: every candidate is parsed
            fits = True
        else:
            low, high, idd = _lengths(region)
            fits = (low <= len(digits) <= high or (idd is not None and idd.match(digits) is not None)) and (
                pattern.fullmatch(digits) is not None
            )
        known[region] = fits
    return fits


def may_be_valid(candidate: str, region: str) -> bool:
    """False only when no ``candidate`` of ASCII digits and :data:`PLAIN` separators is a number
    of ``region`` that the matcher accepts."""
    return _fits(candidate.translate(_NOT_DIGITS), region)


def regions_of(candidate: str, regions: Iterable[str]) -> list[str]:
    """Those of ``regions`` for which :func:`may_be_valid` holds, in their order."""
    digits = candidate.translate(_NOT_DIGITS)
    return [r for r in regions if _fits(digits, r)]
