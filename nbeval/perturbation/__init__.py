"""Perturbed test cases: the same questions changed, or attack variants written by a model.

The changes are typos, odd case, noise, encodings or injections; the attacks are jailbreak,
injection and personal-data extraction.

    import nbeval
    perturbed = nbeval.perturb(suite, ["typos", "case"], intensity="medium", seed=0)

:func:`perturb` (:mod:`~nbeval.perturbation.api`) makes the cases, linked to their originals so
an evaluation reports flips; :mod:`~nbeval.perturbation.base` says what a perturbator is,
:mod:`~nbeval.perturbation.registry` finds one by id (``nbeval perturbators`` lists them) and
registers third-party ones, :mod:`~nbeval.perturbation.builtin` holds the built-ins and
:mod:`~nbeval.perturbation.llm` the perturbators that ask a model (``llm_jailbreak``,
``llm_injection``, ``llm_pii_extraction``; ``perturb(..., dry_run=True)`` counts their calls).
"""

from __future__ import annotations

from nbeval.perturbation.api import PERTURBATION_SOURCE, perturb, perturbation_category, perturbed_count, to_suite
from nbeval.perturbation.base import INTENSITIES, PerturbationWarning, Perturbator
from nbeval.perturbation.llm import LlmPerturbator, PerturbationFailed, PerturbationPlan
from nbeval.perturbation.registry import (
    get_perturbator,
    list_perturbators,
    perturbator_ids,
    register_perturbator,
    resolve_perturbators,
    unregister_perturbator,
)

__all__ = [
    "INTENSITIES",
    "PERTURBATION_SOURCE",
    "LlmPerturbator",
    "PerturbationFailed",
    "PerturbationPlan",
    "PerturbationWarning",
    "Perturbator",
    "get_perturbator",
    "list_perturbators",
    "perturb",
    "perturbation_category",
    "perturbator_ids",
    "perturbed_count",
    "register_perturbator",
    "resolve_perturbators",
    "to_suite",
    "unregister_perturbator",
]
