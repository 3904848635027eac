"""Rules of the library-backed detectors, each on hand-picked examples with a known answer."""

from __future__ import annotations

import pytest

from nbeval.detectors import find_pii, find_secrets, iban_valid

# Examples printed in the SWIFT IBAN registry for countries the old length table lacked.
REGISTRY_EXAMPLES = [
    "RU0204452560040702810412345678901", "BI4210000100010000332045181", "DJ2100010000000154000100186",
    "FK88SC123456789012", "HN88CABF00000000000250005469", "LY83002048000020100120361", "MN121234123456789123",
    "NI45BAPR00000013000003558124", "OM810180000001299123456", "SD2129010501234001",
    "SO211000001001000100141", "YE15CBYE0001018861234567891234",
]  # fmt: skip


@pytest.mark.parametrize("iban", REGISTRY_EXAMPLES)
def test_registry_examples_of_every_country_are_ibans(iban: str) -> None:
    assert iban_valid(iban)
    found = find_pii(f"Send it to {iban} today.")
    assert [(f.kind, f.locale) for f in found] == [("iban", iban[:2])]


def test_a_changed_check_digit_is_not_an_iban() -> None:
    assert not iban_valid("RU0304452560040702810412345678901")
    assert find_pii("Send it to RU0304452560040702810412345678901 today.") == []


def test_twelve_digit_maestro_is_a_card() -> None:
    # 5018 1152 4492: Maestro prefix 5018; Luhn by hand: doubling every second digit from the
    # right (9->18->9, 4->8, 5->10->1, 1->2, 1->2, 5->10->1) gives 2+9+4+8+2+1+1+2+8+2+0+1 = 40.
    assert [f.kind for f in find_pii("Card 5018 1152 4492 was declined.")] == ["credit_card"]
    assert find_pii("Card 5018 1152 4493 was declined.") == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("PESEL: 44051401359", "pl.pesel"),
        ("BSN 111222333", "nl.bsn"),
        ("CPF 390.533.447-05", "br.cpf"),
        ("Codice fiscale RSSMRA85T10A562S", "it.codicefiscale"),
        ("NI number AB 12 34 56 C", "gb.nino"),
    ],
)
def test_national_identifiers_are_named_by_country(text: str, kind: str) -> None:
    assert [f.kind for f in find_pii(text)] == [kind]


@pytest.mark.parametrize(
    "text",
    [
        "Shipment 44051401359 left the depot.",  # a valid PESEL, but nothing says it is one
        "PESEL: 44051401358",  # wrong check digit
        "BSN 111222334",
        "CPF 390.533.447-06",
        "NI number GB 12 34 56 C",
    ],  # GB is never issued
)
def test_numbers_without_their_name_or_check_are_not_identifiers(text: str) -> None:
    assert find_pii(text) == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("TWILIO_ACCOUNT_SID=AC4f3a9c2e8b7d6a5f4e3d2c1b0a9f8e7d", "twilio_key"),
        ("Bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw7 ready", "telegram_token"),
        ("NPM_TOKEN=npm_4Fh7Kq2Lm9Xw3Rt8Yv1Bn6Cz0Pd5Sg2Jk7Qa", "npm_token"),
        ("HF_TOKEN=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", "huggingface_token"),
    ],
)
def test_token_families_from_detect_secrets_and_ours(text: str, kind: str) -> None:
    assert [f.kind for f in find_secrets(text)] == [kind]


def test_narrowing_kinds_keeps_the_label_a_full_search_gives() -> None:
    text = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENGbPxRfiCYzQ2Lp8VdN4s"  # 40 characters
    assert [f.kind for f in find_secrets(text)] == ["aws_secret_key"]
    assert find_secrets(text, kinds=["secret_assignment"]) == []


def test_unknown_kinds_are_errors_naming_them() -> None:
    with pytest.raises(ValueError, match="'passport'"):
        find_pii("x", kinds=["passport"])
    with pytest.raises(ValueError, match="'ssh_key'"):
        find_secrets("x", kinds=["ssh_key"])
