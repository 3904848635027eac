"""What the two local-model request kinds share.

In :mod:`~nbeval.request_kinds.classify` and :mod:`~nbeval.request_kinds.token_logprobs`, every
input of a round that goes to one local model is deduplicated and sent in one call (the runner
batches them, sorted by length).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from nbeval.errors import ResourceError
from nbeval.resources.local_model_types import LocalModel
from nbeval.runtime.handlers import RequestHandler, Round

if TYPE_CHECKING:
    from nbeval.runtime.resources import Resources

__all__ = ["LocalModel", "LocalModelHandler"]


class LocalModelHandler(RequestHandler):
    """The handler of a kind whose requests carry a local model and inputs.

    The requests carry ``model`` (a :class:`LocalModel`) and inputs: a subclass says which inputs a
    request has (:meth:`inputs`) and how a runner answers them (:meth:`run`).
    """

    def inputs(self, request: Any) -> Sequence[Any]:
        """The inputs ``request`` asks about, in the order its answer follows."""
        raise NotImplementedError

    def run(self, runner: Any, distinct: list[Any]) -> Callable[[Sequence[Any]], Any]:
        """Ask ``runner`` about the round's ``distinct`` inputs at once.

        The result makes one request's answer from its own inputs.
        """
        raise NotImplementedError

    def runner(self, resources: Resources, ref: LocalModel) -> Any:
        """The shared runner of the local model ``ref`` on its device, else the run's."""
        from nbeval.resources.local_models import get_local_model

        return get_local_model(ref, default_device=resources.device)

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        """Ask each model about its distinct inputs of the round at once; each row gets its own."""
        groups: dict[LocalModel, list[tuple[int, Any]]] = defaultdict(list)
        for i, r in items:
            groups[r.model].append((i, r))
        for ref, group in groups.items():
            distinct = list(dict.fromkeys(x for _, r in group for x in self.inputs(r)))
            try:
                runner = self.runner(resources, ref)
                pick = self.run(runner, distinct)
            except Exception as exc:  # the model failed to load or run: every row says why
                name = type(exc).__name__
                err = exc if isinstance(exc, ResourceError) else ResourceError(f"{name}: {str(exc) or name}")
                for i, _ in group:
                    rnd.answers[i] = err
                continue
            is_truncated = getattr(runner, "truncated", None)
            for i, r in group:
                mine = self.inputs(r)
                rnd.answers[i] = pick(mine)
                cut = sum(bool(is_truncated(x)) for x in mine) if is_truncated is not None else 0
                if cut:
                    rnd.warnings[i].append(f"{cut} input(s) longer than {ref.name}'s window were truncated")
