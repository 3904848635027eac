"""The rating judges are declared as data (issue 44): one row of ``RATING_JUDGES`` and one
factory, ``rating_judge``, instead of a class written out for each."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest

import nbeval
from nbeval.evaluators.judges.core import JudgePrompt
from nbeval.evaluators.judges.prompts import PROMPTS, RATING_FORMAT
from nbeval.evaluators.judges.rating import RATING_JUDGES, RatingDeclaration, RatingJudge, rating_judge
from nbeval.evaluators.registry import unregister
from tests.judges.helpers import run

ROWS = [{"key": f"r{i}", "input": f"q{i}?", "actual_output": f"a{i}"} for i in range(3)]


def test_every_declared_rating_judge_is_built_from_its_row() -> None:
    assert [d.id for d in RATING_JUDGES] == [
        "correctness",
        "relevance_to_query",
        "groundedness",
        "safety",
        "context_sufficiency",
    ]
    for declared in RATING_JUDGES:
        ev = nbeval.evaluator(declared.id)
        assert isinstance(ev, RatingJudge)
        assert ev.spec.inputs == declared.inputs and ev.spec.primary.name == declared.id
        assert ev.prompt == PROMPTS[declared.id]
        assert type(ev).__doc__ == declared.question
        # made by a factory, it still pickles by name, as a Dask worker needs
        assert type(pickle.loads(pickle.dumps(ev))) is type(ev)


@pytest.fixture
def politeness() -> Iterator[str]:
    prompt = JudgePrompt(
        "Decide whether the answer is polite.",
        inputs=(("input", "question"), ("actual_output", "answer")),
        output_format=RATING_FORMAT,
    )
    declared = RatingDeclaration(
        "politeness_for_test",
        "Is the answer polite?",
        ("input", "actual_output"),
        "A judge rates yes when the answer is polite.",
        "share of rows rated polite",
        prompt=prompt,
    )
    rating_judge(declared)
    yield declared.id
    unregister(declared.id)


def test_a_new_rating_judge_is_one_declaration(politeness: str) -> None:
    asked: list[str] = []

    def judge(prompt: str) -> str:
        asked.append(prompt)
        return "Rationale: courteous.\nRating: yes" if "a1" in prompt else "Rationale: rude.\nRating: no"

    result = run(ROWS, [nbeval.evaluator(politeness)], judge)
    values = result.scores[result.scores["metric"] == politeness].set_index("key")["value"].to_dict()
    assert values == {"r0": 0.0, "r1": 1.0, "r2": 0.0}
    assert len(asked) == 3 and all("Decide whether the answer is polite." in p for p in asked)
    assert nbeval.evaluator(politeness, score_mode="expected").settings.score_mode == "expected"


def test_a_rating_judge_declared_at_run_time_is_not_kept_as_a_built_in() -> None:
    # kept as one, it would go into the index later processes list from, which cannot build it
    from nbeval.evaluators import registry

    brief = RatingDeclaration(
        "t_brief", "Is it brief?", ("input", "actual_output"), "Brief.", "brief", prompt=PROMPTS["safety"]
    )
    rating_judge(brief)
    try:
        assert "t_brief" in nbeval.catalogue()
        assert "t_brief" not in registry.build_builtin_specs() and "correctness" in registry.build_builtin_specs()
    finally:
        unregister("t_brief")
    assert "t_brief" not in nbeval.catalogue()
