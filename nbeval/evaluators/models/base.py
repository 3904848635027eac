"""What every model-based evaluator shares: which local model it asks, on which device, in what batches."""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal

from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Evaluator
from nbeval.request_kinds import LocalModel

__all__ = ["ModelEvaluator"]


class ModelEvaluator(Evaluator):
    """Base of the model-based evaluators.

    ``model=`` names the model (a hub name or a local path; the catalogue gives the default),
    ``device=`` where it runs (default: the run's ``device``, else a GPU when there is one) and
    ``batch_size=`` how many inputs go through it at once (default: the runner's, per device).
    """

    #: The kind of local model this evaluator asks (see :class:`~nbeval.request_kinds.LocalModel`).
    model_kind: ClassVar[Literal["classifier", "detoxify", "causal_lm"]] = "classifier"

    @classmethod
    def extra_params(cls) -> dict[str, Any]:
        """Add ``device=`` and ``batch_size=`` to the parameters every model-based evaluator accepts."""
        return {**super().extra_params(), "device": None, "batch_size": None}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        model = self.params.get("model")
        if isinstance(model, os.PathLike):
            model = os.fspath(model)
        if not isinstance(model, str) or not model.strip():
            msg = f"evaluator '{self.spec.id}': model must be a model name or a local path, got {model!r}"
            raise EvaluatorError(msg)
        device = self.params.get("device")
        if device is not None and not isinstance(device, str):
            msg = f"evaluator '{self.spec.id}': device must be a string such as 'cpu' or 'cuda', got {device!r}"
            raise EvaluatorError(msg)
        batch = self.params.get("batch_size")
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
            msg = f"evaluator '{self.spec.id}': batch_size must be a whole number of at least 1, got {batch!r}"
            raise EvaluatorError(msg)
        self.params["model"] = model
        self.local_model = LocalModel(model, self.kind_for(model), device, batch)

    def kind_for(self, model: str) -> Literal["classifier", "detoxify", "causal_lm"]:
        """The kind of model ``model`` is (``toxicity`` tells detoxify checkpoints from classifiers)."""
        return self.model_kind
