"""What an evaluator is: its declaration, its per-row result, and the requests it may make.

An evaluator is a small class registered by id (see :mod:`nbeval.evaluators.registry`). Its
declaration (:class:`EvaluatorSpec`: inputs, metrics, resources, parameters) lives in the
catalogue; its code lives in a family module. Scoring code does no I/O of its own: when it needs
embeddings, a judge's reply or a local model's output it *yields a request* and receives the
answer, so the engine can batch, cache and parallelise those requests across every row and every
evaluator of a run::

    @register("semantic_similarity")
    class SemanticSimilarity(Evaluator):
        def score(self, row):
            a, b = yield Embed((row.expected_output, row.actual_output))
            return Score({"score": (float(a @ b) + 1) / 2})

An evaluator that needs nothing simply returns a :class:`Score`.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Union

from nbeval.data.model import is_missing
from nbeval.errors import EvaluatorError
from nbeval.requests import Chat, Embed, Request

if TYPE_CHECKING:
    from nbeval.data.model import LlmDataset, Row

__all__ = [
    "BOOL_METRICS",
    "COMMON_PARAMS",
    "Aggregate",
    "Chat",
    "Embed",
    "Evaluator",
    "EvaluatorSpec",
    "MetricSpec",
    "Request",
    "Score",
    "bool_score",
]

Direction = Literal["higher", "lower"]

#: Parameters every evaluator accepts on top of its own.
COMMON_PARAMS: dict[str, Any] = {
    "threshold": None,  # overrides the primary metric's default threshold (or a dict per metric)
    "max_rows": None,  # evaluate at most this many rows per model; the rest are skipped
    "name": None,  # the label of this configured instance in results (default: the id)
}


@dataclass(frozen=True)
class MetricSpec:
    """One metric an evaluator reports."""

    name: str
    """Column name in results, e.g. ``rouge_l``."""
    direction: Direction = "higher"
    """Whether higher or lower values are better."""
    lo: float = 0.0
    """Smallest possible value."""
    hi: float = 1.0
    """Largest possible value (``math.inf`` when unbounded)."""
    threshold: float | None = 0.5
    """Default threshold: a row or model on the wrong side of it fails."""
    primary: bool = False
    """The metric leaderboards rank on by default."""
    description: str = ""
    """What the metric measures, in one line."""

    def passes(self, value: float | None, threshold: float | None = None) -> bool | None:
        """Whether ``value`` is on the good side of the threshold (``None`` when unknowable)."""
        t = self.threshold if threshold is None else threshold
        if value is None or t is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return value >= t if self.direction == "higher" else value <= t


@dataclass(frozen=True)
class EvaluatorSpec:
    """The declaration of an evaluator: what it reads, what it needs, what it reports."""

    id: str
    """Stable identifier, e.g. ``rouge``."""
    family: str
    """Group shown in catalogues: ``deterministic``, ``embedding``, ``judge``, ``ragas``, ``model``."""
    kind: Literal["score", "bool", "rating"]
    """``bool`` evaluators report the five pass/fail metrics; ``rating`` ones a judge's yes/no."""
    inputs: tuple[str, ...]
    """Dataset fields that must be present (non-null, non-empty list) for a row to be scored."""
    metrics: tuple[MetricSpec, ...]
    """Metrics reported, primary first or flagged ``primary``."""
    optional_inputs: tuple[str, ...] = ()
    """Dataset fields used when present."""
    resources: tuple[str, ...] = ()
    """Shared resources used: ``embedder``, ``judge``, ``hf_model``."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """The evaluator's own parameters and their defaults."""
    description: str = ""
    """One paragraph: what it checks and how."""
    module: str = ""
    """Module holding the implementation, imported when the evaluator is first used."""

    @property
    def primary(self) -> MetricSpec:
        """The primary metric (the first one when none is flagged)."""
        for m in self.metrics:
            if m.primary:
                return m
        return self.metrics[0]

    def metric(self, name: str) -> MetricSpec:
        """The metric called ``name``."""
        for m in self.metrics:
            if m.name == name:
                return m
        msg = f"evaluator '{self.id}' has no metric '{name}'; it has {[m.name for m in self.metrics]}"
        raise EvaluatorError(msg)

    @property
    def needs_judge(self) -> bool:
        return "judge" in self.resources


@dataclass
class Score:
    """What an evaluator says about one row."""

    values: dict[str, float | None]
    """Metric name to value (``None`` when it cannot be computed for this row)."""
    rationale: str | None = None
    """Why: the judge's reasoning, matched strings, kinds of PII found, decoded text..."""
    label: str | None = None
    """A categorical outcome where there is one: the judge's ``yes``/``no``, a predicted class."""
    error: str | None = None
    """Why no value could be made (a parse failure, a failed call)."""
    details: dict[str, Any] | None = None
    """Structured extras (per-chunk ratings, an alignment); must be JSON-serialisable."""


@dataclass
class Aggregate:
    """A per-model value of one metric, with how many rows it was measured on."""

    value: float | None
    n: int
    details: dict[str, Any] | None = None


ScoreResult = Union[Score, Generator[Request, Any, Score]]


# ---------------------------------------------------------------------------------------------
# Boolean evaluators

