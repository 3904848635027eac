"""Time of ``find_pii`` (and its phone scan) on 1 MB of phone-shaped text (issue 35, point 13).

Run from the repository root::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/phone_scan_bench.py [--mb 1.0]

The text is digit groups with dashes, parentheses and spaces between commas and short words
(``tests/test_redteam_detectors.phone_like``). Prints seconds, findings and matcher calls per run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbeval.detectors import find_pii, phones
from tests.test_redteam_detectors import phone_like


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=1.0)
    args = parser.parse_args()
    text = phone_like(int(args.mb * 1_000_000))
    find_pii("warm up: +1 202 456 1111")
    pn = phones._phonenumbers()
    real, calls = pn.PhoneNumberMatcher, [0]

    def counting(*a: object, **kw: object) -> object:
        calls[0] += 1
        return real(*a, **kw)

    pn.PhoneNumberMatcher = counting
    try:
        started = time.perf_counter()
        found = find_pii(text)
        took = time.perf_counter() - started
    finally:
        pn.PhoneNumberMatcher = real
    runs = sum(1 for _ in phones._RUN.finditer(text))
    print(f"find_pii on {len(text):,} characters of phone-shaped text: {took:.1f} s, "
          f"{len(found):,} findings, {calls[0] / max(runs, 1):.1f} matcher calls per digit run")


if __name__ == "__main__":
    main()
