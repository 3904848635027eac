r"""``phonenumbers.PhoneNumberMatcher``'s search, done once for every region it is asked about.

The matcher walks a text the same way whatever the region: it takes the next stretch that looks
like a phone number, drops dates and time stamps, and tries the whole stretch, then the pieces
its inner patterns split it into, each piece after the same checks of its brackets, page
references and neighbouring letters. Only the last step of a try, ``parse`` and ``_verify``,
depends on the region and the leniency. :func:`find_matches` takes the tries of a text from
``_tries`` (the matcher's own code rearranged) and runs only that last step per region,
remembering it per (candidate, region):

* the tries are cut once per shape of text (digits read as "0"): the matcher's patterns read
  ``\d`` and no digit's value, but for dates ("/") and time stamps (":"), so a text with neither
  character is cut as any text of its shape ("(202) 456-1111" as "(000) 000-0000"); a search
  that needs a character the candidate lacks ("/", "(", ".") is not run;
* a try of ASCII digits and separators whose digits could not be a number the matcher accepts
  for the region (:func:`nbeval.detectors.phone_plans.may_be_valid`) is not parsed: ``parse``
  and ``_verify`` would reject it; one that could is answered by
  :func:`nbeval.detectors.phone_parse.plain_number` where it takes ``parse``'s common path, and
  by ``parse`` and ``_verify`` themselves otherwise;
* the answers are pure functions of (candidate, region), so each is computed once: the run's
  ``VALID`` search and the ``STRICT_GROUPING`` search of its spans try the same candidates, and
  ``STRICT_GROUPING`` asks what ``VALID`` asks, then more.

A successful try ends the search for one match; the next starts where the match ends, as in the
matcher. The matcher gives up after ``max_tries`` (65535) failed tries, far more than a run of
:data:`nbeval.detectors.phones.MAX_RUN` characters holds. ``tests/privacy/test_phone_speed_equivalence.py``
compares the matches with ``PhoneNumberMatcher``'s for the example numbers of every region, and
``tests/privacy/test_phone_scan_exact.py`` the shortcuts with what they stand for.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any, NamedTuple

from nbeval.detectors.phone_parse import PlainNumber, grouped, plain_number
from nbeval.detectors.phone_plans import PLAIN, may_be_valid, phonenumbers_module, plans_for

__all__ = ["Match", "find_matches", "regions_to_search"]


class Match(NamedTuple):
    """A number found: its span in the searched text, its text, and the region it belongs to."""

    start: int
    end: int
    raw_string: str
    locale: str | None


# Entries kept per cache before it is emptied (a long scan meets few repeated candidates).
_CACHE_LIMIT = 200_000
_CHUNKS: dict[tuple[str, int], tuple[tuple[tuple[int, int], ...], int] | None] = {}
_PARSED: dict[tuple[str, str], Any] = {}
_VERIFIED: dict[tuple[str, str, int], bool] = {}
_LOCALE: dict[tuple[str, str], str | None] = {}
_PLAIN_NUMBERS: dict[tuple[str, str], PlainNumber | None] = {}
_TEXT_CHUNKS: dict[tuple[str, int], object] = {}
_UNKNOWN = object()


def _remember(cache_: dict[Any, Any], key: Any, value: Any) -> Any:
    if len(cache_) >= _CACHE_LIMIT:
        cache_.clear()
    cache_[key] = value
    return value


@cache
def _library() -> Any:
    """phonenumbers' matcher module, and one matcher to lend its grouping check."""
    pn = phonenumbers_module()
    return pn.phonenumbermatcher, pn.phonenumbermatcher.PhoneNumberMatcher("", "ZZ")


def _trim(pattern: Any, candidate: str) -> str:
    if not _may_find(pattern, candidate):
        return candidate
    found = pattern.search(candidate)
    return candidate[: found.start()] if found else candidate


