"""The :class:`ScorePairs` request and its handler.

Every distinct pair of a round, per cross-encoder, is scored in one call.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nbeval.errors import ResourceError
from nbeval.runtime.handlers import Request, RequestHandler, Round, register_handler

if TYPE_CHECKING:
    from nbeval.runtime.resources import Resources

__all__ = ["PairsHandler", "ScorePairs"]


@dataclass(frozen=True)
class ScorePairs(Request):
    """Ask a pair model (a cross-encoder) to score text pairs.

    Answer: ``numpy.ndarray`` of floats, one per pair, in order (a one-label model gives values in [0, 1]).
    """

    pairs: tuple[tuple[str, str], ...]
    """The ``(a, b)`` pairs to score, in the order the answer follows."""
    model: str
    """The cross-encoder's name or local path."""


class PairsHandler(RequestHandler):
    """Answers :class:`ScorePairs`: every distinct pair of a round, per cross-encoder, in one call."""

    kind = ScorePairs

    def scorer(self, resources: Resources, model: str) -> Any:
        """The shared cross-encoder scorer for ``model`` on the run's device.

        The one :func:`~nbeval.resources.cross_encoder.get_cross_encoder` gives.
        """
        from nbeval.resources.cross_encoder import get_cross_encoder

        return get_cross_encoder(model, device=resources.device)

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        """Score each model's distinct pairs of the round at once; each row gets its pairs' scores."""
        by_model: dict[str, list[tuple[int, ScorePairs]]] = defaultdict(list)
        for i, r in items:
            by_model[r.model].append((i, r))
        for model, group in by_model.items():
            distinct = list(dict.fromkeys(p for _, r in group for p in r.pairs))
            try:
                scored = dict(zip(distinct, self.scorer(resources, model).score(distinct).tolist(), strict=True))
            except Exception as exc:  # the model failed to load or score: every row says why
                err = exc if isinstance(exc, ResourceError) else ResourceError(str(exc) or type(exc).__name__)
                for i, _ in group:
                    rnd.answers[i] = err
                continue
            import numpy as np

            for i, r in group:
                rnd.answers[i] = np.array([scored[p] for p in r.pairs], dtype=np.float64)

    def placeholder(self, request: Any) -> Any:
        """Zero scores, one per pair."""
        import numpy as np

        return np.zeros(len(request.pairs), dtype=np.float64)


register_handler(PairsHandler())
