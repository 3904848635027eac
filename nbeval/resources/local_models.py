"""Local models that answer classification and token log-probability requests.

They answer :class:`~nbeval.request_kinds.Classify` and :class:`~nbeval.request_kinds.TokenLogProbs`
requests, are loaded lazily, once per process, kind, name and device, and are shared by every
evaluator and run that names the same one.

A runner has ``classify(inputs) -> LabelScores`` (classifiers, detoxify checkpoints) or
``logprobs(items) -> list[TokenScores]`` (causal language models), and may have
``truncated(input) -> bool`` for inputs longer than the model's window (the rows are told). The
engine (:class:`nbeval.request_kinds.local_model.LocalModelHandler`) pools a round's inputs for one model and
calls the runner once; the runner batches them, sorted by length.
"""

from __future__ import annotations

import threading
from typing import Any

from nbeval.errors import ResourceError
from nbeval.resources.local_model_types import LocalModel

__all__ = ["clear_local_models", "get_local_model", "resolve_device"]

_RUNNERS: dict[tuple[str, str, str], Any] = {}
_LOCK = threading.Lock()


def resolve_device(device: str | None) -> str:
    """``device`` as given, else ``"cuda"`` when torch sees a GPU, else ``"cpu"``."""
    if device:
        return str(device)
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def get_local_model(ref: LocalModel, default_device: str | None = None) -> Any:
    """The shared runner for ``ref`` on ``ref.device``, else ``default_device``, else the best there is."""
    device = resolve_device(ref.device or default_device)
    key = (ref.kind, ref.name, device)
    with _LOCK:
        runner = _RUNNERS.get(key)
        if runner is None:
            runner = _new_runner(ref, device)
            _RUNNERS[key] = runner
    return runner.with_batch_size(ref.batch_size) if ref.batch_size else runner


def clear_local_models() -> None:
    """Forget every loaded model (tests; freeing GPU memory)."""
    with _LOCK:
        _RUNNERS.clear()


def _new_runner(ref: LocalModel, device: str) -> Any:
    if ref.kind in ("classifier", "detoxify"):
        from nbeval.resources.classifier import ClassifierRunner

        return ClassifierRunner(ref.name, kind=ref.kind, device=device)
    if ref.kind == "causal_lm":
        from nbeval.resources.causal_lm import CausalLMRunner

        return CausalLMRunner(ref.name, device=device)
    msg = f"no local model runner of kind {ref.kind!r}; use 'classifier', 'detoxify' or 'causal_lm'"
    raise ResourceError(msg)
