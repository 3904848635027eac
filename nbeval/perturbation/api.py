"""``nbeval.perturb``: new test cases made from a suite's, linked to their originals.

Each perturbed case is its original with the prompt perturbed: the expected output, condition,
guidelines, expected context and unknown fields are copied; the categories gain
``perturbed_by:<Name>:<intensity>`` (and the perturbator's own, e.g. ``encoding:base64``); the
relationships gain ``perturbation_source`` -> the original's key (the Eval Studio data model), so
an evaluation reports a *flip* when a model passes one and fails the other. Its key is derived
from its content, as for any case without one.

Choices:

* The random draws for one (case, perturbator) come from a generator seeded with
  ``(seed, case key, perturbator name)``: the same seed gives the same suite, and adding a
  perturbator or a case leaves the others' output as it was.
* A perturbation that leaves the prompt as it was (too short, nothing the table knows) makes no
  case; a :class:`~nbeval.perturbation.base.PerturbationWarning` counts them per perturbator.
* Cases that are themselves perturbations (they have a ``perturbation_source``) are kept but not
  perturbed again, so running ``perturb`` on its own output does not pile perturbations up.
* Each test keeps its documents; within it the originals come first, then the perturbed cases,
  case by case in the order the perturbators were given. Without ``keep_originals`` the
  relationships point at cases the suite does not hold (reading it back warns about that).
* The LLM perturbators' requests (:mod:`~nbeval.perturbation.llm`) are sent all at once through
  one :class:`nbeval.runtime.Resources` (cached, retried, counted); a case the model could not
  perturb makes no case and is named in one
  :class:`~nbeval.perturbation.llm.PerturbationFailed` warning (its ``failures``). A case the
  model made records ``extra["adversarial"]``: the perturbator, the technique it says it used and
  the model that answered. ``dry_run=True`` counts their first requests, calling nothing.
"""

from __future__ import annotations

import copy
import os
import random
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, overload

from nbeval.data.fields import Relationship, derive_key
from nbeval.data.model import LlmDataset, Row, Test, TestCase, TestLab, TestSuite
from nbeval.errors import PerturbationError, ResourceError
from nbeval.options import RESOURCE_OPTIONS, RunKeywords, RunOptions
from nbeval.perturbation.base import PerturbationWarning, Perturbator, check_intensity
from nbeval.perturbation.llm import (
    LlmPerturbator,
    PerturbationFailed,
    PerturbationPlan,
    Rewrite,
    plan_requests,
    rewrite_prompts,
)
from nbeval.perturbation.registry import resolve_perturbators
from nbeval.request_kinds import Chat
from nbeval.request_kinds.chat import chat_client
from nbeval.runtime import Resources

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["PERTURBATION_SOURCE", "PERTURB_OPTIONS", "perturb", "perturbation_category", "perturbed_count", "to_suite"]

#: The run options (:class:`~nbeval.options.RunOptions`) :func:`perturb` takes: those of its model calls.
PERTURB_OPTIONS = tuple(name for name in RESOURCE_OPTIONS if name != "embedder")
_NOT_HERE = "the LLM perturbators ask their model one call at a time, at once, on this machine"
#: Why each other run option is refused by :func:`perturb`.
_NOT_PERTURB_OPTIONS = {
    "embedder": "perturbing embeds nothing",
    "progress": "perturb shows no progress bar",
    "scheduler": _NOT_HERE,
    "run_dir": _NOT_HERE,
    "batch": _NOT_HERE,
    "batch_poll_s": _NOT_HERE,
    "batch_discount": _NOT_HERE,
    "chunk_rows": "it is how nbeval.evaluate scores rows",
}
_RESOURCES_GIVEN = "the resources given are the run's; set it when making them, or give no resources"

#: The relationship type that links a perturbed case to its original.
PERTURBATION_SOURCE = "perturbation_source"


def perturbation_category(perturbator: Perturbator, intensity: str) -> str:
    """``perturbed_by:<Name>:<intensity>``, the category every perturbed case gets."""
    return f"perturbed_by:{perturbator.name}:{intensity}"


