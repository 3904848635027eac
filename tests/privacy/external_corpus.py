"""A second labelled corpus for the privacy detectors, made of test data other projects wrote.

``corpus.py`` was written beside the detectors, so their scores on it are in-sample. This corpus
is not: every positive and every hard negative here comes from the public test data or
documented examples of tools nbeval did not write, with its source (repository, path and the
commit it was read at) in a comment:

* secrets: the rule tests of gitleaks (``cmd/generate/config/rules/*.go``, the fixed true and
  false positives; values those tests generate at run time are not used), trufflehog's detector
  tests (Azure storage keys, Azure SAS tokens, GitLab), detect-secrets' plugin tests (GitLab,
  Discord, Slack, JWT, Azure) and kingfisher's rule examples;
* personal data: Presidio's recognizer tests (cards, IBANs, e-mail, SSN, NIE, NIF, NINO,
  PESEL, Aadhaar), the card numbers of Braintree's credit-card-type tests that pass Luhn,
  python-email-validator's internationalised addresses, and Presidio-research's synthetic
  evaluation set (``external/presidio_research_synth.json``, a selection described in it).

The fixtures live in ``external_secrets.py`` and ``external_pii.py``; this module adds the
Presidio-research records and builds the corpus.

Labels are the source's own (its positives and negatives), with these exceptions, each noted
where it applies: a value the source accepts only to test a regex bound or offset is left out,
never turned into a negative; a published emulator key is a negative (nbeval's decision, see
:mod:`nbeval.detectors.azure`); bare nine-digit SSNs get the context word Presidio's recognizer
scores them with. Presidio-research's labels are kept where a third-party check confirms them:
cards that pass python-stdnum's Luhn and do not start with 0 (no card issuer has that ISO/IEC
7812 major industry identifier), IBANs python-stdnum accepts, SSNs inside the SSA's issued
ranges, globally routable IP addresses (Python's ``ipaddress``: global and not in a block IANA
reserves), and phone numbers that
``phonenumbers`` finds valid in international form or, with the grouping of that country, in
the national form of a region nbeval searches by default; the rest of a record's labels are
dropped and the record is not used as a negative either.
"""

from __future__ import annotations

import ipaddress
import json
from functools import cache
from pathlib import Path

from tests.privacy.corpus import Case
from tests.privacy.external_pii import PII
from tests.privacy.external_secrets import SECRETS

__all__ = ["build_external_corpus"]

_SYNTH = Path(__file__).parent / "external" / "presidio_research_synth.json"

# Presidio-research entity types that are kinds nbeval reports.
_SYNTH_KINDS = {
    "CREDIT_CARD": "credit_card",
    "PHONE_NUMBER": "phone",
    "EMAIL_ADDRESS": "email",
    "IBAN_CODE": "iban",
    "US_SSN": "us_ssn",
    "IP_ADDRESS": "ip_address",
}
_DOC_DOMAINS = ("example.com", "example.org", "example.net")  # RFC 2606


def _phone_confirmed(value: str) -> bool:
    import phonenumbers as pn

    from nbeval.detectors import DEFAULT_PHONE_REGIONS  # the evaluator's default `regions`

    if value.startswith("+"):
        try:
            return bool(pn.is_valid_number(pn.parse(value, None)))
        except pn.NumberParseException:
            return False
    return any(
        m.start == 0 and m.end == len(value)
        for region in DEFAULT_PHONE_REGIONS
        for m in pn.PhoneNumberMatcher(value, region, leniency=pn.Leniency.STRICT_GROUPING)
    )


def _confirmed(kind: str, value: str) -> bool:
    """A third-party check of a Presidio-research label (see the module docstring)."""
    if kind == "credit_card":
        from stdnum import luhn

        digits = "".join(c for c in value if c.isdigit())
        return digits[:1] != "0" and bool(luhn.is_valid(digits))
    if kind == "iban":
        from stdnum import iban

        return bool(iban.is_valid(value))
    if kind == "us_ssn":
        digits = "".join(c for c in value if c.isdigit())
        area, group, serial = digits[:3], digits[3:5], digits[5:]
        return len(digits) == 9 and area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"
    if kind == "ip_address":
        address = ipaddress.ip_address(value)
        return address.is_global and not address.is_reserved  # IANA: allocated and routable
    if kind == "email":
        return not value.lower().endswith(_DOC_DOMAINS)
    return _phone_confirmed(value)


def _synth_cases() -> list[Case]:
    data = json.loads(_SYNTH.read_text(encoding="utf-8"))
    cases: list[Case] = []
    for record in data["records"]:
        text, usable_as_negative = record["text"], True
        for start, end, entity in record["spans"]:
            kind, value = _SYNTH_KINDS[entity], text[start:end]
            usable_as_negative = False
            if _confirmed(kind, value):
                cases.append(Case(text, "pii", kind, value, f"presidio-research {kind}"))
        if usable_as_negative:
            cases.append(Case(text, "negative", None, None, "presidio-research text"))
    return cases


@cache
def build_external_corpus() -> tuple[Case, ...]:
    """Every case of this corpus: the secret fixtures, the personal-data fixtures, then the
    Presidio-research records."""
    return (*SECRETS, *PII, *_synth_cases())