# For an ASCII candidate: characters one of which every match of these patterns (the matcher's,
# by their text; one phonenumbers changes is always searched) holds, so that a candidate with none
# of them is not searched.
_SPACES = "".join(c for c in map(chr, range(128)) if c.isspace())  # what \s matches in ASCII
_NEEDS = {
    "/+(.*)": "/",
    "(\\([^(]*)": "(",
    "(?u)(?:\\s-|-\\s)\\s*(.+)": "-",
    "(?u)[\u2012-\u2015\uff0d]\\s*(.+)": "",
    "(?u)\\.+\\s*([^.]+)": ".",
    "(?u)\\s+(\\S+)": _SPACES,
    "[\\\\/] *x": "x",
    "\\d{1,5}-+\\d{1,5}\\s{0,4}\\(\\d{1,4}": "(",
}


_NEEDED: dict[Any, frozenset[str] | None] = {}  # per compiled pattern: its _NEEDS, as a set


def _may_find(pattern: Any, candidate: str) -> bool:
    if pattern not in _NEEDED:
        needs = _NEEDS.get(pattern.pattern)
        _NEEDED[pattern] = None if needs is None else frozenset(needs)
    needed = _NEEDED[pattern]
    if needed is None or not candidate.isascii():
        return True
    return not needed.isdisjoint(candidate)


def _trailing_junk(candidate: str) -> str:
    """Return ``_trim(_UNWANTED_END_CHAR_PATTERN, candidate)``, skipping it where it is a no-op.

    A candidate that ends with a letter or digit is returned as it is: it ends with no character of
    that pattern (``_`` and others than ``#`` and word characters).
    """
    if candidate[-1:].isalnum():
        return candidate
    return _trim(_library()[0]._UNWANTED_END_CHAR_PATTERN, candidate)


@cache
def _ascii_rejects() -> frozenset[str]:
    """Return the ASCII characters that make the matcher reject a candidate next to them.

    Just before or after a candidate, an invalid punctuation symbol or a Latin letter makes the
    matcher reject it; the matcher is asked once.
    """
    matcher = _library()[0].PhoneNumberMatcher
    return frozenset(
        c for c in map(chr, range(128)) if matcher._is_invalid_punctuation_symbol(c) or matcher._is_latin_letter(c)
    )


def _rejects(char: str) -> bool:
    if char.isascii():
        return char in _ascii_rejects()
    matcher = _library()[0].PhoneNumberMatcher
    return bool(matcher._is_invalid_punctuation_symbol(char) or matcher._is_latin_letter(char))


_BRACKETS = frozenset("([\uff08\uff3b)]\uff09\uff3d")
_MATCHING_BRACKETS_TEXT = (
    "(?:[(\\[\uff08\uff3b])?(?:[^(\\[\uff08\uff3b)\\]\uff09\uff3d]+[)\\]\uff09\uff3d])?"
    "[^(\\[\uff08\uff3b)\\]\uff09\uff3d]+(?:[(\\[\uff08\uff3b][^(\\[\uff08\uff3b)\\]\uff09\uff3d]+"
    "[)\\]\uff09\uff3d]){0,3}[^(\\[\uff08\uff3b)\\]\uff09\uff3d]*"
)


def _context_allows(text: str, candidate: str, offset: int) -> bool:
    """The checks ``_parse_and_verify`` makes before parsing (at ``VALID`` or stricter)."""
    pm, _ = _library()
    if _BRACKETS.isdisjoint(candidate) and candidate and _MATCHING_BRACKETS_TEXT == pm._MATCHING_BRACKETS.pattern:
        pass  # no bracket to match: the pattern matches any other non-empty text
    elif not pm.fullmatch(pm._MATCHING_BRACKETS, candidate):
        return False
    if _may_find(pm._PUB_PAGES, candidate) and pm._PUB_PAGES.search(candidate):
        return False
    if offset > 0 and not pm._LEAD_PATTERN.match(candidate) and _rejects(text[offset - 1]):
        return False
    last = offset + len(candidate)
    return not (last < len(text) and _rejects(text[last]))


