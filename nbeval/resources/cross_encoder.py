"""A cross-encoder that scores text pairs, for ``answer_semantic_similarity``'s cross-encoder option.

A cross-encoder reads both texts at once and returns one relevance or similarity score per pair
(for a one-label model, the sigmoid of its logit, so a value in [0, 1]). It is slower than
comparing embeddings but usually closer to human judgement. Loaded lazily; each distinct pair is
scored once per process.

Evaluators never call it themselves: they yield a :class:`~nbeval.request_kinds.ScorePairs` request,
and the engine (:class:`nbeval.request_kinds.score_pairs.PairsHandler`) pools the pairs of every request
of a round and calls :meth:`CrossEncoderScorer.score` once per model.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nbeval.errors import MissingDependency, ResourceError
from nbeval.resources.embedder import INSTALL_HINT, _quiet_transformers
from nbeval.resources.pair_cut import cut_pairs

__all__ = ["CrossEncoderScorer", "get_cross_encoder"]


class CrossEncoderScorer:
    """Scores ``(a, b)`` pairs with a sentence-transformers ``CrossEncoder``.

    Parameters:
        model: a hub name (``"cross-encoder/stsb-roberta-base"``) or a local directory.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (a GPU when there is one).
        batch_size: pairs per forward pass.
    """

    def __init__(self, model: str | os.PathLike[str], device: str | None = None, batch_size: int = 32) -> None:
        self.name = os.fspath(model)
        self.device = device
        self.batch_size = batch_size
        self.pairs_scored = 0
        """How many pairs were actually sent to the model."""
        self._model: Any = None
        self._memory: dict[tuple[str, str], float] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"CrossEncoderScorer({self.name!r}, device={self.device!r})"

    @property
    def model(self) -> Any:
        """The underlying ``CrossEncoder`` (loaded on first access)."""
        with self._lock:
            if self._model is None:
                self._model = _load(self.name, self.device)
            return self._model

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """One float per pair, in order; one-label models give values in [0, 1]."""
        pairs = [(str(a), str(b)) for a, b in pairs]
        with self._lock:
            todo = [p for p in dict.fromkeys(pairs) if p not in self._memory]
            if todo:
                try:
                    model = self.model
                    out = model.predict(
                        _cut_to_window(model, todo), batch_size=self.batch_size, show_progress_bar=False
                    )
                except (MissingDependency, ResourceError):
                    raise
                except Exception as exc:
                    msg = f"cross-encoder {self.name!r} failed on {len(todo)} pairs: {exc}"
                    raise ResourceError(msg) from exc
                out = np.asarray(out, dtype=np.float64)
                if out.ndim > 1:  # a multi-label model: keep the last label's score
                    out = out[:, -1]
                self.pairs_scored += len(todo)
                self._memory.update(zip(todo, out.tolist(), strict=True))
            return np.array([self._memory[p] for p in pairs], dtype=np.float64)


def _cut_to_window(model: Any, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pairs`` with each text cut a little past the model's window.

    See :mod:`.pair_cut`: the scores are those of the whole pairs, in memory linear in the texts'
    length.
    """
    tokenizer = getattr(model, "tokenizer", None)
    window = getattr(model, "max_length", None) or getattr(tokenizer, "model_max_length", None)
    if tokenizer is None or not isinstance(window, int) or window > 1_000_000:  # no window: nothing truncates
        return pairs
    return cut_pairs(tokenizer, pairs, window)


def _load(name: str, device: str | None) -> Any:
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as exc:
        msg = f"the cross-encoder option needs sentence-transformers; install it with {INSTALL_HINT}"
        raise MissingDependency(msg) from exc
    local = Path(name).expanduser().is_dir()
    try:
        with _quiet_transformers():
            return CrossEncoder(name, device=device, local_files_only=local)
    except Exception as exc:
        msg = f"could not load cross-encoder {name!r}: {exc}"
        raise ResourceError(msg) from exc


_SHARED: dict[tuple[str, str | None], CrossEncoderScorer] = {}
_SHARED_LOCK = threading.Lock()


def get_cross_encoder(model: str | os.PathLike[str], device: str | None = None) -> CrossEncoderScorer:
    """The process-wide :class:`CrossEncoderScorer` for ``(model, device)``."""
    key = (os.fspath(model), device)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = CrossEncoderScorer(model, device=device)
        return _SHARED[key]
