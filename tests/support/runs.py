"""Records for run-over-run tests: one model's answers to 30 cases, some of them wrong."""

from __future__ import annotations

from typing import Any


def thirty_cases(wrong: int) -> list[dict[str, Any]]:
    """30 cases of one model ``m`` whose first ``wrong`` answers miss the expected output (so
    ``exact_match`` passes 30 − ``wrong`` rows)."""
    return [
        {
            "key": f"c{i}",
            "model_key": "m",
            "input": f"q{i}",
            "expected_output": f"a{i}",
            "actual_output": f"b{i}" if i < wrong else f"a{i}",
        }
        for i in range(30)
    ]