def _case_from_row(row: Row) -> TestCase:
    return TestCase(
        prompt=row.input or "",
        key=row.key or None,
        categories=list(row.categories),
        relationships=list(row.relationships),
        expected_output=row.expected_output,
        condition=row.output_condition,
        guidelines=list(row.guidelines),
        expected_context=list(row.expected_context),
        extra=dict(row.extra),
    )


def _suite_from_rows(rows: Iterable[Row], name: str = "", description: str = "") -> TestSuite:
    """The test cases of answered rows: one per key (the first model's row), grouped into tests by corpus."""
    tests: dict[tuple[str, ...], Test] = {}
    seen: set[str] = set()
    for row in rows:
        if row.key in seen or row.input is None:
            continue
        seen.add(row.key)
        corpus = tuple(row.corpus)
        test = tests.setdefault(corpus, Test(documents=list(corpus)))
        test.test_cases.append(_case_from_row(row))
    return TestSuite(name=name, description=description, tests=list(tests.values()))


def to_suite(data: Any) -> TestSuite:
    """Return a copy of the test suite behind ``data``.

    ``data`` is a :class:`TestSuite`, a :class:`TestLab` or an :class:`LlmDataset` (their test
    cases, once per key), or anything :func:`nbeval.load` reads.
    """
    if isinstance(data, TestSuite):
        return copy.deepcopy(data)
    if isinstance(data, TestLab):
        return _suite_from_rows([*data.dataset.rows, *data.raw_dataset.rows], data.name, data.description)
    if isinstance(data, LlmDataset):
        return _suite_from_rows(data.rows)
    if isinstance(data, (str, os.PathLike, dict, list)) or hasattr(data, "columns"):
        from nbeval.data.readers import load

        return to_suite(load(data))
    msg = f"cannot perturb a {type(data).__name__}; give a test suite, a lab, a dataset or a path to one"
    raise PerturbationError(msg)


def _seed(seed: int, key: str, perturbator: Perturbator) -> str:
    # A str seed is hashed with SHA-512 by random.Random: stable across runs and PYTHONHASHSEED.
    return f"{seed}\x1f{key}\x1f{perturbator.name}"


def _perturbed(case: TestCase, key: str, perturbator: Perturbator, intensity: str, prompt: str) -> TestCase:
    extra_cats = [perturbation_category(perturbator, intensity), *perturbator.categories(intensity)]
    categories = list(dict.fromkeys([*case.categories, *extra_cats]))
    new = replace(
        case,
        prompt=prompt,
        key=None,
        categories=categories,
        relationships=[*case.relationships, Relationship(PERTURBATION_SOURCE, key)],
        guidelines=list(case.guidelines),
        expected_context=list(case.expected_context),
        extra=copy.deepcopy(case.extra),
        warnings=[],
    )
    new.key = derive_key(
        new.prompt, new.expected_output, new.condition, new.categories, new.expected_context, new.guidelines
    )
    return new


@overload
def perturb(
    data: Any,
    perturbators: Any,
    *,
    intensity: str = ...,
    seed: int = ...,
    keep_originals: bool = ...,
    resources: Any = ...,
    dry_run: Literal[False] = ...,
    options: RunOptions | Mapping[str, Any] | None = ...,
    **keywords: Unpack[RunKeywords],
) -> TestSuite: ...
@overload
def perturb(
    data: Any,
    perturbators: Any,
    *,
    intensity: str = ...,
    seed: int = ...,
    keep_originals: bool = ...,
    resources: Any = ...,
    dry_run: Literal[True],
    options: RunOptions | Mapping[str, Any] | None = ...,
    **keywords: Unpack[RunKeywords],
) -> PerturbationPlan: ...


