"""`evaluate(data, evaluators)`: every documented way of naming evaluators runs the same
evaluators, and parameters given with an id take effect."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import nbeval

ROWS = [
    {
        "key": "a",
        "input": "q1",
        "expected_output": "the cat sat on the mat",
        "actual_output": "the cat sat on the mat",
        "model_key": "m",
    },
    {
        "key": "b",
        "input": "q2",
        "expected_output": "the cat sat on the mat",
        "actual_output": "a cat sat on a mat",
        "model_key": "m",
    },
]

FORMS: dict[str, Any] = {
    "comma-separated ids": "exact_match,rouge",
    "a list of ids": ["exact_match", "rouge"],
    "configured objects": [nbeval.evaluator("exact_match"), nbeval.evaluator("rouge")],
    "(id, params) pairs": [("exact_match", {}), ("rouge", {})],
    "mixed": ["exact_match", ("rouge", {})],
}


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_runs_the_same_evaluators(form: str) -> None:
    reference = nbeval.evaluate(ROWS, ["exact_match", "rouge"], progress=False)
    result = nbeval.evaluate(ROWS, FORMS[form], progress=False)
    assert result.evaluators == ["exact_match", "rouge"]
    pd.testing.assert_frame_equal(result.scores, reference.scores)


@pytest.mark.parametrize(
    "lenient", [("rouge", {"threshold": 0.5}), nbeval.evaluator("rouge", threshold=0.5)], ids=["pair", "object"]
)
def test_params_given_with_the_evaluator_take_effect(lenient: Any) -> None:
    default = nbeval.evaluate(ROWS, ["rouge"], progress=False)
    loose = nbeval.evaluate(ROWS, [lenient], progress=False)
    primary = "rouge_l"

    def passed(result: nbeval.EvaluationResult) -> list[Any]:
        s = result.scores
        return s.loc[s["metric"] == primary, "passed"].tolist()

    # "a cat sat on a mat" has ROUGE-L 2/3 against "the cat sat on the mat"
    assert default.metrics.set_index("metric").loc[primary, "threshold"] == 0.75
    assert loose.metrics.set_index("metric").loc[primary, "threshold"] == 0.5
    assert passed(default) == [True, False]  # under the catalogue's 0.75...
    assert passed(loose) == [True, True]  # ...over the 0.5 given with the evaluator
