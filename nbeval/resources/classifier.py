"""A local text classifier that answers :class:`~nbeval.request_kinds.Classify` requests.

:class:`ClassifierRunner` wraps either a transformers sequence classifier (``kind="classifier"``:
a hub name or a local directory; one text or an ``(a, b)`` pair per input) or a detoxify
checkpoint (``kind="detoxify"``: one of detoxify's model names or a ``.ckpt`` file, loaded with
detoxify's own ``load_checkpoint`` so the numbers are those of ``Detoxify(...).predict``).

Evaluators never call it: the engine (:class:`nbeval.request_kinds.local_model.LocalModelHandler`) pools the
inputs of every request of a round for one model, deduplicates them and calls
:meth:`ClassifierRunner.classify` once; the runner sorts them by token length (longest first) so
each batch pads little, runs them in batches under ``torch.inference_mode()`` and puts the scores
back in input order. Inputs longer than the model's window are truncated, and
:meth:`ClassifierRunner.truncated` says which, so the rows are told.

Scores are probabilities: a sigmoid per label for multi-label models (``problem_type ==
"multi_label_classification"``, every detoxify checkpoint) and one-label models (a consistency or
relevance score), a softmax over the labels otherwise. The model loads on first use; torch,
transformers and detoxify are imported only then.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union

import numpy as np

from nbeval.errors import MissingDependency, ResourceError
from nbeval.resources.embedder import _quiet_transformers
from nbeval.resources.local_model_types import LabelScores
from nbeval.resources.pair_cut import cut_pairs

__all__ = ["DETOXIFY_NAMES", "ClassifierRunner", "default_batch_size"]

#: detoxify's model names (what ``Detoxify(model_type=...)`` accepts), downloaded by torch hub.
DETOXIFY_NAMES = ("original", "unbiased", "multilingual", "original-small", "unbiased-small")

_Input = Union[str, tuple[str, str]]
_MEMORY_ITEMS = 200_000  # scored inputs remembered per model (a few floats each)
_WINDOW_FALLBACK = 512  # when neither the tokenizer nor the config says how long an input may be
# Models whose position table has room for padding offsets: the usable window is 2 shorter.
_OFFSET_POSITIONS = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "bart", "mbart"})
_MODELS_HINT = "pip install 'nbeval[models]'"


def default_batch_size(device: str) -> int:
    """Inputs per forward pass when none is given: 128 on a GPU, 32 on the CPU."""
    return 128 if device.startswith("cuda") else 32


@dataclass
class _Model:
    """A loaded model and what classifying needs to know about it."""

    model: Any
    tokenizer: Any
    labels: tuple[str, ...]
    sigmoid: bool
    """Whether each label's score is its own sigmoid (multi-label, one-label) instead of a softmax."""
    window: int
    """The most tokens an input may have; longer ones are truncated."""


