"""`nbeval.collect(..., timeout=)` bounds Python-function models too."""

from __future__ import annotations

import time

import nbeval
from nbeval.data.model import Test, TestCase, TestSuite


def test_a_slow_function_model_times_out_on_its_row() -> None:
    suite = TestSuite(name="s", tests=[Test(key="t", test_cases=[TestCase("slow?", key="slow"),
                                                                   TestCase("fast?", key="fast")])])

    def model(prompt: str) -> str:
        if prompt.startswith("slow"):
            time.sleep(5)
        return "done"

    started = time.perf_counter()
    lab = nbeval.collect(suite, models={"m": model}, timeout=0.2, max_attempts=1, cache=False).complete(
        progress=False)
    elapsed = time.perf_counter() - started
    rows = {r.key: r for r in lab.dataset}
    assert rows["fast"].actual_output == "done" and rows["fast"].error is None
    assert rows["slow"].actual_output is None and "tim" in (rows["slow"].error or "").lower()
    assert elapsed < 3  # the 5 s call was abandoned at its deadline
