"""A run never changes what it was given (issue 43, point 8).

``evaluate()`` and its dry run used to seat a run's jury (``judge=[j1, j2, j3]``) by writing it into
the caller's evaluator objects: the same object run afterwards with ``judge=yes`` kept the jury of
``no`` judges and still scored 0.0. Here every built-in evaluator that takes a judge goes through a
run and a dry run, and its state (every attribute, recursively, with the identity of each mutable
part) is compared before and after, with the judges, dicts and lists that were given. The registry
is checked exhaustively: every registered judge evaluator is covered by a case here.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any

import pytest

import nbeval
from nbeval.evaluators import registry
from nbeval.evaluators.base import Evaluator
from nbeval.evaluators.case import is_case_level
from tests.test_evaluators_pickle_all import AGENT_ROW, JUDGE_ROW, JUDGES, RAGAS, RAGAS_AGENT_ROW, RAGAS_AGENTS

pytestmark = pytest.mark.usefixtures("no_judge_from_env")

_PLAIN = (str, int, float, bool, bytes, type(None))


def state(obj: Any, seen: frozenset[int] = frozenset()) -> Any:
    """``obj``'s state as plain nested tuples: values of plain things, and for anything mutable its
    type, its identity and its parts (an evaluator's as it pickles: what it builds on first use,
    a memo, is left out), so equal states mean nothing given was changed or replaced."""
    if isinstance(obj, _PLAIN):
        return obj
    if id(obj) in seen or inspect.ismodule(obj) or inspect.isclass(obj):
        return ("ref", type(obj).__name__, id(obj))
    seen = seen | {id(obj)}
    if isinstance(obj, Mapping):
        return ("map", type(obj).__name__, id(obj), tuple((repr(k), state(v, seen)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        return ("seq", type(obj).__name__, id(obj), tuple(state(v, seen) for v in items))
    if is_dataclass(obj) and not isinstance(obj, type):
        return (
            "dc",
            type(obj).__name__,
            id(obj),
            tuple((f.name, state(getattr(obj, f.name), seen)) for f in fields(obj)),
        )
    own = getattr(obj, "__dict__", None)
    if isinstance(own, dict):
        kept = obj.__getstate__() if isinstance(obj, Evaluator) else own  # a copy: its own identity is not state
        return ("obj", type(obj).__name__, id(obj), tuple((k, state(v, seen)) for k, v in kept.items()))
    return ("opaque", type(obj).__name__, id(obj))


def first_difference(before: Any, after: Any, path: str = "") -> str | None:
    """Where two states first differ, as a path of parts, for a readable failure."""
    if before == after:
        return None
    if isinstance(before, tuple) and isinstance(after, tuple) and len(before) == len(after):
        for b, a in zip(before, after, strict=True):
            label = b[0] if isinstance(b, tuple) and b and isinstance(b[0], str) else b
            found = first_difference(b, a, f"{path}/{str(label)[:40]}")
            if found:
                return found
    return f"{path}: {str(before)[:200]} -> {str(after)[:200]}"


def _verdict_judge(word: str) -> Any:
    def judge(prompt: str) -> str:
        return f"Rationale: it is what it is.\nRating: {word}"

    judge.__name__ = f"judge_{word}"
    return judge


#: Judge evaluators whose rows are conversations (the agents family's judges).
_CONVERSATION = {"conversation_relevancy", "knowledge_retention", "role_adherence", "conversation_completeness"}
_CONVERSATION |= {"trajectory_judge"}


def _rows(evaluator_id: str) -> list[dict[str, Any]]:
    if evaluator_id in _CONVERSATION:
        return [AGENT_ROW]
    if evaluator_id in RAGAS_AGENTS:
        return [RAGAS_AGENT_ROW]
    row = {**JUDGE_ROW, "guidelines": ["Answer in one sentence."]}
    return [row, {**row, "model_key": "m2", "actual_output": "9 am."}]


def _judge_evaluators() -> list[str]:
    """Every built-in evaluator that takes a judge (the catalogue's; evaluators other tests
    register for themselves stay out)."""
    return sorted(id for id, spec in registry._builtin_specs().items() if spec.needs_judge)


def _params(evaluator_id: str) -> dict[str, Any]:
    return dict(JUDGES[evaluator_id][0]) if evaluator_id in JUDGES else {}


def test_every_registered_judge_evaluator_has_a_case_here() -> None:
    covered = set(JUDGES) | set(RAGAS) | set(RAGAS_AGENTS)
    missing = sorted(set(_judge_evaluators()) - covered)
    assert not missing, f"judge evaluators this test does not run: {missing}"


@pytest.mark.parametrize("evaluator_id", _judge_evaluators())
def test_a_run_and_a_dry_run_leave_the_evaluator_and_the_judges_as_given(evaluator_id: str) -> None:
    from tests.ragas.conftest import ToyEmbedder

    ev = nbeval.evaluator(evaluator_id, **_params(evaluator_id))
    no = _verdict_judge("no")
    settings = {"provider": "openai", "model": "never-called", "base_url": "http://127.0.0.1:9/v1"}
    # a case-level evaluator takes one judge; every other one the jury, given as a list
    judge: Any = no if is_case_level(ev) else [no, _verdict_judge("no"), _verdict_judge("no")]
    given = (ev, judge, settings)
    before = state(given)
    rows = _rows(evaluator_id)
    common = {"judge": judge, "embedder": ToyEmbedder(), "cache": False, "progress": False, "max_attempts": 1}
    nbeval.evaluate(rows, [ev], **common)
    assert state(given) == before, first_difference(before, state(given))
    nbeval.evaluate(rows, [ev], dry_run=True, **common)
    assert state(given) == before, first_difference(before, state(given))
    # a judge given as settings, to the evaluator itself: resolved at construction, left alone by runs
    own = nbeval.evaluator(evaluator_id, **_params(evaluator_id), judge=dict(settings))
    given_own = (own, settings)
    before_own = state(given_own)
    nbeval.evaluate(rows, [own], dry_run=True, cache=False, progress=False)
    assert state(given_own) == before_own, first_difference(before_own, state(given_own))


def test_an_evaluator_run_with_a_jury_of_no_then_with_a_yes_judge_scores_as_a_fresh_one() -> None:
    """The issue's own example: after ``judge=[no, no, no]`` the same object with ``judge=yes``
    scores 1.0, as a fresh one does (it scored 0.0: the jury of ``no`` judges stayed in it)."""
    rows = [{**JUDGE_ROW, "key": f"r{i}"} for i in range(3)]
    no = [_verdict_judge("no"), _verdict_judge("no"), _verdict_judge("no")]
    yes = _verdict_judge("yes")
    ev = nbeval.evaluator("correctness")
    first = nbeval.evaluate(rows, [ev], judge=no, cache=False, progress=False)
    assert first.leaderboard()["correctness.correctness"].iloc[0] == 0.0
    nbeval.evaluate(rows, [ev], judge=no, dry_run=True, cache=False, progress=False)
    again = nbeval.evaluate(rows, [ev], judge=yes, cache=False, progress=False)
    fresh = nbeval.evaluate(rows, [nbeval.evaluator("correctness")], judge=yes, cache=False, progress=False)
    assert fresh.leaderboard()["correctness.correctness"].iloc[0] == 1.0
    assert again.leaderboard()["correctness.correctness"].iloc[0] == 1.0
    assert ev.params["judge"] is None


def test_planning_a_run_of_every_registered_evaluator_changes_none_of_them() -> None:
    """The registry, exhaustively: every built-in evaluator of every family, given together to one
    dry run and to the planning of a real run (the jury seated, every judge and input checked)."""
    from nbeval.engine import plan_run
    from nbeval.runtime import Resources
    from tests.ragas.conftest import ToyEmbedder
    from tests.test_evaluators_pickle import PARAMS

    evaluators = [
        nbeval.evaluator(id, **{**PARAMS.get(id, {}), **_params(id)})
        for id in sorted(registry._builtin_specs())
        if id != "pairwise"  # compares models: takes one judge, not the run's jury
    ]
    judge = [_verdict_judge("no"), _verdict_judge("yes"), _verdict_judge("no")]
    rows = [
        {**JUDGE_ROW, **RAGAS_AGENT_ROW, "key": "r1", "guidelines": ["Be brief."], "expected_context": ["x"]},
    ]
    given = (evaluators, judge)
    before = state(given)
    nbeval.evaluate(rows, evaluators, judge=judge, embedder=ToyEmbedder(), dry_run=True, cache=False)
    assert state(given) == before, first_difference(before, state(given))
    plan_run(rows, evaluators, resources=Resources(judge=judge, embedder=ToyEmbedder(), cache=False))
    assert state(given) == before, first_difference(before, state(given))
    assert all(ev.params.get("judge") is None for ev in evaluators if ev.spec.needs_judge)