#: The five per-row/per-model metrics of every bool evaluator, in this order.
BOOL_METRICS = ("pass", "fail", "retrieval_failures", "generation_failures", "parse_failures")


def bool_score(
    answer_ok: bool | None,
    context_ok: bool | None = None,
    *,
    rationale: str | None = None,
    error: str | None = None,
    details: dict[str, Any] | None = None,
) -> Score:
    """The five bool metrics for one row.

    ``answer_ok`` is whether the answer passed the check (``None``: the judge's reply could not be
    parsed). ``context_ok`` is whether the retrieved context passed (``None``: no context, so
    ``retrieval_failures`` is not measured on this row). A row passes when both pass.
    """
    if answer_ok is None:
        values: dict[str, float | None] = {
            "pass": 0.0,
            "fail": 0.0,
            "retrieval_failures": None if context_ok is None else float(not context_ok),
            "generation_failures": 0.0,
            "parse_failures": 1.0,
        }
        return Score(values, rationale=rationale, label="parse_failure", error=error, details=details)
    ok = answer_ok and (context_ok is not False)
    values = {
        "pass": float(ok),
        "fail": float(not ok),
        "retrieval_failures": None if context_ok is None else float(not context_ok),
        "generation_failures": float(not answer_ok),
        "parse_failures": 0.0,
    }
    return Score(values, rationale=rationale, label="pass" if ok else "fail", error=error, details=details)


# ---------------------------------------------------------------------------------------------


class Evaluator:
    """Base class of every evaluator.

    Subclasses set nothing but :meth:`score` (and, rarely, :meth:`aggregate`,
    :meth:`check_dataset` or :meth:`missing_input`); ``spec`` is attached by ``@register``.
    Construct through :func:`nbeval.evaluator` (``nbeval.evaluator("rouge", threshold=0.5)``).
    """

    spec: ClassVar[EvaluatorSpec]

    def __init__(self, **params: Any) -> None:
        allowed = {**COMMON_PARAMS, **self.extra_params(), **dict(self.spec.params)}
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            msg = (
                f"evaluator '{self.spec.id}' has no parameter {', '.join(map(repr, unknown))}; "
                f"it accepts {', '.join(sorted(allowed))}"
            )
            raise EvaluatorError(msg)
        self.params: dict[str, Any] = {**allowed, **params}
        self.thresholds = self._resolve_thresholds(self.params.get("threshold"))
        max_rows = self.params.get("max_rows")
        if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 0):
            msg = f"evaluator '{self.spec.id}': max_rows must be a non-negative integer, got {max_rows!r}"
            raise EvaluatorError(msg)

    # -- configuration ---------------------------------------------------------------------

    @classmethod
    def extra_params(cls) -> dict[str, Any]:
        """Parameters accepted by this family beyond the spec's (e.g. ``judge=``, ``embedder=``)."""
        extra: dict[str, Any] = {}
        if "embedder" in cls.spec.resources:
            extra["embedder"] = None
        if "judge" in cls.spec.resources:
            extra["judge"] = None
        return extra

    def _resolve_thresholds(self, given: Any) -> dict[str, float | None]:
        thresholds = {m.name: m.threshold for m in self.spec.metrics}
        if given is None:
            return thresholds
        if isinstance(given, Mapping):
            for name, value in given.items():
                self.spec.metric(name)  # raises on an unknown metric
                thresholds[name] = float(value)
            return thresholds
        if isinstance(given, bool) or not isinstance(given, (int, float)):
            msg = f"evaluator '{self.spec.id}': threshold must be a number or a dict of metric to number, got {given!r}"
            raise EvaluatorError(msg)
        if self.spec.kind == "bool":
            thresholds["pass"] = float(given)
        else:
            thresholds[self.spec.primary.name] = float(given)
        return thresholds

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def name(self) -> str:
        """The label of this configured instance in results (the id unless ``name=`` was given)."""
        return self.params.get("name") or self.spec.id

    def __repr__(self) -> str:
        own = {k: v for k, v in self.params.items() if v is not None and k not in ("name",)}
        args = ", ".join(f"{k}={v!r}" for k, v in own.items())
        return f"nbeval.evaluator({self.spec.id!r}{', ' + args if args else ''})"

    # -- what the engine calls -------------------------------------------------------------

    def check_dataset(self, dataset: LlmDataset) -> None:
        """Raise :class:`EvaluatorError` before the run when this evaluator cannot work on ``dataset``."""

    def missing_input(self, row: Row) -> str | None:
        """Why ``row`` cannot be scored (``None`` when it can). Default: a required input is missing."""
        missing = [name for name in self.spec.inputs if is_missing(getattr(row, name, None))]
        if missing:
            return "missing " + ", ".join(missing)
        return None

    def score(self, row: Row) -> ScoreResult:
        """Score one row: return a :class:`Score`, or yield requests and then return one."""
        raise NotImplementedError

    def aggregate(self, rows: Sequence[Row], scores: Sequence[Score]) -> dict[str, Aggregate]:
        """Per-model values from one model's scored rows. Default: the mean of each metric."""
        out: dict[str, Aggregate] = {}
        for m in self.spec.metrics:
            vals = [s.values.get(m.name) for s in scores]
            vals = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
            out[m.name] = Aggregate(sum(vals) / len(vals) if vals else None, len(vals))
        return out

