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
            # The round's distinct texts in the order first asked: the rows of its one matrix.
            position = {t: k for k, t in enumerate(dict.fromkeys([t for _, r in group for t in r.texts]))}
            try:
                emb = self.embedder(resources, model)
                todo = [t for t in position if t not in memo]
                fresh: Any = emb.encode(todo) if todo else None
                if todo:
                    memo.update(zip(todo, fresh, strict=True))
            except Exception as exc:  # the model failed to load or encode: every row says why
                err = ResourceError(f"embedder failed: {exc}")
                for i, _ in group:
                    rnd.answers[i] = err
                continue
            self._hand_out(group, position, memo, fresh if len(todo) == len(position) else None, emb, rnd)

    @staticmethod
    def _hand_out(
        group: list[tuple[int, Embed]], position: dict[str, int], memo: dict[str, Any], fresh: Any, emb: Any, rnd: Round
    ) -> None:
        """Answer each request of ``group`` with its texts' rows of the round's matrix.

        ``fresh`` is the encoder's answer when every text of the round was new (its rows are the
        round's texts in order, so it is the matrix as it is); else the matrix is stacked from the
        vectors kept. One gather per request rather than stacking its vectors one by one.
        """
        import numpy as np

        if not position:
            matrix = None
        elif fresh is not None:
            matrix = np.asarray(fresh)
        else:
            matrix = np.stack([memo[t] for t in position])
        is_truncated = getattr(emb, "truncated", None)
        cut = {t for t in position if is_truncated(t)} if is_truncated is not None else set()
        for i, r in group:
            if not r.texts or matrix is None:
                rnd.answers[i] = np.zeros((0, 0), dtype=np.float32)
                continue
            rnd.answers[i] = matrix[[position[t] for t in r.texts]]
            truncated = sum(t in cut for t in r.texts) if cut else 0
            if truncated:
                rnd.warnings[i].append(f"{truncated} text(s) longer than the embedder's window were truncated")

    def placeholder(self, request: Any) -> Any:
        """Equal unit vectors, one per text."""
        import numpy as np

        return np.full((len(request.texts), 4), 0.5, dtype=np.float32)


register_handler(EmbedHandler())
