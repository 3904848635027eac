"""Every evaluator that runs offline pickles after it has scored (issue 35, point 8).

A Dask run sends its evaluators to the workers; a used ``rouge`` held a tokenizer memo built on
a local function, could not be pickled, and the run waited for ever. The copy must score as the
original does.
"""

from __future__ import annotations

import pickle

import pytest

import nbeval

PARAMS = {"regex_match": {"pattern": r"\d+"}}
OFFLINE = [s.id for s in nbeval.list_evaluators() if s.family in ("deterministic", "embedding")]


@pytest.fixture(scope="module")
def lab():
    return nbeval.demo_lab()


@pytest.mark.parametrize("evaluator_id", OFFLINE)
def test_a_used_evaluator_pickles_and_its_copy_scores_the_same(lab, evaluator_id: str) -> None:
    ev = nbeval.evaluator(evaluator_id, **PARAMS.get(evaluator_id, {}))
    first = nbeval.evaluate(lab, [ev], progress=False).scores
    copy = pickle.loads(pickle.dumps(ev))
    again = nbeval.evaluate(lab, [copy], progress=False).scores
    cols = ["key", "model_key", "metric", "value", "rationale"]
    assert first[cols].equals(again[cols])
    assert len(first) > 0
