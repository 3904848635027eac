"""A dry run labels its completion tokens as what they are (issue 26): the calls' ``max_tokens``
summed is an upper bound, said as one ("at most"); where calls set no ``max_tokens`` the number is
the client's guess, said as one; a run with no judge calls prints no tokens at all."""

from __future__ import annotations

import pytest

import nbeval
from nbeval.chat.client import estimate_usage
from nbeval.engine import Plan

pytest.importorskip("ragas")


def _judge(prompt: str) -> str:  # never called: a dry run calls nothing
    raise AssertionError("a dry run must not call the judge")


@pytest.fixture(scope="module")
def lab():
    return nbeval.demo_lab()


def test_estimate_usage_with_no_guess_is_the_max_tokens_bound_alone():
    reqs = [
        ([{"role": "user", "content": "a" * 40}], {"max_tokens": 50}),
        ([{"role": "user", "content": "b" * 40}], {}),
    ]
    assert estimate_usage(reqs)[1] == 50 + 200
    assert estimate_usage(reqs, completion_guess=0)[1] == 50


def test_calls_without_max_tokens_are_a_labelled_guess(lab):
    plan = nbeval.evaluate(lab, ["correctness"], judge=_judge, cache=False, dry_run=True)
    assert isinstance(plan, Plan)
    assert plan.judge_calls == 30 and plan.completion_tokens_capped == 0
    assert plan.est_completion_tokens == 30 * 200
    text = str(plan)
    assert "~6000 completion tokens (guessed, 200 a call: the calls set no max_tokens)" in text
    assert "at most" not in text and "upper bound" not in text


def test_max_tokens_summed_is_said_to_be_an_upper_bound(lab):
    from nbeval.evaluators.ragas.standin import ragas_standin

    plan = nbeval.evaluate(lab, ["answer_correctness"], judge=ragas_standin, cache=False, dry_run=True)
    assert isinstance(plan, Plan)
    assert plan.judge_calls > 0
    assert plan.est_completion_tokens == plan.completion_tokens_capped == 1024 * plan.judge_calls
    text = str(plan)
    assert f"at most {plan.est_completion_tokens} completion tokens (the calls' max_tokens, an upper bound)" in text
    assert f"~{plan.est_completion_tokens} completion" not in text  # a bound is never printed as an estimate


def test_a_mix_says_which_part_is_the_bound(lab):
    from nbeval.evaluators.ragas.standin import ragas_standin

    bounded = nbeval.evaluate(lab, ["answer_correctness"], judge=ragas_standin, cache=False, dry_run=True)
    plan = nbeval.evaluate(lab, ["answer_correctness", "correctness"], judge=ragas_standin, cache=False, dry_run=True)
    assert isinstance(bounded, Plan) and isinstance(plan, Plan)
    assert plan.completion_tokens_capped == bounded.est_completion_tokens
    assert plan.est_completion_tokens == bounded.est_completion_tokens + 30 * 200
    assert (
        f"~{plan.est_completion_tokens} completion tokens ({plan.completion_tokens_capped} of them the "
        "calls' max_tokens, an upper bound; the rest guessed"
    ) in str(plan)


def test_no_judge_calls_print_no_tokens(lab):
    text = str(nbeval.evaluate(lab, ["rouge"], dry_run=True))
    assert text.endswith("judge calls: 0 (0 cached, 0 to make)")
