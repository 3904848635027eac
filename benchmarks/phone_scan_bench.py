"""Time of ``find_pii`` (and its phone scan) on 1 MB of phone-shaped text (issue 35, point 13).

Run from the repository root::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/phone_scan_bench.py [--mb 1.0]

The text is digit groups with dashes, parentheses and spaces between commas and short words
(``tests/privacy/test_redteam_detectors.phone_like``). Prints seconds (wall clock and CPU, as the
machine may be busy), findings, and matcher calls and parses per run; then the seconds of a
second scan, of other text of the same size: the first also builds what a process builds once
(the numbering plans' automata, ``nbeval.detectors.phone_plans``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbeval.detectors import find_pii, phones
from tests.privacy.test_redteam_detectors import phone_like


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=1.0)
    args = parser.parse_args()
    text = phone_like(int(args.mb * 1_000_000))
    find_pii("warm up: +1 202 456 1111")
    pn = phones._phonenumbers()
    matcher, parse, calls = phones._matcher, pn.phonenumbermatcher.parse, {"matcher": 0, "parse": 0}

    def counting_matcher(*a: object, **kw: object) -> object:
        calls["matcher"] += 1
        return matcher()(*a, **kw)

    def counting_parse(*a: object, **kw: object) -> object:
        calls["parse"] += 1
        return parse(*a, **kw)

    phones._matcher, pn.phonenumbermatcher.parse = (lambda: counting_matcher), counting_parse  # type: ignore[assignment]
    try:
        started, cpu = time.perf_counter(), time.process_time()
        found = find_pii(text)
        took, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        phones._matcher, pn.phonenumbermatcher.parse = matcher, parse  # type: ignore[assignment]
    runs = sum(1 for _ in phones._RUN.finditer(text))
    print(
        f"find_pii on {len(text):,} characters of phone-shaped text: {took:.1f} s ({cpu:.1f} s of CPU), "
        f"{len(found):,} findings, {calls['matcher'] / max(runs, 1):.1f} matcher calls and "
        f"{calls['parse'] / max(runs, 1):.1f} parses per digit run"
    )
    other = phone_like(len(text), seed=1)
    started, cpu = time.perf_counter(), time.process_time()
    again = find_pii(other)
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"again, on other text of that size: {took:.1f} s ({cpu:.1f} s of CPU), {len(again):,} findings")


if __name__ == "__main__":
    main()
