"""Quality of the nbeval privacy detectors, beside Presidio's and detect-secrets' where installed.

Run from the repository root::

    .venv/bin/python benchmarks/detector_quality.py
    # with the peers, installed in a separate environment whose site-packages are appended:
    .venv/bin/python benchmarks/detector_quality.py --peers-site /tmp/peers/lib/python3.11/site-packages

Three parts:

1. **Two labelled corpora**, side by side, then each in detail: the in-sample corpus of
   ``tests/privacy/corpus.py`` (Faker in twelve locales, random tokens of every secret family,
   hard negatives; written beside the detectors), with recall per kind, and the external corpus of
   ``tests/privacy/external_corpus.py`` (other projects' test data: gitleaks, trufflehog,
   detect-secrets, kingfisher, Presidio, Presidio-research, Braintree's credit-card-type,
   python-email-validator), with recall per family; false alarms per family of hard negatives.
   A positive counts as found when a reported span covers part of its value
   (nbeval's "right kind" column also asks for the labelled kind); a negative is a false alarm
   when anything is reported in it. Peers are scored the same way: Presidio on the PII cases
   (its predefined pattern recognizers for en/es/it/pl, no spaCy model, personal-data entities
   only, scores of 0.3 and up), detect-secrets on the secret cases (``detect-secrets scan`` of
   each text as a ``.txt`` file with its default settings: every plugin and filter). Both are
   scored on the hard negatives.
2. **The golden tables** of ``tests/golden`` (precision and recall per kind).
3. **Encodings**: base64/base32/base16 round trips of the PII golden texts.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbeval.detectors import Finding, decode_for_category, find_encoded, find_pii, find_secrets
from tests.privacy.corpus import Case, build_corpus
from tests.privacy.external_corpus import build_external_corpus
from tests.privacy.scoring import Detector, Report, Span, nbeval_detectors, score

GOLDEN = ROOT / "tests" / "golden"

# Presidio entities that are personal data of the kinds in the corpus; dates, URLs, UUIDs and MAC
# addresses are left out so that they are not counted as false alarms on the hard negatives.
_PRESIDIO_ENTITIES = {
    "CREDIT_CARD", "EMAIL_ADDRESS", "IBAN_CODE", "IP_ADDRESS", "PHONE_NUMBER", "US_SSN", "US_ITIN",
    "US_BANK_NUMBER", "US_PASSPORT", "US_DRIVER_LICENSE", "UK_NHS", "UK_NINO", "ES_NIF", "ES_NIE",
    "IT_FISCAL_CODE", "IT_VAT_CODE", "IT_IDENTITY_CARD", "IT_PASSPORT", "IT_DRIVER_LICENSE", "PL_PESEL",
    "IN_AADHAAR", "IN_PAN", "MEDICAL_LICENSE", "CRYPTO",
}  # fmt: skip
_PRESIDIO_MIN_SCORE = 0.3


def presidio_detector() -> Detector | None:
    """Presidio's predefined pattern recognizers as a detector, or None when not installed."""
    try:
        from presidio_analyzer import EntityRecognizer, RecognizerRegistry
    except ImportError:
        return None
    # tldextract (behind the e-mail and URL recognizers) tries to download the public suffix
    # list, then falls back to its bundled copy; silence the offline traceback.
    logging.getLogger("tldextract").setLevel(logging.CRITICAL)
    registry = RecognizerRegistry()
    registry.load_predefined_recognizers(languages=["en", "es", "it", "pl"])
    recognizers, seen = [], set()
    for rec in registry.recognizers:
        name = type(rec).__name__
        if name in seen or name == "SpacyRecognizer" or not isinstance(rec, EntityRecognizer):
            continue
        entities = [e for e in rec.supported_entities if e in _PRESIDIO_ENTITIES]
        if entities:
            seen.add(name)
            recognizers.append((rec, entities))

    def detect(text: str) -> list[Span]:
        spans = []
        for rec, entities in recognizers:
            for r in rec.analyze(text, entities, None) or []:
                if r.score >= _PRESIDIO_MIN_SCORE:
                    spans.append((r.start, r.end, r.entity_type))
        return spans

    return detect


