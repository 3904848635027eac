"""The phone scan's shortcuts give what phonenumbers gives (issue 35, point 13).

The scan of phone-shaped text got faster by three shortcuts; each is compared here with what it
stands for, and ``find_pii`` end to end with a scan that asks phonenumbers' own matcher about
every region of every run (the acceptance rules of ``phones`` unchanged):

* the plan automata (``phone_dfa``, ``phone_plans``) accept the digits the plan patterns
  (``_candidate_pattern``) fullmatch, for the default regions and a sample of the others;
* ``plain_number`` and ``grouped`` (``phone_parse``) answer as ``parse``, ``_verify`` at
  ``VALID`` and ``STRICT_GROUPING`` and ``region_code_for_number``, for every region's example
  numbers written in several ways, random plain candidates, and the tries of phone-shaped text;
* the candidates of a text are cut once per shape (``phone_matcher._tries``) as
  ``_chunk_of`` cuts the text itself, dates and times included;
* ``find_pii``: random phone-shaped text (fixed seeds), text with phone words, references,
  dates, times, account and card numbers around the numbers, and the privacy corpora.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from nbeval.detectors import find_pii, phone_matcher, phone_parse, phone_plans, phones
from tests.privacy.corpus import build_corpus
from tests.privacy.external_corpus import build_external_corpus
from tests.privacy.test_phone_speed_equivalence import _real
from tests.privacy.test_redteam_detectors import phone_like

pn: Any = phones._phonenumbers()
pm: Any = pn.phonenumbermatcher
REGIONS = sorted(pn.SUPPORTED_REGIONS)
DEFAULT = tuple(phones.DEFAULT_PHONE_REGIONS)
SAMPLE = (*DEFAULT, *REGIONS[::12])  # the default regions and every twelfth other one


def _digit_strings(region: str, rng: random.Random, n: int) -> list[str]:
    """Digits as a region's candidates start: its country code, national prefix, international
    prefix, zeros, and the national numbers of its examples with a digit changed or added."""
    meta = pn.PhoneMetadata.metadata_for_region(region)
    starts = ["", "0", "00", "1", "011", str(meta.country_code), f"00{meta.country_code}"]
    starts += [p for p in (meta.national_prefix, meta.national_prefix_for_parsing) if p and p.isdigit()]
    examples = [
        pn.national_significant_number(e)
        for kind in ("FIXED_LINE", "MOBILE", "TOLL_FREE", "PREMIUM_RATE", "VOIP", "UAN")
        if (e := pn.example_number_for_type(region, getattr(pn.PhoneNumberType, kind))) is not None
    ]
    found = []
    for _ in range(n):
        if examples and rng.random() < 0.4:
            body = list(rng.choice(examples))
            if rng.random() < 0.7:
                body[rng.randrange(len(body))] = rng.choice("0123456789")
            if rng.random() < 0.2:
                body.insert(rng.randrange(len(body) + 1), rng.choice("0123456789"))
            tail = "".join(body)
        else:
            tail = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 17)))
        found.append(rng.choice(starts) + tail)
    return found


def test_plan_automata_accept_what_the_plan_patterns_match() -> None:
    rng = random.Random(35)
    checked = accepted = 0
    for region in SAMPLE:
        pattern = phone_plans._candidate_pattern(region)
        plans = phone_plans.Plans((region,))
        for digits in _digit_strings(region, rng, 1500):
            expected = pattern is None or pattern.fullmatch(digits) is not None
            assert bool(plans.mask(digits) & 1) == expected, (region, digits)
            checked += 1
            accepted += expected
    # All the default regions read together answer as each does alone.
    together = phone_plans.Plans(DEFAULT)
    for digits in _digit_strings("US", rng, 2000) + _digit_strings("DE", rng, 2000):
        bits = sum(
            1 << i
            for i, r in enumerate(DEFAULT)
            if (p := phone_plans._candidate_pattern(r)) is None or p.fullmatch(digits)
        )
        assert together.mask(digits) == bits, digits
    assert checked > 40_000 and accepted > 2_000


def _layouts(region: str) -> Iterator[str]:
    """A region's example numbers as people write them: national and international forms, their
    digits only, with dashes, dots, brackets, a national prefix, a digit dropped or added."""
    for kind in ("FIXED_LINE", "MOBILE", "TOLL_FREE", "PREMIUM_RATE", "SHARED_COST", "VOIP", "PERSONAL_NUMBER", "UAN"):
        example = pn.example_number_for_type(region, getattr(pn.PhoneNumberType, kind))
        if example is None:
            continue
        for fmt in (pn.PhoneNumberFormat.NATIONAL, pn.PhoneNumberFormat.INTERNATIONAL):
            written = pn.format_number(example, fmt).lstrip("+")
            yield from (written, written.replace(" ", "-"), written.replace(" ", "."), written.replace(" ", ""))
        nsn = pn.national_significant_number(example)
        yield from (f"({nsn[:3]}) {nsn[3:6]}-{nsn[6:]}", f"0{nsn}", f"0 {nsn[:2]} {nsn[2:]}", nsn[:-1], f"{nsn}7")


def _plain_candidates(rng: random.Random) -> list[str]:
    found = [c for region in REGIONS for c in _layouts(region)]
    for _ in range(6000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(2, 15)))
        found.append(
            "".join(d + rng.choice(["", "", "", " ", "-", ".", ") ", " (", "  "]) for d in digits).strip() or digits
        )
    text = phone_like(20_000, seed=21)
    found += [c for run in phones._RUN.finditer(text) for c, _ in phone_matcher._tries(run.group(), 0)]
    return found


def _by_phonenumbers(candidate: str, region: str) -> tuple[bool, bool, str | None]:
    """(accepted at VALID, accepted at STRICT_GROUPING, its region where valid), as the matcher."""
    lender = phone_matcher._library()[1]
    try:
        number = pm.parse(candidate, region, keep_raw_input=True)
    except pm.NumberParseException:
        return False, False, None
    valid = pm._verify(pn.Leniency.VALID, number, candidate, lender)
    strict = pm._verify(pn.Leniency.STRICT_GROUPING, number, candidate, lender)
    return valid, strict, pn.region_code_for_number(number) if valid else None


def test_plain_numbers_answer_as_parse_and_verify() -> None:
    rng = random.Random(13)
    answered = valid = with_code = 0
    for candidate in _plain_candidates(rng):
        for region in (*rng.sample(DEFAULT, 4), rng.choice(REGIONS)):
            plain = phone_parse.plain_number(candidate, region)
            if plain is None:
                continue  # phonenumbers answers for it
            got = (plain.valid, phone_parse.grouped(plain, candidate), plain.region if plain.valid else None)
            assert got == _by_phonenumbers(candidate, region), (candidate, region)
            answered += 1
            valid += plain.valid
            with_code += plain.with_code
    assert answered > 60_000 and valid > 5_000 and with_code > 300


def test_every_region_s_own_numbers_answer_as_parse_and_verify() -> None:
    """Also those written with their country code but no "+" (``_layouts``' international
    forms), in the regions that share a code with another (CA, GG, VA...) too."""
    with_code = 0
    for region in REGIONS:
        for candidate in _layouts(region):
            plain = phone_parse.plain_number(candidate, region)
            if plain is not None:
                got = (plain.valid, phone_parse.grouped(plain, candidate), plain.region if plain.valid else None)
                assert got == _by_phonenumbers(candidate, region), (candidate, region)
                with_code += plain.with_code
    assert with_code > 1_000


def _texts(rng: random.Random) -> Iterator[str]:
    """Short texts of digits, separators, and the characters dates, times and extensions use."""
    chars = "0123456789 -().()/x\t.,;:+#_"
    for _ in range(8000):
        yield "".join(rng.choice(chars) if rng.random() < 0.4 else rng.choice("0123456789") for _ in range(40))
    for _ in range(500):
        yield (
            f"{rng.randint(1990, 2029)}-{rng.randint(1, 12):02d}-{rng.randint(1, 31):02d} "
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} or {rng.randint(1, 31)}/{rng.randint(1, 12)}/"
            f"{rng.randint(10, 99)} or 555 {rng.randint(1000, 9999)}"
        )


def test_candidates_are_cut_as_the_text_itself_is() -> None:
    """``_tries`` cuts a text once per shape (digits read as "0"); ``_chunk_of`` on the text
    itself must give the same candidates."""
    for text in _texts(random.Random(4)):
        index, direct = 0, list[tuple[str, int]]()
        while (chunk := phone_matcher._chunk_of(text, index)) is not None:
            direct.extend(chunk[0])
            index = chunk[1]
        assert list(phone_matcher._tries(text, 0)) == direct, text


def test_phone_words_are_looked_for_only_where_their_letters_are() -> None:
    """``_word_before`` skips the pattern in an ASCII window without a phone word's letters; it
    answers as the pattern, whatever the case, the accents and the digits around the words."""
    rng = random.Random(8)
    pieces = ["tel", "TEL", "Phone", "cAlL", "Telefon12", "telefonnummer", "komórka", "Téléphone", "電話", "☎",
              "fax", "order", "or", "telly", "x", ": ", " ", "\n", "5", "(", "-", "whatsApp", "numéro"]  # fmt: skip
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) + "5"
        end = len(text) - 1
        expected = phones._PHONE_WORDS.search(text, max(0, end - 64), end) is not None
        assert phones._word_before(text, end) == expected, text


def _sentences(rng: random.Random, n: int) -> str:
    """Numbers with what comes around them in answers: phone words, references, dates, times,
    account and card numbers, prices, extensions, international forms."""
    around = [
        "call {}", "tel: {}", "Phone {} (office)", "order #{}", "invoice {}", "ISBN {}", "{} fax",
        "IBAN DE89 3704 0044 0532 0130 00 and {}", "SSN 123-45-6789 or {}", "card 4111 1111 1111 1111, {}",
        "on 2024-01-02 at 10:30 {}", "{} on 12/05/2023", "{} x123", "{} ext. 45", "$1,234.56 or {}",
        "+{}", "00{}", "17151 2450 Crown St, {}", "{}\tnext", "Telefon: {}", "whatsapp {}", "{}",
    ]  # fmt: skip
    numbers = [
        "+44 20 7946 0958", "+1 (202) 456-1111", "0049 30 123456", "(030) 1234567", "020 7946 0162",
        "06 12 34 56 78", "(11) 91234-5678", "98765 43210", "090-0854-3728", "0 30 1234567",
        "612 345 678", "+33 1 23 45 67 89", "202.456.1111", "1-800-555-0199", "0612345678",
    ]  # fmt: skip
    parts = []
    for _ in range(n):
        number = rng.choice(numbers) if rng.random() < 0.5 else phone_like(rng.randint(8, 16), rng.randint(0, 10**6))
        parts.append(rng.choice(around).format(number.strip(" ,;/\n")))
    return ". ".join(parts)


@pytest.fixture
def matcher_on_every_region(monkeypatch: pytest.MonkeyPatch) -> None:
    """``find_phones`` as it would be with phonenumbers' matcher asked about every region."""
    monkeypatch.setattr(phones, "_matcher", lambda: _real)
    monkeypatch.setattr(phones, "regions_to_search", lambda run, regions: regions)


def test_find_pii_is_what_phonenumbers_matcher_gives_on_varied_text(request: pytest.FixtureRequest) -> None:
    rng = random.Random(77)
    texts = [phone_like(6_000, seed=s) for s in (1, 2, 3)]
    texts += [_sentences(rng, 150) for _ in range(3)]
    texts += [" ".join(case.text for case in corpus) for corpus in (build_corpus(), build_external_corpus())]
    fast = [find_pii(t) for t in texts]
    request.getfixturevalue("matcher_on_every_region")
    reference = [find_pii(t) for t in texts]
    assert sum(f.kind == "phone" for found in reference for f in found) > 500
    assert [i for i, (a, b) in enumerate(zip(fast, reference, strict=True)) if a != b] == []
