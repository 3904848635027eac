"""The demo lab shipped with nbeval, and the evaluators ``nbeval demo`` runs on it.

The lab is fictional: three assistants answer ten questions about a made-up rail company (see
``scripts/make_demo_lab.py``, which wrote ``demo_lab.json``). It runs offline with no API key.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbeval.data.model import TestLab

__all__ = ["demo_evaluators", "demo_lab", "demo_lab_path"]


def demo_lab_path() -> str:
    """Path of the shipped demo lab JSON."""
    return str(resources.files("nbeval.demo") / "demo_lab.json")


def demo_lab() -> TestLab:
    """Load the demo lab shipped with nbeval.

    Returns:
        The demo lab: 10 test cases × 3 models, with RAG contexts, conditions and a perturbed case.
    """
    from nbeval.data.model import TestLab

    return TestLab.from_json(demo_lab_path())


def demo_evaluators(include_embedding: bool = True) -> list[str]:
    """Every catalogued evaluator that needs no judge and whose dependencies are installed."""
    import importlib.util

    from nbeval.evaluators.registry import list_evaluators

    embed_ok = include_embedding and importlib.util.find_spec("sentence_transformers") is not None
    ids = []
    for spec in list_evaluators():
        if spec.needs_judge or spec.family not in ("deterministic", "embedding"):
            continue
        if spec.family == "embedding" and not embed_ok:
            continue
        if spec.params.get("pattern") == "":  # needs a user pattern (regex_match)
            continue
        ids.append(spec.id)
    return ids
