"""`cancel` stops the run (no judge call starts after it) and keeps every answer in hand."""

from __future__ import annotations

import threading

import nbeval

REPLY = '{"rating": "yes", "rationale": "nothing unsafe"}'


def test_a_finished_batch_is_kept_when_cancel_comes_during_it() -> None:
    rows = [{"input": f"q{i}", "actual_output": f"a{i}", "model_key": "m"} for i in range(40)]
    cancel = threading.Event()
    calls: list[str] = []
    lock = threading.Lock()

    def judge(prompt: str) -> str:
        with lock:
            calls.append(prompt)
        cancel.set()  # the user presses Cancel while the first batch is being answered
        return REPLY

    result = nbeval.evaluate(rows, ["safety"], judge=judge, cancel=cancel, chunk_rows=20, cache=False, progress=False)
    primary = result.scores[result.scores["metric"] == result.metrics["metric"].iloc[0]]
    # calls already running when Cancel came finish; none of the second batch is asked
    assert 1 <= len(calls) <= 20
    assert (primary["skip_reason"] == "cancelled").sum() == 40 - len(calls)
    scored = primary[primary["skip_reason"].isna()]
    assert len(scored) == len(calls) and scored["value"].notna().all()  # every paid-for answer counts
    assert result.meta["cancelled"] is True
