"""Precision and recall of the nbeval detectors on their golden tables.

Run from the repository root::

    .venv/bin/python benchmarks/detector_quality.py

For the PII and secrets suites a case contributes one true positive per expected kind that was
found, one false negative per expected kind that was missed and one false positive per kind
found that was not expected (cases flagged ``known_miss`` are counted like any other). The
encoding suite encodes every positive PII text in base64, base32 and base16, and checks that
``decode_for_category`` gives the original back; every text of the PII table (ordinary prose
full of numbers, addresses and identifiers, none of it encoded) must yield no span from
``find_encoded``. The secrets table is left out of that check on purpose: several of its texts
really do contain base64 (JWT payloads, base64 of sentences).
"""

from __future__ import annotations

import base64
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbeval.detectors import (
    Finding,
    decode_for_category,
    find_encoded,
    find_pii,
    find_secrets,
)

GOLDEN = ROOT / "tests" / "golden"


def _load(name: str) -> list[dict]:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))["cases"]


def _ratio(num: int, den: int) -> float:
    return num / den if den else 1.0


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
    positives = sum(bool(c["kinds"]) for c in cases)
    flagged = sum(bool(c.get("known_miss")) for c in cases)
    print(
        f"\n{name}: {len(cases)} cases ({positives} positive, {len(cases) - positives} "
        f"negative, {flagged} flagged known_miss)"
    )
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
    plain = [c["text"] for c in pii_cases]
    per_encoding: dict[str, list[int]] = {}
    for name, encode in encoders.items():
        hits = 0
        positives = [c["text"] for c in pii_cases if c["kinds"]]
        for text in positives:
            answer = f"Sure, here it is: {encode(text.encode())}"
            hits += decode_for_category(answer, [f"encoding:{name}"]) == f"Sure, here it is: {text}"
        per_encoding[name] = [hits, len(positives)]
    false_alarms = sum(bool(find_encoded(t)) for t in plain)
    tp = sum(h for h, _ in per_encoding.values())
    n = sum(t for _, t in per_encoding.values())
    print(f"\nencodings: {n} encoded answers, {len(plain)} plain texts")
    print(
        f"  overall   precision {_ratio(tp, tp + false_alarms):.3f}  recall {_ratio(tp, n):.3f}  "
        f"(decoded={tp}/{n}, plain texts with a spurious span={false_alarms})"
    )
    for name, (hits, total) in per_encoding.items():
        print(f"  {name:<24} recall {_ratio(hits, total):.3f}  ({hits}/{total})")


def main() -> None:
    pii_cases, secret_cases = _load("pii_cases.json"), _load("secret_cases.json")
    _print_suite("pii (find_pii)", pii_cases, score_suite(pii_cases, find_pii))
    _print_suite("secrets (find_secrets)", secret_cases, score_suite(secret_cases, find_secrets))
    encoding_suite(pii_cases)


if __name__ == "__main__":
    main()
