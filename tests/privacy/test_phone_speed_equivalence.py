"""The fast phone scan finds what ``phonenumbers.PhoneNumberMatcher`` finds (issue 35, point 13).

``nbeval.detectors.phone_matcher.find_matches`` walks a text as the matcher does, once for every
region, and skips the candidates a region's plan rules out; ``phones`` skips the regions none of a
run's candidates could belong to. These tests compare both with phonenumbers itself: the matches
with ``PhoneNumberMatcher``'s at ``VALID`` and ``STRICT_GROUPING`` for the example numbers of every
region, written in each format and with other separators, and ``find_pii`` with a scan that asks
``PhoneNumberMatcher`` about every region of every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nbeval.detectors import find_pii, phones
from nbeval.detectors.phone_matcher import Match, find_matches
from tests.privacy.test_redteam_detectors import phone_like

pn: Any = phones._phonenumbers()
_TYPES = (
    "FIXED_LINE",
    "MOBILE",
    "TOLL_FREE",
    "PREMIUM_RATE",
    "SHARED_COST",
    "VOIP",
    "PERSONAL_NUMBER",
    "PAGER",
    "UAN",
    "VOICEMAIL",
)


def _written(region: str) -> Iterator[str]:
    """The example numbers of ``region`` as people write them, in sentences."""
    for kind in _TYPES:
        example = pn.example_number_for_type(region, getattr(pn.PhoneNumberType, kind))
        if example is None:
            continue
        for fmt in (pn.PhoneNumberFormat.NATIONAL, pn.PhoneNumberFormat.INTERNATIONAL, pn.PhoneNumberFormat.E164):
            s = pn.format_number(example, fmt)
            yield f"Call {s} now, ref {s.replace(' ', '-')}; or {s.replace(' ', '.')} / ({s.replace('-', ' ')})"
        nsn = pn.national_significant_number(example)
        yield f"tel: {nsn[:3]} {nsn[3:6]} {nsn[6:]}x12, 0{nsn} and 00{example.country_code} {nsn} / {nsn[:-1]}"


def _real(text: str, region: str, leniency: Any = None) -> list[Match]:
    """The matches of phonenumbers' own ``PhoneNumberMatcher``."""
    found = pn.PhoneNumberMatcher(text, region, leniency=pn.Leniency.VALID if leniency is None else leniency)
    return [Match(m.start, m.end, m.raw_string, pn.region_code_for_number(m.number)) for m in found]


REGIONS = sorted(pn.SUPPORTED_REGIONS)


def test_matches_are_phonenumbers_matches_for_every_region() -> None:
    """Each region's numbers, searched from that region, and every seventh region's also from
    a few default ones (where national forms of other plans meet candidates to rule out)."""
    checked = differing = 0
    for i, region in enumerate(REGIONS):
        text = "\n".join(_written(region))
        for searched in (region, "US", "DE", "IN")[: 1 if i % 7 else 4]:
            for leniency in (pn.Leniency.VALID, pn.Leniency.STRICT_GROUPING):
                checked += 1
                if find_matches(text, searched, leniency) != _real(text, searched, leniency):
                    differing += 1
                    assert find_matches(text, searched, leniency) == _real(text, searched, leniency), (region, searched)
    assert checked > 2 * len(REGIONS) and differing == 0
    assert len(REGIONS) > 240


def test_matches_are_phonenumbers_matches_on_phone_shaped_text() -> None:
    text = phone_like(4_000, seed=11)
    for region in phones.DEFAULT_PHONE_REGIONS:
        for leniency in (pn.Leniency.VALID, pn.Leniency.STRICT_GROUPING):
            assert find_matches(text, region, leniency) == _real(text, region, leniency), region


@pytest.fixture
def matcher_on_every_region(monkeypatch: pytest.MonkeyPatch) -> None:
    """``find_phones`` as it would be with phonenumbers' matcher asked about every region."""
    monkeypatch.setattr(phones, "_matcher", lambda: _real)
    monkeypatch.setattr(phones, "regions_to_search", lambda run, regions: regions)


def _texts() -> Iterator[str]:
    yield phone_like(4_000, seed=7)
    for region in REGIONS[::5]:
        yield "\n".join(_written(region))


def test_find_pii_is_what_phonenumbers_matcher_gives(request: pytest.FixtureRequest) -> None:
    texts = list(_texts())
    fast = [find_pii(t) for t in texts]
    request.getfixturevalue("matcher_on_every_region")
    reference = [find_pii(t) for t in texts]
    assert sum(len(f) for f in reference) > 500
    assert [i for i, (a, b) in enumerate(zip(fast, reference, strict=True)) if a != b] == []
