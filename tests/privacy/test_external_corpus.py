"""nbeval's privacy detectors on the external corpus (``external_corpus.py``): test data other
projects wrote, scored like the in-sample corpus of ``corpus.py`` (issue 27's targets)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.privacy.external_corpus import build_external_corpus
from tests.privacy.scoring import Report, nbeval_detectors, score


@pytest.fixture(scope="module")
def report() -> Report:
    return score(build_external_corpus(), *nbeval_detectors())


def _describe(items: list) -> str:
    return "\n".join(f"{c.family}: {c.text[:160]!r}" for c, *_ in items)


def test_external_corpus_is_big_labelled_and_apart_from_the_in_sample_one() -> None:
    from tests.privacy.corpus import build_corpus

    corpus = build_external_corpus()
    groups = Counter(c.group for c in corpus)
    assert groups["pii"] >= 400 and groups["secret"] >= 150 and groups["negative"] >= 500
    assert all(c.value in c.text for c in corpus if c.value is not None)
    assert not {c.text for c in corpus} & {c.text for c in build_corpus()}
    families = {c.family for c in corpus}
    assert {
        "azure storage key",
        "azure sas token",
        "gitlab token",
        "discord token",
        "slack token",
        "jwt (unsigned)",
        "azure emulator key",
        "azure storage placeholder",
        "azure sas without signature",
        "card (UATP)",
        "card (13-digit visa)",
        "iban (dashes)",
        "email (unicode)",
        "email (punycode)",
        "us_ssn (dots)",
        "us_ssn (bare)",
        "es.nie (lower case)",
        "es.dni (lower case)",
        "gb.nino (lower case)",
        "presidio-research text",
    } <= families


def test_pii_recall_on_external_data(report: Report) -> None:
    pii = report.groups["pii"]
    assert pii.recall >= 0.95, _describe([m for m in report.misses if m[0].group == "pii"])
    assert pii.right_kind / pii.cases >= 0.95


def test_secrets_recall_on_external_data(report: Report) -> None:
    secrets = report.groups["secret"]
    assert secrets.recall >= 0.95, _describe([m for m in report.misses if m[0].group == "secret"])
    assert secrets.right_kind / secrets.cases >= 0.95


def test_false_alarms_on_external_hard_negatives(report: Report) -> None:
    negatives = report.groups["negative"]
    assert negatives.false_alarms <= 0.01 * negatives.cases, _describe(report.alarms)


def test_no_external_secret_is_reported_as_pii(report: Report) -> None:
    assert report.secrets_as_pii == []