class _Shared:
    """What every batch-size view of one runner shares: the model, its lock and its memory."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.loaded: _Model | None = None
        self.forwards = 0
        self.memory: OrderedDict[_Input, np.ndarray] = OrderedDict()
        self.truncated: set[_Input] = set()


class ClassifierRunner:
    """Label scores from a local classifier, batched by length.

    Parameters:
        name: a transformers sequence-classification directory or hub name (``kind="classifier"``);
            a detoxify model name (:data:`DETOXIFY_NAMES`) or checkpoint file (``kind="detoxify"``).
        kind: ``"classifier"`` or ``"detoxify"``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
        batch_size: inputs per forward pass (``None``: :func:`default_batch_size`).
    """

    def __init__(
        self,
        name: str | os.PathLike[str],
        kind: Literal["classifier", "detoxify"] = "classifier",
        device: str = "cpu",
        batch_size: int | None = None,
        *,
        _shared: _Shared | None = None,
    ) -> None:
        if kind not in ("classifier", "detoxify"):
            msg = f"ClassifierRunner kind must be 'classifier' or 'detoxify', got {kind!r}"
            raise ResourceError(msg)
        if batch_size is not None and batch_size < 1:
            msg = f"batch_size must be at least 1, got {batch_size}"
            raise ResourceError(msg)
        self.name = os.fspath(name)
        self.kind = kind
        self.device = str(device)
        self.batch_size = batch_size or default_batch_size(self.device)
        self._shared = _shared or _Shared()

    def __repr__(self) -> str:
        return f"ClassifierRunner({self.name!r}, kind={self.kind!r}, device={self.device!r})"

    def with_batch_size(self, n: int | None) -> ClassifierRunner:
        """This runner with another batch size: a view that shares the loaded model, lock and memory."""
        if not n or n == self.batch_size:
            return self
        return ClassifierRunner(self.name, self.kind, self.device, n, _shared=self._shared)

    @property
    def forwards(self) -> int:
        """How many inputs were actually sent to the model (after deduplication and memory)."""
        return self._shared.forwards

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._shared.loaded is not None

    @property
    def labels(self) -> tuple[str, ...]:
        """The model's labels, in the order of :attr:`LabelScores.scores`' columns (loads the model)."""
        return self._model().labels

    def truncated(self, input: _Input) -> bool:
        """Whether ``input`` was longer than the model's window when it was classified."""
        key = input if isinstance(input, str) else tuple(input)
        return key in self._shared.truncated

    # -- classifying -------------------------------------------------------------------------

    def classify(self, inputs: Sequence[_Input]) -> LabelScores:
        """The label scores of ``inputs`` (texts, or ``(a, b)`` pairs), one row per input, in order."""
        keys = [_key(x) for x in inputs]
        shared = self._shared
        with shared.lock:
            loaded = self._model()
            todo = [x for x in dict.fromkeys(keys) if x not in shared.memory]
            if todo:
                self._run(loaded, todo)
            if not keys:
                return LabelScores(loaded.labels, np.zeros((0, len(loaded.labels))))
            scores = np.stack([shared.memory[x] for x in keys])
            for x in dict.fromkeys(keys):
                shared.memory.move_to_end(x)
            while len(shared.memory) > _MEMORY_ITEMS:
                old, _ = shared.memory.popitem(last=False)
                shared.truncated.discard(old)
        return LabelScores(loaded.labels, scores)

    def _model(self) -> _Model:
        shared = self._shared
        with shared.lock:
            if shared.loaded is None:
                shared.loaded = (
                    _load_detoxify(self.name, self.device)
                    if self.kind == "detoxify"
                    else _load_classifier(self.name, self.device)
                )
            return shared.loaded

    def _run(self, loaded: _Model, todo: list[_Input]) -> None:
        """Score ``todo`` into the shared memory.

        Texts and pairs are tokenised apart (a tokenizer takes one or the other per call).
        """
        singles: list[_Input] = [x for x in todo if isinstance(x, str)]
        pairs: list[_Input] = [x for x in todo if not isinstance(x, str)]
        try:
            for group in (singles, pairs):
                if group:
                    self._run_group(loaded, group)
        except (MissingDependency, ResourceError):
            raise
        except Exception as exc:
            msg = f"classifier {self.name!r} failed on {len(todo)} input(s): {type(exc).__name__}: {exc}"
            raise ResourceError(msg) from exc

    def _run_group(self, loaded: _Model, group: list[_Input]) -> None:
        tok, window = loaded.tokenizer, loaded.window
        firsts = [x if isinstance(x, str) else x[0] for x in group]
        seconds = None if isinstance(group[0], str) else [x[1] for x in group]
        if seconds is None and getattr(tok, "is_fast", False):
            # One tokenisation feeds the model and decides the length order; the Rust encodings
            # also say which texts were cut (they have an overflow), so nothing is encoded twice.
            enc = tok(firsts, add_special_tokens=True, truncation=True, max_length=window, verbose=False)
            features = [{k: enc[k][i] for k in enc} for i in range(len(group))]
            self._shared.truncated.update(group[i] for i, e in enumerate(enc.encodings) if e.overflowing)
            self._forward(loaded, group, features)
            return
        # Pairs, or a slow tokenizer: one tokenisation decides the length order, which inputs are
        # too long, and feeds the model; only the inputs over the window are encoded again, truncated.
        if seconds is not None:  # each side cut near the window first: pair truncation is quadratic
            firsts, seconds = (
                list(side)
                for side in zip(*cut_pairs(tok, list(zip(firsts, seconds, strict=True)), window), strict=True)
            )
        enc = tok(firsts, seconds, add_special_tokens=True, truncation=False, verbose=False)
        features = [{k: enc[k][i] for k in enc} for i in range(len(group))]
        long = [i for i, f in enumerate(features) if len(f["input_ids"]) > window]
        if long:
            cut = tok(
                [firsts[i] for i in long],
                None if seconds is None else [seconds[i] for i in long],
                add_special_tokens=True,
                truncation=True,
                max_length=window,
                verbose=False,
            )
            for j, i in enumerate(long):
                features[i] = {k: cut[k][j] for k in cut}
                self._shared.truncated.add(group[i])
        self._forward(loaded, group, features)

    def _forward(self, loaded: _Model, group: list[_Input], features: list[dict[str, Any]]) -> None:
        """Length-sorted batches (longest first, so each pads little), one forward pass each."""
        import torch

        tok = loaded.tokenizer
        order = sorted(range(len(group)), key=lambda i: -len(features[i]["input_ids"]))
        model = loaded.model
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                batch = tok.pad([features[i] for i in idx], return_tensors="pt")
                logits = model(**{k: v.to(model.device) for k, v in batch.items()})[0].float()
                probs = torch.sigmoid(logits) if loaded.sigmoid else torch.softmax(logits, dim=-1)
                rows = probs.cpu().numpy().astype(np.float64)
                self._shared.forwards += len(idx)
                for i, row in zip(idx, rows, strict=True):
                    self._shared.memory[group[i]] = row