def perturb(
    data: Any,
    perturbators: Any,
    *,
    intensity: str = "low",
    seed: int = 0,
    keep_originals: bool = True,
    resources: Any = None,
    dry_run: bool = False,
    options: RunOptions | Mapping[str, Any] | None = None,
    **keywords: Any,
) -> TestSuite | PerturbationPlan:
    """Make a suite of perturbed test cases (after the originals, with ``keep_originals``).

    See the module docstring for what a perturbed case holds.

    The LLM perturbators (``llm_jailbreak``, ``llm_injection``, ``llm_pii_extraction``, see
    :mod:`~nbeval.perturbation.llm`) ask a model, configured by the run options of
    :func:`nbeval.evaluate` that apply to its calls (:data:`PERTURB_OPTIONS`), given as ``options``
    or as keywords, which win over it: ``judge`` (resolved like an evaluation's judge; a
    perturbator's own ``judge=`` wins; ``None``: the environment's), ``device`` (for a local ``hf:``
    model), ``cache``, ``concurrency``, ``timeout``, ``max_attempts`` and ``prices`` (USD per 1k
    prompt and completion tokens per model, as there: the dry run's ``est_cost``). The other run
    options (``embedder``, ``progress``, ``scheduler``, ``batch`` and its settings, ``chunk_rows``)
    do not apply: set, they are a :class:`~nbeval.errors.BadParameter`, as is a bad value, before
    anything is asked. A case whose reply never parses is left out and reported in a
    :class:`~nbeval.perturbation.llm.PerturbationFailed` warning.

    Args:
        data: A :class:`TestSuite`, :class:`TestLab`, :class:`LlmDataset` or a path nbeval reads.
        perturbators: Ids (``["typos", "case"]`` or ``"typos,case"``; ``nbeval perturbators`` lists
            them), :class:`Perturbator` classes or instances.
        intensity: ``"low"``, ``"medium"`` or ``"high"``.
        seed: A whole number that seeds the random choices (one generator per case and perturbator).
        keep_originals: Whether the suite holds the original cases before the perturbed ones.
        resources: A :class:`nbeval.runtime.Resources` to share for the LLM perturbators' calls (its
            judge, cache, prices and usage totals; then no run option may be set); ``None`` to make
            them from the run options.
        dry_run: Return a :class:`~nbeval.perturbation.llm.PerturbationPlan` (cases per perturbator,
            model calls, cached calls, tokens, cost) and call nothing.
        options: A :class:`~nbeval.options.RunOptions` or a mapping of its names; ``None`` for the
            defaults.
        **keywords: Run options by name, which win over ``options``.

    Returns:
        The suite of perturbed test cases; with ``dry_run=True``, the
        :class:`~nbeval.perturbation.llm.PerturbationPlan`.

    Raises:
        ~nbeval.errors.BadParameter: When a run option that does not apply is set (or any is, with
            ``resources``), or has a bad value.
        PerturbationError: When ``seed`` is not a whole number, ``data`` holds no test case, or a
            perturbator or the intensity is unknown.
        ResourceError: When no call to the model got a reply (the server is down, the key is
            refused: a refused key stops the asking at once), naming the cause, instead of returning
            a suite without the cases asked for.
    """
    opts = RunOptions.of(options, **keywords).only(PERTURB_OPTIONS, "perturb()", _NOT_PERTURB_OPTIONS)
    if resources is not None:
        opts.only((), "perturb(resources=...)", dict.fromkeys(PERTURB_OPTIONS, _RESOURCES_GIVEN))
    check_intensity(intensity)
    chosen = resolve_perturbators(perturbators)
    if isinstance(seed, bool) or not isinstance(seed, int):
        msg = f"seed must be a whole number, got {seed!r}"
        raise PerturbationError(msg)
    suite = to_suite(data)
    if not suite.test_cases:
        msg = "there are no test cases to perturb; give a suite, lab or dataset with at least one prompt"
        raise PerturbationError(msg)
    # One slot per (case, perturbator), in the order the cases are made; an LLM perturbator's
    # prompt is filled in below, all of them asked at once.
    slots: list[tuple[int, TestCase, str, Perturbator, str | None]] = []
    asks: list[tuple[LlmPerturbator, str, Chat]] = []
    for ti, test in enumerate(suite.tests):
        for case in test.test_cases:
            if any(r.type == PERTURBATION_SOURCE for r in case.relationships):
                continue
            key = case.resolved_key
            for p in chosen:
                rng = random.Random(_seed(seed, key, p))
                if isinstance(p, LlmPerturbator):
                    slots.append((ti, case, key, p, None))
                    asks.append((p, case.prompt, p.request(case.prompt, intensity, rng, sample=seed)))
                else:
                    slots.append((ti, case, key, p, p.apply(case.prompt, intensity, rng)))
    if asks or dry_run:
        resources = resources if resources is not None else Resources.from_options(opts)
    if dry_run:
        plan = PerturbationPlan(cases=dict(Counter(p.id for _, _, _, p, _ in slots)))
        plan_requests([req for _, _, req in asks], resources, plan)
        return plan
    rewrites = iter(_ask(asks, resources) if asks else [])
    keys = {tc.resolved_key for tc in suite.test_cases}
    unchanged: Counter[str] = Counter()
    failures: list[dict[str, Any]] = []
    made: list[list[TestCase]] = [[] for _ in suite.tests]
    for ti, case, key, p, prompt in slots:
        note: dict[str, Any] = {}
        if prompt is None:
            done = next(rewrites)
            if done.prompt is None:
                failures.append({"case": key, "perturbator": p.id, "error": done.error, "attempts": done.attempts})
                continue
            prompt, note = done.prompt, {"perturbator": p.id, "technique": done.technique, "model": done.model}
        new = _perturbed(case, key, p, intensity, prompt)
        if prompt == case.prompt:
            unchanged[p.name] += 1
            continue
        if note:
            new.extra["adversarial"] = note
        if new.key in keys:  # the suite holds this case already (perturbed before)
            continue
        keys.add(new.key or "")
        made[ti].append(new)
    tests = [
        replace(
            test, test_cases=[*(test.test_cases if keep_originals else []), *made[ti]], documents=list(test.documents)
        )
        for ti, test in enumerate(suite.tests)
    ]
    if unchanged:
        counts = ", ".join(f"{name} ×{n}" for name, n in unchanged.items())
        warnings.warn(
            f"{sum(unchanged.values())} perturbation(s) left the prompt as it was and made no "
            f"test case ({counts}): prompts too short, or nothing the perturbator can change",
            PerturbationWarning,
            stacklevel=2,
        )
    if failures:
        detail = "; ".join(f"'{f['case']}' by {f['perturbator']}: {f['error']}" for f in failures[:5])
        more = f"; and {len(failures) - 5} more" if len(failures) > 5 else ""
        warnings.warn(
            PerturbationFailed(f"{len(failures)} case(s) were not perturbed ({detail}{more})", failures),
            stacklevel=2,
        )
    return TestSuite(name=suite.name, description=suite.description, tests=tests, extra=dict(suite.extra))


def _ask(asks: list[tuple[LlmPerturbator, str, Chat]], resources: Any) -> list[Rewrite]:
    """The attackers' rewrites; a model that is not configured stops here, before any call."""
    for model in {id(req.model): req.model for _, _, req in asks}.values():
        chat_client(resources, model)  # raises JudgeNotConfigured with the ways to configure one
    done = rewrite_prompts(asks, resources)
    if all(r.call_failed for r in done):  # the model was never reached: no suite, the cause
        first = next((r.error for r in done if not r.error.startswith("not asked")), done[0].error)
        msg = (
            f"the LLM perturbators made no test case: none of the {len(done)} call(s) to the model got a "
            f"reply, e.g. {first}; check that the model's server is up and its name, base URL and API key"
        )
        raise ResourceError(msg)
    return done


def perturbed_count(suite: TestSuite) -> int:
    """How many of ``suite``'s cases are perturbations of another."""
    return sum(any(r.type == PERTURBATION_SOURCE for r in tc.relationships) for tc in suite.test_cases)
