"""`dry_run=True` says how many judge calls a run would make: every round, not only the first."""

from __future__ import annotations

import threading

import pytest

import nbeval
from nbeval.engine import Plan


@pytest.mark.parametrize("evaluator", ["contact_information", "chunk_relevance", "safety"])
def test_dry_run_counts_the_calls_the_run_makes(evaluator: str) -> None:
    calls: list[str] = []
    lock = threading.Lock()

    def judge(prompt: str) -> str:
        with lock:
            calls.append(prompt)
        return '{"rating": "yes", "rationale": "fine"}'

    lab = nbeval.demo_lab()
    planned = nbeval.evaluate(lab, [evaluator], judge=judge, cache=False, dry_run=True)
    assert isinstance(planned, Plan)
    assert calls == []  # planning asks nothing
    nbeval.evaluate(lab, [evaluator], judge=judge, cache=False, progress=False)
    assert planned.judge_calls == len(calls)
    if evaluator == "safety":
        assert planned.later_round_calls == 0 and "estimated" not in str(planned)
    else:  # the context check, one call per chunk: beyond each row's first call
        assert planned.later_round_calls > 0 and "estimated" in str(planned)