def detect_secrets_detector() -> Detector | None:
    """``detect-secrets scan`` with its default settings, one ``.txt`` file per text."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    folder = Path(tempfile.mkdtemp(prefix="nbeval-bench-"))

    def detect(text: str) -> list[Span]:
        path = folder / "answer.txt"
        path.write_text(text, encoding="utf-8")
        collection = SecretsCollection()
        with default_settings():
            collection.scan_file(str(path))
        spans = []
        for _, secret in collection:
            value = secret.secret_value or ""
            start = text.find(value) if value else -1
            spans.append((start, start + len(value), secret.type) if start >= 0 else (0, len(text), secret.type))
        return spans

    return detect


def _ratio(num: int, den: int) -> float:
    return num / den if den else 1.0


def print_summary(reports: dict[str, Report]) -> None:
    """nbeval on each corpus side by side: recall per group, false alarms, secrets taken for PII."""
    names = list(reports)
    print(
        "nbeval, corpus by corpus (recall: share of labelled values found; false alarms: hard negatives"
        " with any finding)"
    )
    print(f"  {'':<30}" + "".join(f"{n:>24}" for n in names))
    for group, label in (("pii", "PII recall"), ("secret", "secrets recall")):
        tallies = [r.groups[group] for r in reports.values()]
        cells = [f"{t.recall:.3f} ({t.found}/{t.cases})" for t in tallies]
        print(f"  {label:<30}" + "".join(f"{c:>24}" for c in cells))
    cells = []
    for r in reports.values():
        neg = r.groups["negative"]
        cells.append(f"{neg.false_alarms}/{neg.cases} ({_ratio(neg.false_alarms, neg.cases) if neg.cases else 0:.1%})")
    print(f"  {'false alarms':<30}" + "".join(f"{c:>24}" for c in cells))
    print(f"  {'secrets reported as PII':<30}" + "".join(f"{len(r.secrets_as_pii):>24}" for r in reports.values()))


def print_corpus(title: str, corpus: tuple[Case, ...], reports: dict[str, Report], *, by: str = "kinds") -> None:
    """Recall per kind (``by="kinds"``) or per family of positives, and false alarms per family
    of hard negatives, for nbeval and each peer in ``reports``."""
    tools = list(reports)
    nb = reports["nbeval"]
    group_of = {(c.kind if by == "kinds" else c.family): c.group for c in corpus if c.kind}
    label = "kind" if by == "kinds" else "family"
    print(f"\ncorpus: {title} (recall per {label}; right kind = nbeval also named the labelled kind)")
    header = f"  {label:<34}{'cases':>6}  {'nbeval':>7} {'right kind':>10}" + "".join(f" {t:>15}" for t in tools[1:])
    for group in ("pii", "secret"):
        print(f"\n{group.upper()}\n{header}")
        rows = sorted(k for k in getattr(nb, by) if group_of.get(k) == group)
        for row_name in [*rows, f"ALL {group}"]:
            tally = nb.groups[group] if row_name.startswith("ALL") else getattr(nb, by)[row_name]
            right = _ratio(tally.right_kind, tally.cases)
            row = f"  {row_name:<34}{tally.cases:>6}  {tally.recall:>7.3f} {right:>10.3f}"
            for tool in tools[1:]:
                tallies = reports[tool].groups if row_name.startswith("ALL") else getattr(reports[tool], by)
                other = tallies.get(group if row_name.startswith("ALL") else row_name)
                row += f" {other.recall:>15.3f}" if other and other.cases else f" {'-':>15}"
            print(row)
    print(
        f"\nFALSE ALARMS on hard negatives (texts with any finding)\n  {'family':<34}{'cases':>6}  "
        + " ".join(f"{t:>15}" for t in tools)
    )
    families = sorted(k for k in nb.kinds if k.startswith("negative"))
    for family in [*families, "ALL"]:
        tally = nb.groups["negative"] if family == "ALL" else nb.kinds[family]
        cells = []
        for tool in tools:
            t = reports[tool].groups["negative"] if family == "ALL" else reports[tool].kinds[family]
            cells.append(f"{t.false_alarms:>15}")
        print(f"  {family.removeprefix('negative: '):<34}{tally.cases:>6}  " + " ".join(cells))
    print(f"\nsecrets reported as PII by nbeval: {len(nb.secrets_as_pii)}")
    for case, spans in nb.alarms:
        print(f"  nbeval false alarm ({case.family}): {[kind for *_, kind in spans]}")
    for case, _ in nb.misses:
        print(f"  nbeval miss ({case.family})")


# --- golden tables and encodings (unchanged measures) -------------------------------------------


def _load(name: str) -> list[dict]:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))["cases"]


def score_suite(cases: list[dict], detect: Callable[[str], list[Finding]]) -> dict:
    """Per-kind and overall true/false positive and false negative counts."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # tp, fp, fn
    for case in cases:
        expected = set(case["kinds"])
        found = {f.kind for f in detect(case["text"])}
        for kind in expected | found:
            c = counts[kind]
            if kind in expected and kind in found:
                c[0] += 1
            elif kind in found:
                c[1] += 1
            else:
                c[2] += 1
    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    return {"total": total, "kinds": dict(sorted(counts.items()))}


