"""Texts to sentence vectors with one tokenisation and one forward pass per batch.

:class:`BatchPlan` is how :class:`~nbeval.resources.embedder.Embedder` calls a plain
sentence-transformers text encoder without ``SentenceTransformer.encode``'s second tokenisation
and per-batch conversions; the embedder falls back to ``encode`` for any model the plan does not
recognise or whose probe disagrees. torch and tokenizers are imported only when a plan is built.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["BatchPlan", "model_device", "model_window"]

_FEATURE_FIELDS = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}


def model_window(model: Any) -> int:
    """How many tokens ``model`` reads at most (its ``max_seq_length``; 512 when it does not say)."""
    return int(getattr(model, "max_seq_length", None) or 512)


class BatchPlan:
    """Texts to vectors with one tokenisation and one forward pass per batch.

    A private copy of the model's own fast (Rust) tokenizer, set to truncate at the model's
    window and pad to the longest text of a batch, gives the ids and masks the model reads and,
    from the same encodings, which texts were cut. Batches are ordered by length the way
    sentence-transformers orders them, so each text meets the same padding, hence the same
    vector, as in ``SentenceTransformer.encode``; the vectors are written into one matrix (kept on
    the model's device until the end, so a GPU is not made to wait once per batch). On CUDA the
    next batch is tokenised into pinned memory while the current one runs.
    """

    def __init__(self, model: Any, tokenizer: Any, names: list[str], limit: int, extras: dict[str, Any]) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.names = names
        self.limit = limit
        self.extras = extras  # non-tensor entries sentence-transformers adds (e.g. modality="text")
        self.device = model_device(model)
        self.pin = self.device.type == "cuda"  # pinned host memory copies to a GPU asynchronously
        self.prefetch = self.pin

    @classmethod
    def for_model(cls, model: Any) -> BatchPlan | None:
        """The plan for ``model`` when it is a plain text encoder.

        A plain text encoder is a Transformer module with a fast tokenizer, no prompt, no unpadded
        or chat-template inputs; ``None`` for anything else.
        """
        try:
            first = model[0]
            tok = first.tokenizer
            plain = (
                getattr(tok, "is_fast", False)
                and hasattr(tok, "_tokenizer")
                and not getattr(first, "can_flatten_inputs", False)
                and getattr(first, "query_expansion", None) is None
                and list(getattr(first, "modality_config", None) or ["text"]) == ["text"]
                and getattr(first, "transformer_task", "feature-extraction") == "feature-extraction"
                and getattr(model, "default_prompt_name", None) is None
                and tok.padding_side == "right"
                and tok.truncation_side == "right"
                and set(tok.model_input_names) <= set(_FEATURE_FIELDS)
            )
            if not plain:
                return None
            from tokenizers import Tokenizer

            limit = model_window(model)
            rust = Tokenizer.from_str(tok._tokenizer.to_str())
            rust.enable_truncation(max_length=limit, stride=0, strategy="longest_first", direction="right")
            rust.enable_padding(
                direction="right", pad_id=tok.pad_token_id, pad_type_id=tok.pad_token_type_id, pad_token=tok.pad_token
            )
            return cls(model, rust, list(tok.model_input_names), limit, {})
        except Exception:  # an unfamiliar model layout: sentence-transformers' own path handles it
            return None

    def agrees_with_model(self) -> bool:
        """Whether this plan feeds the model exactly what sentence-transformers would.

        Checked on a probe batch (a short, an empty, an accented and an over-long text); it also
        learns the non-tensor entries sentence-transformers passes along.
        """
        import torch

        probe = ["A short probe, sentence.", "", "Ünïcödé  spacing\tand\nlines", "word " * (self.limit + 8)]
        try:
            prepare = getattr(self.model, "preprocess", None) or self.model.tokenize
            theirs = prepare(probe)
            mine, cut = self._features(probe)
        except Exception:
            return False
        self.extras = {k: v for k, v in theirs.items() if not isinstance(v, torch.Tensor)}
        tensors = {k for k, v in theirs.items() if isinstance(v, torch.Tensor)}
        return (
            tensors == set(self.names)
            and cut == [False, False, False, True]
            and all(torch.equal(mine[k], theirs[k]) for k in self.names)
        )

    def _features(self, batch: list[str]) -> tuple[dict[str, Any], list[bool]]:
        """Tensors for one batch (the tokenisation that feeds the model), and which texts were cut."""
        import torch

        encodings = self.tokenizer.encode_batch(batch, add_special_tokens=True)
        features: dict[str, Any] = {
            name: torch.from_numpy(np.array([getattr(e, _FEATURE_FIELDS[name]) for e in encodings], dtype=np.int64))
            for name in self.names
        }
        if self.pin:
            features = {k: v.pin_memory() for k, v in features.items()}
        return features, [bool(e.overflowing) for e in encodings]

    def encode(self, texts: list[str], batch_size: int) -> tuple[np.ndarray, list[bool]]:
        """Unnormalised float32 vectors for ``texts`` (in order), and which were truncated."""
        import torch

        # sentence-transformers' order (longest characters first), hence its batches and padding
        order = np.argsort([-len(t) for t in texts])
        batches = [order[i : i + batch_size] for i in range(0, len(texts), batch_size)]
        cut = [False] * len(texts)
        out: Any = None
        with torch.inference_mode():
            for idx, (features, truncated) in zip(batches, self._prepared(texts, batches), strict=True):
                moved = {k: v.to(self.device, non_blocking=True) for k, v in features.items()}
                vectors = self.model({**moved, **self.extras})["sentence_embedding"]
                if out is None:
                    out = torch.empty((len(texts), vectors.shape[1]), dtype=torch.float32, device=vectors.device)
                out[torch.from_numpy(idx).to(vectors.device)] = vectors.float()
                for k, c in zip(idx.tolist(), truncated, strict=True):
                    cut[k] = c
        if out is None:
            return np.zeros((0, 0), dtype=np.float32), cut
        return out.cpu().numpy(), cut

    def _prepared(self, texts: list[str], batches: list[np.ndarray]) -> Iterator[tuple[dict[str, Any], list[bool]]]:
        """Each batch's features, in order.

        With prefetching, the next batch is prepared in a background thread (the Rust tokenizer
        releases the GIL) while the model runs.
        """

        def prepare(idx: np.ndarray) -> tuple[dict[str, Any], list[bool]]:
            return self._features([texts[k] for k in idx.tolist()])

        if not self.prefetch:
            yield from (prepare(idx) for idx in batches)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="nbeval-embed-prefetch") as pool:
            pending = pool.submit(prepare, batches[0]) if batches else None
            for k in range(len(batches)):
                assert pending is not None
                ready = pending.result()
                pending = pool.submit(prepare, batches[k + 1]) if k + 1 < len(batches) else None
                yield ready


def model_device(model: Any) -> Any:
    """The torch device ``model`` runs on: its ``device`` attribute, else its first parameter's, else the CPU."""
    import torch

    device = getattr(model, "device", None)
    if isinstance(device, torch.device):
        return device
    try:
        return next(model.parameters()).device
    except (StopIteration, AttributeError, TypeError):
        return torch.device("cpu")
