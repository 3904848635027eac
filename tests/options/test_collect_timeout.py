"""`nbeval.collect(..., timeout=)` bounds Python-function models too."""

from __future__ import annotations

import threading

import nbeval
from nbeval.data.model import Test, TestCase, TestSuite


def test_a_slow_function_model_times_out_on_its_row() -> None:
    suite = TestSuite(
        name="s", tests=[Test(key="t", test_cases=[TestCase("slow?", key="slow"), TestCase("fast?", key="fast")])]
    )
    release, slow_returned = threading.Event(), threading.Event()

    def model(prompt: str) -> str:
        if prompt.startswith("slow"):
            release.wait(30)  # far past the 0.2 s timeout: held until the test lets it go
            slow_returned.set()
        return "done"

    try:
        lab = nbeval.collect(suite, models={"m": model}, timeout=0.2, max_attempts=1, cache=False).complete(
            progress=False
        )
        assert not slow_returned.is_set()  # the slow call was abandoned at its deadline, not waited for
    finally:
        release.set()
    rows = {r.key: r for r in lab.dataset}
    assert rows["fast"].actual_output == "done" and rows["fast"].error is None
    assert rows["slow"].actual_output is None and "tim" in (rows["slow"].error or "").lower()
