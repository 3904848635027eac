"""Issue 43, point 24, property-based (Hypothesis): the planned judge calls the service bounds.

For any set of test cases answered by any number of models, ``pairwise`` plans m·(m−1) calls
for a case that m models answered (every pair, in both orders), whatever the row order and the
models' names; ``chunk_relevance`` plans one call per retrieved chunk. Worked from the rules, not
from the code under test.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nbeval.engine import plan_run
from nbeval.runtime import Resources
from nbeval.serve.budget import planned_judge_calls


def _judge(prompt: str) -> str:
    return "yes"


def _planned(rows: list[dict[str, Any]], evaluator: str) -> dict[str, int]:
    state = plan_run(rows, [evaluator], resources=Resources(judge=_judge), keep_outcomes=False)
    return planned_judge_calls(state.planned)


@settings(max_examples=100, deadline=None)
@given(models_per_case=st.lists(st.integers(1, 6), min_size=1, max_size=5), seed=st.integers(0, 2**16))
def test_pairwise_plans_every_pair_in_both_orders_whatever_the_order_and_names(
    models_per_case: list[int], seed: int
) -> None:
    rows = [
        {"key": f"case-{c}", "input": f"q{c}", "actual_output": f"a{c}-{m}", "model_key": f"model-{m}"}
        for c, m_count in enumerate(models_per_case)
        for m in range(m_count)
    ]
    expected = sum(m * (m - 1) for m in models_per_case)
    assert _planned(rows, "pairwise") == {"pairwise": expected}
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    renamed = [{**r, "model_key": f"other-{seed}-{r['model_key'][::-1]}"} for r in shuffled]
    assert _planned(renamed, "pairwise") == {"pairwise": expected}


@settings(max_examples=100, deadline=None)
@given(chunks=st.lists(st.integers(0, 40), min_size=1, max_size=6))
def test_chunk_relevance_plans_one_call_per_chunk(chunks: list[int]) -> None:
    rows = [
        {"input": f"q{i}", "actual_output": "a", "context": [f"chunk {i}.{j}" for j in range(n)]}
        for i, n in enumerate(chunks)
    ]
    assert _planned(rows, "chunk_relevance") == {"chunk_relevance": sum(chunks)}