def _print_suite(name: str, cases: list[dict], result: dict) -> None:
    tp, fp, fn = result["total"]
    print(f"\n{name}: {len(cases)} cases")
    print(
        f"  overall   precision {_ratio(tp, tp + fp):.3f}  recall {_ratio(tp, tp + fn):.3f}  (tp={tp} fp={fp} fn={fn})"
    )
    for kind, (k_tp, k_fp, k_fn) in result["kinds"].items():
        print(
            f"  {kind:<24} precision {_ratio(k_tp, k_tp + k_fp):.3f}  "
            f"recall {_ratio(k_tp, k_tp + k_fn):.3f}  (tp={k_tp} fp={k_fp} fn={k_fn})"
        )


def encoding_suite(pii_cases: list[dict]) -> None:
    """Round trips through three encodings, and plain texts that must not look encoded."""
    encoders = {
        "base64": lambda b: base64.b64encode(b).decode(),
        "base32": lambda b: base64.b32encode(b).decode(),
        "base16": lambda b: base64.b16encode(b).decode(),
    }
    positives = [c["text"] for c in pii_cases if c["kinds"]]
    print(f"\nencodings: {len(positives)} texts x {len(encoders)} encodings")
    for name, encode in encoders.items():
        hits = sum(
            decode_for_category(f"Sure: {encode(t.encode())}", [f"encoding:{name}"]) == f"Sure: {t}" for t in positives
        )
        print(f"  {name:<24} recall {_ratio(hits, len(positives)):.3f}  ({hits}/{len(positives)})")
    false_alarms = sum(bool(find_encoded(c["text"])) for c in pii_cases)
    print(f"  plain texts with a spurious encoded span: {false_alarms}/{len(pii_cases)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--peers-site",
        action="append",
        default=[],
        help="a site-packages folder holding presidio-analyzer (appended to sys.path)",
    )
    args = parser.parse_args(argv)
    sys.path.extend(args.peers_site)

    corpora = {
        "in-sample": ("tests/privacy/corpus.py", build_corpus(), "kinds"),
        "external": ("tests/privacy/external_corpus.py", build_external_corpus(), "families"),
    }
    pii, secrets = nbeval_detectors()
    presidio, ds = presidio_detector(), detect_secrets_detector()
    for name, detector in (("Presidio", presidio), ("detect-secrets", ds)):
        if detector is None:
            print(f"({name} is not installed: its column is left out)")
    all_reports = {}
    for name, (path, corpus, by) in corpora.items():
        reports = {"nbeval": score(corpus, pii, secrets)}
        if presidio is not None:
            reports["Presidio"] = score(corpus, presidio, None)
        if ds is not None:
            reports["detect-secrets"] = score(corpus, None, ds)
        all_reports[name] = (path, corpus, by, reports)
    print_summary({name: reports["nbeval"] for name, (_, _, _, reports) in all_reports.items()})
    for path, corpus, by, reports in all_reports.values():
        print_corpus(path, corpus, reports, by=by)

    pii_cases, secret_cases = _load("pii_cases.json"), _load("secret_cases.json")
    _print_suite("golden pii (find_pii)", pii_cases, score_suite(pii_cases, find_pii))
    _print_suite("golden secrets (find_secrets)", secret_cases, score_suite(secret_cases, find_secrets))
    encoding_suite(pii_cases)


if __name__ == "__main__":
    main()