def _chunk_of(text: str, index: int) -> tuple[tuple[tuple[str, int], ...], int] | None:
    """Return the tries the matcher makes of the first stretch at or after ``index``.

    The (candidate, offset) pairs that the matcher's ``_find(index)`` parses for the first stretch
    it finds at or after ``index``, in its order (``_extract_match``, then
    ``_extract_inner_match``), less those its checks before parsing reject; and where its search
    goes on when none is a match. None when no stretch is left.
    """
    pm, _ = _library()
    found = pm._PATTERN.search(text, index)
    if found is None:
        return None
    tries: list[tuple[str, int]] = []

    def attempt(candidate: str, offset: int) -> None:
        if _context_allows(text, candidate, offset):
            tries.append((candidate, offset))

    start = found.start()
    candidate = _trim(pm._SECOND_NUMBER_START_PATTERN, text[start : found.end()])
    skip = (
        len(candidate) < 1
        or (  # the matcher's default min_candidate_length
            pm._SLASH_SEPARATED_DATES.search(candidate) is not None
            or (
                pm._TIME_STAMPS.search(candidate) is not None
                and pm._TIME_STAMPS_SUFFIX.match(text[start + len(candidate) :]) is not None
            )
        )
    )
    if not skip:
        attempt(candidate, start)
        for inner in pm._INNER_MATCHES:
            group = inner.search(candidate) if _may_find(inner, candidate) else None
            first = True
            while group:
                if first:
                    attempt(_trailing_junk(candidate[: group.start()]), start)
                    first = False
                attempt(_trailing_junk(group.group(1)), start + group.start(1))
                group = inner.search(candidate, group.start() + 1)
    return tuple(tries), start + len(candidate)


# ASCII digits to "0": the matcher's patterns read ``\\d`` and never a digit's value, but for dates
# ("/") and time stamps (":"), so that texts without those two characters and with the same shape
# are cut into the same candidates (phone numbers in a text share a few shapes).
_SHAPE = str.maketrans("123456789", "000000000")


def _shape_chunk(text: str, index: int) -> tuple[tuple[tuple[int, int], ...], int] | None:
    """Return :func:`_chunk_of` as (offset, length) pairs, cached per shape of text.

    Computed once per (shape, index), or per (text, index) for a text with a date's or a time's
    character.
    """
    key = (text.translate(_SHAPE) if "/" not in text and ":" not in text else text, index)
    if key not in _CHUNKS:
        found = _chunk_of(key[0], index)
        spans = None if found is None else (tuple((offset, len(c)) for c, offset in found[0]), found[1])
        _remember(_CHUNKS, key, spans)
    return _CHUNKS[key]


def _chunk(text: str, index: int) -> tuple[tuple[tuple[str, int], ...], int] | None:
    """Return the tries of :func:`_shape_chunk` cut from ``text``.

    They are kept for the searches of one text (every region's, then the grouping's) that ask again.
    """
    key = (text, index)
    found = _TEXT_CHUNKS.get(key, _UNKNOWN)
    if found is _UNKNOWN:
        spans = _shape_chunk(text, index)
        found = None if spans is None else (tuple((text[o : o + n], o) for o, n in spans[0]), spans[1])
        if len(_TEXT_CHUNKS) >= 10_000:  # a run's searches come together: a small cache serves them
            _TEXT_CHUNKS.clear()
        _TEXT_CHUNKS[key] = found
    return found  # type: ignore[return-value]


def _tries(text: str, index: int) -> Iterator[tuple[str, int]]:
    """Every (candidate, offset) that ``_find(index)`` would parse if none were a match."""
    chunk = _chunk(text, index)
    while chunk is not None:
        yield from chunk[0]
        chunk = _chunk(text, chunk[1])


