"""The :class:`Classify` request and its handler.

A local classifier's label scores, every distinct input of a round per model in one call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nbeval.request_kinds.local_model import LocalModelHandler
from nbeval.resources.local_model_types import LabelScores, LocalModel
from nbeval.runtime.handlers import Request, register_handler

__all__ = ["Classify", "ClassifyHandler", "LabelScores", "LocalModel"]


@dataclass(frozen=True)
class Classify(Request):
    """Ask a local classifier for its label scores. Answer: :class:`LabelScores`, one row per input."""

    inputs: tuple[str | tuple[str, str], ...]
    """Texts, or ``(premise, hypothesis)`` pairs for a pair classifier, in the order the answer follows."""
    model: LocalModel


class ClassifyHandler(LocalModelHandler):
    """Answers :class:`Classify` through the model's ``classify(inputs) -> LabelScores``."""

    kind = Classify

    def inputs(self, request: Any) -> Sequence[Any]:
        """The texts or pairs to classify."""
        return tuple(request.inputs)

    def run(self, runner: Any, distinct: list[Any]) -> Callable[[Sequence[Any]], Any]:
        """Classify ``distinct`` at once; a request's answer is the rows of its own inputs."""
        scored = runner.classify(distinct)
        rows = dict(zip(distinct, range(len(distinct)), strict=True))
        return lambda mine: LabelScores(scored.labels, scored.scores[[rows[x] for x in mine]])


register_handler(ClassifyHandler())
