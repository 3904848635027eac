"""The :class:`Embed` request and its handler.

Every distinct text of a round, per embedder, is encoded once in the run (vectors are kept for the
run's later rounds).
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nbeval.errors import ResourceError
from nbeval.runtime.handlers import Request, RequestHandler, Round, register_handler

if TYPE_CHECKING:
    from nbeval.runtime.resources import Resources

__all__ = ["Embed", "EmbedHandler"]


@dataclass(frozen=True)
class Embed(Request):
    """Ask for embeddings. Answer: ``numpy.ndarray`` of shape (len(texts), dim), rows L2-normalised."""

    texts: tuple[str, ...]
    """The texts to embed, in the order the answer's rows follow."""
    model: str | None = None
    """Embedder name or path (``None``: the run's embedder)."""


class EmbedHandler(RequestHandler):
    """The handler that answers :class:`Embed` requests.

    One encode call per embedder and round, for the texts the run has not encoded yet (its state:
    vectors by embedder and text).
    """

    kind = Embed

    def embedder(self, resources: Resources, model: Any = None) -> Any:
        """The embedder for ``model``.

        ``None`` asks for the run's. A name or path resolves to the shared
        :func:`~nbeval.resources.embedder.get_embedder` instance; a ready ``Embedder`` (or any
        object with ``encode``) is used as it is.
        """
        from nbeval.resources.embedder import get_embedder

        spec = model if model is not None else resources.embedder_spec
        # A name or path is looked up; only another kind of object is taken as a ready embedder
        # (a str has an ``encode`` method too, so duck typing alone would mistake it for one).
        if spec is None or isinstance(spec, (str, os.PathLike)):
            return get_embedder(spec, device=resources.device)
        if callable(getattr(spec, "encode", None)):
            return spec
        msg = f"embedder must be a model name, a local path or an object with encode(texts); got {type(spec).__name__}"
        raise ResourceError(msg)

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        """Encode each embedder's new texts of the round at once; each row gets its texts' rows."""
        by_model: dict[str | None, list[tuple[int, Embed]]] = defaultdict(list)
        for i, r in items:
            by_model[r.model].append((i, r))
        vectors = resources.state(Embed)
        for model, group in by_model.items():
            memo = vectors.setdefault(model, {})
            try:
                emb = self.embedder(resources, model)
                todo = [t for t in dict.fromkeys(t for _, r in group for t in r.texts) if t not in memo]
                if todo:
                    memo.update(zip(todo, emb.encode(todo), strict=True))
            except Exception as exc:  # the model failed to load or encode: every row says why
                err = ResourceError(f"embedder failed: {exc}")
                for i, _ in group:
                    rnd.answers[i] = err
                continue
            import numpy as np

            # One matrix of the round's distinct texts; each row's answer indexes into it (one
            # gather per row instead of stacking its vectors one by one).
            position = {t: k for k, t in enumerate(dict.fromkeys(t for _, r in group for t in r.texts))}
            matrix = np.stack([memo[t] for t in position]) if position else None
            is_truncated = getattr(emb, "truncated", None)
            cut = {t for t in position if is_truncated(t)} if is_truncated is not None else set()
            for i, r in group:
                if not r.texts or matrix is None:
                    rnd.answers[i] = np.zeros((0, 0), dtype=np.float32)
                    continue
                rnd.answers[i] = matrix[[position[t] for t in r.texts]]
                truncated = sum(t in cut for t in r.texts)
                if truncated:
                    rnd.warnings[i].append(f"{truncated} text(s) longer than the embedder's window were truncated")

    def placeholder(self, request: Any) -> Any:
        """Equal unit vectors, one per text."""
        import numpy as np

        return np.full((len(request.texts), 4), 0.5, dtype=np.float32)


register_handler(EmbedHandler())