def _key(x: Any) -> _Input:
    if isinstance(x, str):
        return x
    if isinstance(x, (tuple, list)) and len(x) == 2 and all(isinstance(t, str) for t in x):
        return (x[0], x[1])
    msg = f"a classifier input must be a text or a pair of texts, got {type(x).__name__}"
    raise ResourceError(msg)


# ---------------------------------------------------------------------------------------------
# Loading


def _offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _window(tokenizer: Any, config: Any) -> int:
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 1_000_000:
        return limit
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        return positions - 2 if getattr(config, "model_type", "") in _OFFSET_POSITIONS else positions
    return _WINDOW_FALLBACK


def _load_classifier(name: str, device: str) -> _Model:
    try:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
    except ImportError as exc:
        msg = f"model-based evaluators need transformers and torch; install them with {_MODELS_HINT}"
        raise MissingDependency(msg) from exc
    local = Path(name).expanduser().is_dir()
    source = str(Path(name).expanduser()) if local else name
    try:
        with _quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local)
            model = AutoModelForSequenceClassification.from_pretrained(source, local_files_only=local)
    except Exception as exc:
        raise ResourceError(_classifier_help(name, local, exc)) from exc
    config = model.config
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        # a decoder-only classifier (GPT-2 style) has no padding token: batches pad with EOS, and the
        # model finds each input's last real token through pad_token_id
        tokenizer.pad_token = tokenizer.eos_token
        config.pad_token_id = tokenizer.eos_token_id
    _to_device(model, device, name)
    labels = tuple(str(config.id2label.get(i, f"LABEL_{i}")) for i in range(config.num_labels))
    sigmoid = config.problem_type == "multi_label_classification" or config.num_labels == 1
    return _Model(model, tokenizer, labels, sigmoid, _window(tokenizer, config))


def _classifier_help(name: str, local: bool, exc: Exception) -> str:
    msg = f"could not load classifier {name!r}: {type(exc).__name__}: {str(exc).strip().rstrip('.')}"
    if "hallucination_evaluation_model" in name or "trust_remote_code" in str(exc):
        return (
            f"{msg}. This model needs its own code from the hub (trust_remote_code), which nbeval "
            "does not run; pass any NLI cross-encoder or pair classifier as model= instead (for "
            "example 'cross-encoder/nli-deberta-v3-base' or a local directory)."
        )
    if local:
        return f"{msg}. The directory must hold a transformers sequence classifier (config, weights, tokenizer)."
    return (
        f"{msg}. A hub name must be downloaded once while online (`huggingface-cli download {name}`), "
        "or pass a local directory as model=."
    )


def _load_detoxify(name: str, device: str) -> _Model:
    try:
        import torch
        from detoxify.detoxify import MODEL_URLS, load_checkpoint
    except ImportError as exc:
        msg = f"the toxicity evaluator needs detoxify; install it with {_MODELS_HINT}"
        raise MissingDependency(msg) from exc
    path = Path(name).expanduser()
    fetch = (
        "run it once while online (torch hub caches the checkpoint), or download the .ckpt file "
        "from https://github.com/unitaryai/detoxify/releases and pass model='path/to/file.ckpt'"
    )
    if path.is_file():
        kwargs: dict[str, Any] = {"checkpoint": str(path)}
    elif name in MODEL_URLS:
        url = MODEL_URLS[name]
        cached = Path(torch.hub.get_dir()) / "checkpoints" / url.rsplit("/", 1)[-1]
        if not cached.is_file() and _offline():
            msg = f"detoxify model {name!r} is not downloaded and the hub is offline; {fetch}"
            raise ResourceError(msg)
        kwargs = {"model_type": name}
    else:
        msg = (
            f"{name!r} is neither a detoxify model name ({', '.join(MODEL_URLS)}) nor a checkpoint "
            "file; pass one of those, or a sequence-classification directory"
        )
        raise ResourceError(msg)
    try:
        with _quiet_transformers():
            model, tokenizer, class_names = load_checkpoint(device=device, **kwargs)
    except Exception as exc:
        msg = (
            f"could not load detoxify model {name!r}: {type(exc).__name__}: {str(exc).strip().rstrip('.')}. "
            "A checkpoint's base "
            "model (its tokenizer and config, named in the checkpoint) must be downloadable or in the "
            f"Hugging Face cache; {fetch}"
        )
        raise ResourceError(msg) from exc
    _to_device(model, device, name)
    return _Model(model, tokenizer, tuple(class_names), True, _window(tokenizer, model.config))


def _to_device(model: Any, device: str, name: str) -> None:
    try:
        model.to(device).eval()
    except Exception as exc:  # e.g. "cuda" on a machine without a GPU
        msg = f"could not move model {name!r} to device {device!r}: {exc}; pass device='cpu' or another device"
        raise ResourceError(msg) from exc