def _parsed(candidate: str, region: str) -> Any:
    """``parse(candidate, region, keep_raw_input=True)`` as the matcher calls it, or None where it raises.

    Looked up on the matcher's module on every call, as the matcher does.
    """
    key = (candidate, region)
    if key in _PARSED:
        return _PARSED[key]
    pm, _ = _library()
    try:
        number = pm.parse(candidate, region, keep_raw_input=True)
    except pm.NumberParseException:
        number = None
    return _remember(_PARSED, key, number)


def _verified(candidate: str, region: str, leniency: int) -> bool:
    """True when the matcher accepts ``candidate`` (its context already checked) for ``region``."""
    key = (candidate, region, leniency)
    known = _VERIFIED.get(key)
    if known is not None:
        return known
    pm, lender = _library()
    strict = leniency == pm.Leniency.STRICT_GROUPING
    if leniency not in (pm.Leniency.VALID, pm.Leniency.STRICT_GROUPING):
        ok = (number := _parsed(candidate, region)) is not None and pm._verify(leniency, number, candidate, lender)
    elif PLAIN.fullmatch(candidate) and not may_be_valid(candidate, region):
        ok = False  # parse and _verify would reject it
    elif (plain := _plain(candidate, region)) is not None:
        ok = grouped(plain, candidate) if strict else plain.valid
    elif strict:  # what VALID checks, then slashes and grouping (``_verify_strict_grouping``)
        number = _parsed(candidate, region)
        ok = (
            _verified(candidate, region, pm.Leniency.VALID)
            and not pm._contains_more_than_one_slash_in_national_number(number, candidate)
            and lender._check_number_grouping_is_valid(number, candidate, pm._all_number_groups_remain_grouped)
        )
    else:
        number = _parsed(candidate, region)
        ok = number is not None and pm._verify(leniency, number, candidate, lender)
    return bool(_remember(_VERIFIED, key, ok))


def _plain(candidate: str, region: str) -> PlainNumber | None:
    """:func:`plain_number`, once per (candidate, region)."""
    key = (candidate, region)
    if key not in _PLAIN_NUMBERS:
        _remember(_PLAIN_NUMBERS, key, plain_number(candidate, region))
    return _PLAIN_NUMBERS[key]


def _locale(candidate: str, region: str) -> str | None:
    key = (candidate, region)
    plain = _plain(candidate, region)
    if plain is not None:
        return plain.region
    if key not in _LOCALE:
        pn = phonenumbers_module()
        _remember(_LOCALE, key, pn.region_code_for_number(_parsed(candidate, region)))
    return _LOCALE[key]


def regions_to_search(text: str, regions: tuple[str, ...]) -> tuple[str, ...]:
    """Return the ``regions`` for which :func:`find_matches` may find something in ``text``.

    In order: those for which a try of its first search could be valid (without a first match there
    is no second). A try other than ASCII digits and :data:`PLAIN` separators may be valid anywhere.
    """
    plans = plans_for(regions)
    every = (1 << len(regions)) - 1
    found = 0
    for candidate, _ in _tries(text, 0):
        if not PLAIN.fullmatch(candidate):
            return regions
        found |= plans.mask(candidate)  # every region at once
        if found == every:
            return regions
    return tuple(r for i, r in enumerate(regions) if found >> i & 1)


def find_matches(text: str, region: str, leniency: int | None = None) -> list[Match]:
    """The matches of ``PhoneNumberMatcher(text, region, leniency)`` (``VALID`` by default)."""
    pm, _ = _library()
    leniency = pm.Leniency.VALID if leniency is None else leniency
    matches: list[Match] = []
    index = 0
    while True:
        for candidate, offset in _tries(text, index):
            if _verified(candidate, region, leniency):
                end = offset + len(candidate)
                matches.append(Match(offset, end, candidate, _locale(candidate, region)))
                index = end
                break
        else:
            return matches
