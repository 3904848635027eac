"""Tests for nbeval.detectors: PII, secrets and encoded-text detection.

The golden tables in tests/golden/ hold hand-picked positives (public test card numbers,
IBAN registry examples, randomly generated fake keys) and negatives (look-alikes). Checksum
tests use hand-worked examples, and encoding tests build their inputs with the stdlib codecs.
"""

from __future__ import annotations

import base64
import codecs
import dataclasses
import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nbeval.detectors import (
    Decoded,
    Finding,
    decode_for_category,
    encodings_in,
    find_encoded,
    find_pii,
    find_secrets,
    iban_valid,
    luhn_valid,
    pii_summary,
    secrets_summary,
    ssn_valid,
)
from nbeval.errors import EvaluatorError

GOLDEN = Path(__file__).parent / "golden"
SUITES = {"pii": ("pii_cases.json", find_pii), "secrets": ("secret_cases.json", find_secrets)}


# Cases whose label changed when phone numbers moved to Google's numbering plans (issue 17);
# the golden files are shared, so the new label and its reason live here.
RELABELLED: dict[str, dict[str, Any]] = {
    # A phone word ("Call") now vouches for a bare run of digits.
    "Call 4155552671 tomorrow": {"kinds": ["phone"]},
    # 555-0100..0199 is reserved for fiction by the North American Numbering Plan: no one's number.
    "Office: 212-555-0187 ext. 4": {"kinds": []},
}


def _cases(suite: str) -> list[dict]:
    cases = json.loads((GOLDEN / SUITES[suite][0]).read_text(encoding="utf-8"))["cases"]
    return [RELABELLED.get(c["text"], c) | {"text": c["text"]} for c in cases]


def _kinds(suite: str, text: str) -> set[str]:
    return {f.kind for f in SUITES[suite][1](text)}


def _params(suite: str) -> list:
    return [pytest.param(suite, c, id=f"{suite}-{i}") for i, c in enumerate(_cases(suite))]


# --- golden tables -------------------------------------------------------------------------


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_table_is_big_enough_and_well_formed(suite: str) -> None:
    cases = _cases(suite)
    positives = [c for c in cases if c["kinds"]]
    negatives = [c for c in cases if not c["kinds"]]
    assert len(positives) >= 30
    assert len(negatives) >= 30
    flagged = [c for c in cases if c.get("known_miss")]
    assert len(flagged) <= 3, "known misses must stay a small, explained minority"
    assert all(c.get("reason") for c in flagged)


@pytest.mark.parametrize(("suite", "case"), _params("pii") + _params("secrets"))
def test_golden_case(suite: str, case: dict) -> None:
    found = _kinds(suite, case["text"])
    expected = set(case["kinds"])
    if case.get("known_miss"):
        # A flagged case must really still be wrong, so fixed limitations lose their flag.
        assert found != expected, f"known miss now passes, drop its flag: {case['reason']}"
    else:
        assert found == expected


def _precision_recall(suite: str) -> tuple[float, float]:
    tp = fp = fn = 0
    for case in _cases(suite):
        expected, found = set(case["kinds"]), _kinds(suite, case["text"])
        tp += len(expected & found)
        fp += len(found - expected)
        fn += len(expected - found)
    return tp / (tp + fp), tp / (tp + fn)


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_table_precision_and_recall(suite: str) -> None:
    precision, recall = _precision_recall(suite)
    assert precision >= 0.95
    assert recall >= 0.95


# --- checksums and rules ---------------------------------------------------------------------


def test_luhn_hand_worked() -> None:
    # 7992739871 + check digit 3: doubling every second digit from the right gives
    # 7,18->9,9,4,7,6,9,16->7,7,2 -> sum 67, and 67 + 3 = 70 is a multiple of 10.
    assert luhn_valid("79927398713")
    assert not luhn_valid("79927398710")
    assert luhn_valid("4111 1111 1111 1111")
    assert not luhn_valid("4111 1111 1111 1112")
    assert not luhn_valid("")


def test_iban_mod97_hand_worked() -> None:
    # GB82WEST12345698765432: move "GB82" to the end and map letters A=10..Z=35:
    # W=32 E=14 S=28 T=29 ... G=16 B=11 -> 3214282912345698765432161182, which is 1 mod 97.
    assert int("3214282912345698765432161182") % 97 == 1
    assert iban_valid("GB82WEST12345698765432")
    assert iban_valid("GB82 WEST 1234 5698 7654 32")
    assert not iban_valid("GB83WEST12345698765432")  # wrong check digits
    assert not iban_valid("GB82WEST1234569876543")  # one character short for GB
    assert not iban_valid("ZZ82WEST12345698765432")  # no such country


def test_ssn_rules() -> None:
    assert ssn_valid("536", "22", "8741")
    for area in ("000", "666", "900", "987"):
        assert not ssn_valid(area, "22", "8741")
    assert not ssn_valid("536", "00", "8741")
    assert not ssn_valid("536", "22", "0000")
    assert [f.kind for f in find_pii("ids 536-22-8741 and 666-22-8741")] == ["us_ssn"]


