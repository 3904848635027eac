"""nbeval: evaluate LLM and RAG applications from a notebook, the command line or CI.

::

    import nbeval
    result = nbeval.evaluate("lab.json", ["rouge", "text_matching"])
    result.leaderboard("rouge")

In a notebook, ``%load_ext nbeval`` adds the ``%nbeval`` magics (see :mod:`nbeval.extension`).

Everything below is loaded on first use, so ``import nbeval`` stays fast and imports no pandas,
torch, transformers, openai or ipywidgets.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from nbeval._lazy import lazy_exports
from nbeval._version import __version__

# public name -> module that defines it
_EXPORTS = {
    "evaluate": "nbeval.engine",
    "align": "nbeval.engine.align",
    "AlignReport": "nbeval.engine.align",
    "plan": "nbeval.application",
    "RunOptions": "nbeval.options",
    "Plan": "nbeval.engine",
    "EvaluationResult": "nbeval.results",
    "load_result": "nbeval.results",
    "diff": "nbeval.results.runs.diff",
    "RunDiff": "nbeval.results.runs.diff",
    "runs": "nbeval.results.runs.registry",
    "evaluator": "nbeval.evaluators.registry",
    "register": "nbeval.evaluators.registry",
    "scorer": "nbeval.evaluators.scorer",
    "catalogue": "nbeval.evaluators.registry",
    "list_evaluators": "nbeval.evaluators.registry",
    "Evaluator": "nbeval.evaluators.base",
    "CaseEvaluator": "nbeval.evaluators.case",
    "jury": "nbeval.evaluators.jury",
    "Jury": "nbeval.evaluators.jury",
    "EvaluatorSpec": "nbeval.evaluators.base",
    "MetricSpec": "nbeval.evaluators.base",
    "Param": "nbeval.evaluators.base",
    "Score": "nbeval.evaluators.base",
    "Aggregate": "nbeval.evaluators.base",
    "Embed": "nbeval.request_kinds",
    "Chat": "nbeval.request_kinds",
    "ScorePairs": "nbeval.request_kinds",
    "Gather": "nbeval.request_kinds",
    "collect": "nbeval.chat.collect",
    "bool_score": "nbeval.evaluators.base",
    "Chunk": "nbeval.data.model",
    "Relationship": "nbeval.data.model",
    "TestCase": "nbeval.data.model",
    "Test": "nbeval.data.model",
    "TestSuite": "nbeval.data.model",
    "TestLab": "nbeval.data.model",
    "ModelInfo": "nbeval.data.model",
    "LlmDataset": "nbeval.data.model",
    "Row": "nbeval.data.model",
    "load": "nbeval.data.readers",
    "parse_condition": "nbeval.data.conditions",
    "Condition": "nbeval.data.conditions",
    "demo_lab": "nbeval.demo",
    "generate": "nbeval.generation",
    "GenerationPlan": "nbeval.generation",
    "perturb": "nbeval.perturbation",
    "register_perturbator": "nbeval.perturbation",
    "Perturbator": "nbeval.perturbation",
    "split_sentences": "nbeval.data.text",
    "NbevalError": "nbeval.errors",
    "DataError": "nbeval.errors",
    "ConditionError": "nbeval.errors",
    "EvaluatorError": "nbeval.errors",
    "UnknownEvaluator": "nbeval.errors",
    "MissingDependency": "nbeval.errors",
    "JudgeNotConfigured": "nbeval.errors",
    "ResourceError": "nbeval.errors",
    "RegexTimeout": "nbeval.errors",
    "PerturbationError": "nbeval.errors",
}

__all__ = ["__version__", *_EXPORTS, "load_ipython_extension", "unload_ipython_extension"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


def load_ipython_extension(ipython: Any) -> None:
    """Load nbeval's IPython extension (``%load_ext nbeval``).

    Registers the ``%nbeval`` and ``%%nbeval_suite`` magics, Tab completion and rich display of
    datasets, suites, labs and plans (see :mod:`nbeval.extension`).

    Args:
        ipython: The IPython shell loading the extension.
    """
    _extension().load_ipython_extension(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Unload nbeval's IPython extension (``%unload_ext nbeval``).

    Removes what :func:`load_ipython_extension` registered.

    Args:
        ipython: The IPython shell unloading the extension.
    """
    _extension().unload_ipython_extension(ipython)


def _extension() -> ModuleType:
    # Imported by name on first use, as the lazy exports are: nbeval.extension sits above
    # nbeval.cli in the layers, and nbeval.cli imports this package.
    return importlib.import_module("nbeval.extension")


if TYPE_CHECKING:  # for type checkers and IDEs only
    from nbeval.application import plan
    from nbeval.chat.collect import collect
    from nbeval.data.conditions import Condition, parse_condition
    from nbeval.data.model import Chunk, LlmDataset, ModelInfo, Relationship, Row, Test, TestCase, TestLab, TestSuite
    from nbeval.data.readers import load
    from nbeval.data.text import split_sentences
    from nbeval.demo import demo_lab
    from nbeval.engine import Plan, evaluate
    from nbeval.engine.align import AlignReport, align
    from nbeval.errors import (
        ConditionError,
        DataError,
        EvaluatorError,
        JudgeNotConfigured,
        MissingDependency,
        NbevalError,
        PerturbationError,
        RegexTimeout,
        ResourceError,
        UnknownEvaluator,
    )
    from nbeval.evaluators.base import Aggregate, Evaluator, EvaluatorSpec, MetricSpec, Param, Score, bool_score
    from nbeval.evaluators.case import CaseEvaluator
    from nbeval.evaluators.jury import Jury, jury
    from nbeval.evaluators.registry import catalogue, evaluator, list_evaluators, register
    from nbeval.evaluators.scorer import scorer
    from nbeval.generation import GenerationPlan, generate
    from nbeval.options import RunOptions
    from nbeval.perturbation import Perturbator, perturb, register_perturbator
    from nbeval.request_kinds import Chat, Embed, Gather, ScorePairs
    from nbeval.results import EvaluationResult, load_result
    from nbeval.results.runs.diff import RunDiff, diff
    from nbeval.results.runs.registry import runs