def test_email_documentation_domains_are_ignored() -> None:
    text = "a@example.com b@sub.example.org c@x.test d@y.invalid e@z.localhost f@real-mail.de"
    found = find_pii(text)
    assert [text[f.start : f.end] for f in found] == ["f@real-mail.de"]


def test_private_addresses_only_on_request() -> None:
    text = "hosts 10.1.2.3 and 192.168.0.7 and ::1"
    assert find_pii(text) == []
    kinds = [f.kind for f in find_pii(text, include_private_ip=True)]
    assert kinds == ["ip_address"] * 3  # the flag admits loopback "::1" too


def test_spans_point_at_the_value() -> None:
    text = "mail me: someone@mailbox.org, or call +44 20 7946 0958."
    spans = [text[f.start : f.end] for f in find_pii(text)]
    assert spans == ["someone@mailbox.org", "+44 20 7946 0958"]


def test_finding_is_frozen() -> None:
    finding = find_pii("4111111111111111")[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.kind = "x"  # type: ignore[misc]


# --- redaction -------------------------------------------------------------------------------


def _alnum(s: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", s)


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_redaction_never_leaks_the_value(suite: str) -> None:
    checked = 0
    for case in _cases(suite):
        for f in SUITES[suite][1](case["text"]):
            value = case["text"][f.start : f.end]
            assert value not in f.redacted
            assert _alnum(value) not in _alnum(f.redacted)
            checked += 1
    assert checked >= 30


def test_redaction_shapes() -> None:
    (card,) = find_pii("4111 1111 1111 1111")
    assert card.redacted == "**** **** **** 1111"
    (mail,) = find_pii("john@mailhost.com")
    assert mail.redacted == "j***@m***.com"
    (ssn,) = find_pii("536-22-8741")
    assert ssn.redacted == "***-**-8741"


def test_summary_names_kinds_and_counts_only() -> None:
    text = "x@mailhost.com, y@mailhost.com, 4111 1111 1111 1111"
    found = find_pii(text)
    summary = pii_summary(found)
    assert summary == "found: credit_card (1), email (2)"
    assert "mailhost" not in summary and "1111" not in summary
    assert pii_summary([]) == "found: nothing"
    assert secrets_summary([Finding("jwt", 0, 5, "eyJ****")]) == "found: jwt (1)"


# --- secrets specifics -----------------------------------------------------------------------


def test_secret_overlaps_keep_the_specific_kind() -> None:
    key = "sk-ant-api03-" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY" * 3
    assert [f.kind for f in find_secrets(f"key={key}")] == ["anthropic_key"]


def test_pem_span_covers_the_whole_block() -> None:
    body = base64.b64encode(bytes(range(48))).decode()
    text = f"x\n-----BEGIN EC PRIVATE KEY-----\n{body}\n-----END EC PRIVATE KEY-----\ny"
    (f,) = find_secrets(text)
    assert text[f.start : f.end].endswith("-----END EC PRIVATE KEY-----")
    assert body not in f.redacted


# --- encodings -------------------------------------------------------------------------------

PLAIN = "Customer SSN is 536-22-8741, keep it private."


def test_base64_round_trip_inside_text() -> None:
    encoded = base64.b64encode(PLAIN.encode()).decode()
    text = f"Sure! Here it is: {encoded} -- enjoy"
    (d,) = find_encoded(text)
    assert (d.encoding, d.decoded) == ("base64", PLAIN)
    assert text[d.start : d.end] == encoded


def test_base64_urlsafe_and_unpadded() -> None:
    raw = b"Who are you? What do you want?"
    urlsafe = base64.urlsafe_b64encode(raw).decode()
    assert "-" in urlsafe or "_" in urlsafe  # the case really exercises the url-safe alphabet
    (d,) = find_encoded(f"payload {urlsafe.rstrip('=')} end")
    assert d.decoded == raw.decode()


def test_non_ascii_text_decodes_when_the_category_says_so() -> None:
    plain = "Mot de passe: très_secret, numéro 536-22-8741"
    encoded = base64.b64encode(plain.encode()).decode()
    assert decode_for_category(f"Voilà : {encoded}", ["encoding:base64"]) == f"Voilà : {plain}"
    chinese = "密码是 536-22-8741"
    whole = base64.b64encode(chinese.encode()).decode()
    assert find_encoded(whole) == []  # mostly non-ASCII: too risky without a hint
    assert decode_for_category(whole, ["encoding:base64"]) == chinese


@pytest.mark.parametrize("category", ["encoding:base64", "encoding:hex", "encoding:base32"])
def test_hinted_decoding_leaves_plain_words_and_numbers_alone(category: str) -> None:
    text = "See the encyclopedia entry; call 4155552671 or use 4142135623730949 as seed."
    assert decode_for_category(text, [category]) == text
    assert decode_for_category("4155552671", [category]) == "4155552671"


def test_hinted_whole_answer_in_digit_only_hex() -> None:
    assert b"secret".hex().isdigit()
    assert decode_for_category(b"secret".hex(), ["encoding:base16"]) == "secret"


@pytest.mark.parametrize("identifier", ["MyEventHandler", "Undocumented", "bidiagnalization"])
def test_identifiers_that_decode_to_printable_bytes_are_not_text(identifier: str) -> None:
    assert base64.b64decode(identifier + "=" * (-len(identifier) % 4))  # valid base64 indeed
    assert find_encoded(f"call {identifier} now") == []


def test_hex_and_base32_round_trips() -> None:
    hexed = PLAIN.encode().hex().upper()
    (d,) = find_encoded(f"hex: {hexed}")
    assert (d.encoding, d.decoded) == ("base16", PLAIN)
    spaced = " ".join(f"{b:02x}" for b in b"secret words")
    (d,) = find_encoded(f"bytes {spaced}.")
    assert d.decoded == "secret words"
    b32 = base64.b32encode(PLAIN.encode()).decode()
    (d,) = find_encoded(b32)
    assert (d.encoding, d.decoded) == ("base32", PLAIN)


def test_digit_only_hex_of_text_is_found_but_numbers_are_not() -> None:
    hexed = b"secret text".hex()
    assert hexed.isdigit()
    assert [d.decoded for d in find_encoded(hexed)] == ["secret text"]
    assert find_encoded("call 5551234567 or card 4111111111111111") == []


@pytest.mark.parametrize(
    "text",
    [
        "Internationalization and localization are hard.",
        "id 123e4567-e89b-12d3-a456-426614174000",
        "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "path /usr/local/lib/python3.11/site-packages",
        "getElementById and addEventListener",
        "MAC 00:1A:2B:3C:4D:5E",
        "digits 7369655941662062 and 5670477847544458",  # hex of "sieYAf b", "VpGxGTDX"
        "table 41594459455946594959505951595259545955595659585959",  # "AYDYEYFY..."
    ],
)
def test_ordinary_text_has_no_encoded_span(text: str) -> None:
    assert find_encoded(text) == []


def test_category_hints() -> None:
    assert encodings_in(["encoding:base64"]) == ["base64"]
    assert encodings_in(["perturbed_by:Base64Perturbator", "topic:privacy"]) == ["base64"]
    assert encodings_in(["encoding:hex"]) == ["base16"]
    assert encodings_in(["ENCODING:BASE16", "encoding:base32"]) == ["base32", "base16"]
    assert encodings_in(["perturbed_by:Rot13Perturbator"]) == ["rot13"]
    assert encodings_in(["privacy", "pii"]) == []


def test_decode_for_category_whole_and_partial() -> None:
    whole = base64.b64encode(PLAIN.encode()).decode()
    wrapped = "\n".join(whole[i : i + 20] for i in range(0, len(whole), 20))
    assert decode_for_category(f"```\n{wrapped}\n```", ["encoding:base64"]) == PLAIN
    text = f"The answer is {PLAIN.encode().hex()} as requested."
    assert decode_for_category(text, ["perturbed_by:Base16"]) == f"The answer is {PLAIN} as requested."


def test_decode_for_category_rot13() -> None:
    upper, lower = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
    table = str.maketrans(upper + lower, upper[13:] + upper[:13] + lower[13:] + lower[:13])
    scrambled = PLAIN.translate(table)
    assert scrambled != PLAIN
    assert decode_for_category(scrambled, ["encoding:rot13"]) == PLAIN
    assert codecs.decode(scrambled, "rot_13") == PLAIN


def test_decode_for_category_leaves_text_alone() -> None:
    assert decode_for_category(PLAIN, ["encoding:base64"]) == PLAIN
    encoded = base64.b64encode(PLAIN.encode()).decode()
    assert decode_for_category(encoded, ["privacy"]) == encoded  # no encoding category


def test_unknown_encoding_is_a_clear_error() -> None:
    with pytest.raises(EvaluatorError, match="base99"):
        find_encoded("x", encodings=["base99"])


def test_decoded_is_frozen_dataclass() -> None:
    d = Decoded("base64", 0, 4, "hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.decoded = "x"  # type: ignore[misc]


# --- performance -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a" * 200_000,
        "1 " * 100_000,
        "1-" * 100_000,
        "+1" + " 2" * 100_000,
        "a." * 100_000 + "@",
        "x@" + "a." * 100_000,
        "AB12" + " C" * 100_000,
        "1." * 100_000,
        "ff:" * 100_000,
        "eyJ" + "a" * 200_000 + ".",
        "sk-" + "-" * 200_000,
        "A" * 200_000 + "=",
    ],
    ids=lambda t: repr(t[:8]),
)
def test_adversarial_inputs_stay_fast(text: str) -> None:
    # CPU time of this process, not the wall clock: busy neighbours do not count (the slowest of
    # these texts takes about 0.4 s)
    start = time.process_time()
    find_pii(text)
    find_secrets(text)
    find_encoded(text)
    assert time.process_time() - start < 5.0


def test_counts_on_a_mixed_text() -> None:
    text = (
        "Reach ana@mailhost.org or bo@mailhost.org, card 5555-5555-5555-4444, "
        "IBAN DE89370400440532013000, host 93.184.216.34."
    )
    assert Counter(f.kind for f in find_pii(text)) == Counter(
        {"email": 2, "credit_card": 1, "iban": 1, "ip_address": 1}
    )
