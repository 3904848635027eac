"""What an evaluator is: its declaration, its per-row result, and the requests it may make.

An evaluator is a small class registered by id (see :mod:`nbeval.evaluators.registry`) that
carries its declaration (:class:`EvaluatorSpec`: inputs, metrics, resources, typed parameters) as
its ``spec``, in the same place for built-ins, plugins and notebooks. Scoring code does no I/O of its
own: when it needs embeddings, a judge's reply or a local model's output it *yields a request* and
receives the answer, so the engine can batch, cache and parallelise those requests across every row
and every evaluator of a run::

    @register
    class SemanticSimilarity(Evaluator):
        spec = EvaluatorSpec(id="semantic_similarity", family="embedding", kind="score",
                             inputs=("expected_output", "actual_output"), resources=("embedder",),
                             metrics=(MetricSpec("score", primary=True),))

        def score(self, row):
            a, b = yield Embed((row.expected_output, row.actual_output))
            return Score({"score": (float(a @ b) + 1) / 2})

An evaluator that needs nothing simply returns a :class:`Score`.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Union

from nbeval.data.rows import field_missing
from nbeval.errors import EvaluatorError
from nbeval.evaluators.params import Param, Params
from nbeval.evaluators.row_fields import check_inputs
from nbeval.evaluators.settings import EvaluatorSettings
from nbeval.request_kinds import Chat, Embed, Request

if TYPE_CHECKING:
    from nbeval.data.model import LlmDataset, Row

__all__ = [
    "BOOL_METRICS",
    "BOOL_METRIC_SPECS",
    "COMMON_PARAMS",
    "UNRATED_LABELS",
    "Aggregate",
    "Chat",
    "Direction",
    "Embed",
    "Evaluator",
    "EvaluatorSpec",
    "MetricSpec",
    "Param",
    "Params",
    "Request",
    "Score",
    "ScoreResult",
    "bool_metric_specs",
    "bool_score",
    "default_threshold",
]

#: Whether higher or lower values of a metric are better.
Direction = Literal["higher", "lower"]

#: Parameters every evaluator accepts on top of its own.
COMMON_PARAMS: dict[str, Any] = {
    "threshold": None,  # overrides the primary metric's default threshold (or a dict per metric)
    "max_rows": None,  # evaluate at most this many rows per model; the rest are skipped
    "name": None,  # the label of this configured instance in results (default: the id)
}


class _Unset:
    """The default of :attr:`MetricSpec.threshold`: none given, so :func:`default_threshold` decides."""

    def __repr__(self) -> str:
        return "<default_threshold(lo, hi)>"


_DEFAULT: Any = _Unset()


def default_threshold(lo: float, hi: float) -> float | None:
    """Give the threshold of a metric declared without one.

    0.5 for a metric whose range is [0, 1] (a share, a probability, a similarity mapped to [0, 1]:
    the contract's bool metrics and most of its tables), ``None`` (no threshold, so no problem is
    ever reported on it) for any other range, whose scale nbeval cannot guess. The one rule,
    applied by :class:`MetricSpec`.

    Args:
        lo: Smallest possible value of the metric.
        hi: Largest possible value of the metric.

    Returns:
        0.5 when the range is [0, 1], else ``None``.
    """
    return 0.5 if (lo, hi) == (0.0, 1.0) else None


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
    threshold: float | None = _DEFAULT
    """Default threshold: a row or model on the wrong side of it fails. A finite number, or
    ``None`` for none (NaN would fail every value, a perfect one too: it is refused). Not given:
    :func:`default_threshold` (0.5 for a metric in [0, 1], else ``None``)."""
    primary: bool = False
    """The metric leaderboards rank on by default."""
    description: str = ""
    """What the metric measures, in one line."""

    def __post_init__(self) -> None:
        if isinstance(self.threshold, _Unset):
            object.__setattr__(self, "threshold", default_threshold(self.lo, self.hi))
        t = self.threshold
        if t is not None and (isinstance(t, bool) or not isinstance(t, numbers.Real) or not math.isfinite(t)):
            msg = f"metric '{self.name}': threshold must be a finite number or None, got {t!r}"
            raise EvaluatorError(msg)


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
    params: Params = field(default_factory=Params)
    """The evaluator's own parameters, declared as :class:`Param` objects (name, type, default,
    description): as a mapping, each name to its default; ``params.param(name)`` gives its type
    and description. A mapping of name to default is accepted as a shorthand (each type is then
    the default's)."""
    description: str = ""
    """One paragraph: what it checks and how."""
    module: str = ""
    """Module holding the implementation, imported when the evaluator is first used (filled in
    by ``@register`` from the class)."""

    if TYPE_CHECKING:  # what the generated __init__ accepts: params in any form Params() takes

        def __init__(
            self,
            id: str,
            family: str,
            kind: Literal["score", "bool", "rating"],
            inputs: tuple[str, ...],
            metrics: tuple[MetricSpec, ...],
            optional_inputs: tuple[str, ...] = (),
            resources: tuple[str, ...] = (),
            params: Iterable[Param] | Mapping[str, Any] = (),
            description: str = "",
            module: str = "",
        ) -> None: ...

    def __post_init__(self) -> None:
        if not isinstance(self.params, Params):
            object.__setattr__(self, "params", Params(self.params))
        # A typo here would skip every row as missing that input: refuse it where it is declared.
        check_inputs(self.id, self.inputs)
        check_inputs(self.id, self.optional_inputs, "optional input")

    @property
    def primary(self) -> MetricSpec:
        """The primary metric (the first one when none is flagged)."""
        for m in self.metrics:
            if m.primary:
                return m
        return self.metrics[0]

    def metric(self, name: str) -> MetricSpec:
        """Look up one of the declared metrics by name.

        Args:
            name: The metric's name, as in :attr:`MetricSpec.name`.

        Returns:
            The metric called ``name``.

        Raises:
            EvaluatorError: When the evaluator declares no metric of that name.
        """
        for m in self.metrics:
            if m.name == name:
                return m
        msg = f"evaluator '{self.id}' has no metric '{name}'; it has {[m.name for m in self.metrics]}"
        raise EvaluatorError(msg)

    @property
    def needs_judge(self) -> bool:
        """Whether the evaluator asks a judge model (``"judge"`` is among its resources)."""
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
    """The per-model value (``None`` when no row had one)."""
    n: int
    """How many rows the value was measured on."""
    details: dict[str, Any] | None = None
    """Structured extras of the aggregate; must be JSON-serialisable."""


#: What :meth:`Evaluator.score` returns: a :class:`Score`, or a generator that yields requests and
#: returns one.
ScoreResult = Union[Score, Generator[Request, Any, Score]]


# ---------------------------------------------------------------------------------------------
# Boolean evaluators

#: The declaration of the five bool metrics, the one place they are defined: a ``kind="bool"``
#: evaluator gets them from here (see :func:`bool_metric_specs`). Each is a share of rows in
#: [0, 1] with the default threshold 0.5; ``pass`` is the primary metric. The descriptions are
#: worded for a judge's check (the judge evaluators use them as they are); an evaluator checking
#: something else rewords them through :func:`bool_metric_specs`.
BOOL_METRIC_SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "pass",
        "higher",
        threshold=0.5,
        primary=True,
        description="share of the rated rows that passed the judge's check",
    ),
    MetricSpec("fail", "lower", threshold=0.5, description="share of the rated rows that failed the judge's check"),
    MetricSpec(
        "retrieval_failures",
        "lower",
        threshold=0.5,
        description="share of rows whose retrieved context failed the check",
    ),
    MetricSpec(
        "generation_failures", "lower", threshold=0.5, description="share of rows whose answer failed the check"
    ),
    MetricSpec(
        "parse_failures",
        "lower",
        threshold=0.5,
        description="share of rows that could not be rated (the judge's reply could not be understood)",
    ),
)

#: The names of the five per-row/per-model metrics of every bool evaluator, in this order.
BOOL_METRICS: tuple[str, ...] = tuple(m.name for m in BOOL_METRIC_SPECS)

#: Labels of a row that could not be rated, each with what happened (as problems word it).
#: Such a row is neither a pass nor a fail: its primary metric has no value, so per-model
#: aggregates are measured over the rated rows (``n`` of ``N``), and
#: :func:`nbeval.results.reporting.problems.problems` reports it as ``unrated``, apart from threshold
#: breaches. Bool evaluators set one through :func:`bool_score`; judge evaluators use
#: ``parse_failure``.
UNRATED_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "parse_failure": "the judge's reply could not be parsed; each raw reply is kept as the row's rationale",
        "timed_out": "a regular-expression search timed out; simplify the pattern (catastrophic backtracking?)",
        "unchecked": "the check could not be applied; the row's error says why",
    }
)


def bool_metric_specs(
    names: Sequence[str] | None = None, descriptions: Mapping[str, str] | None = None
) -> tuple[MetricSpec, ...]:
    """Declare the metrics of a bool evaluator.

    The metrics are :data:`BOOL_METRIC_SPECS`, or only those in ``names`` (always in the standard
    order, and always with ``pass``), each described by ``descriptions`` where it names the metric.

    Every ``kind="bool"`` evaluator declares its metrics with it:
    ``EvaluatorSpec(..., kind="bool", metrics=bool_metric_specs())``; one that can never fail to
    parse leaves out ``parse_failures`` from ``names``.

    Args:
        names: The metrics to report, some of :data:`BOOL_METRICS` including ``pass``; ``None``
            reports all five.
        descriptions: Metric name to a description replacing the standard one.

    Returns:
        The metric declarations, in the standard order.

    Raises:
        EvaluatorError: When ``names`` holds an unknown metric or lacks ``pass``, or when
            ``descriptions`` names a metric that is not reported.
    """
    wanted = BOOL_METRICS if names is None else tuple(names)
    unknown = [n for n in wanted if n not in BOOL_METRICS]
    if unknown or "pass" not in wanted:
        msg = f"bool metrics must be some of {list(BOOL_METRICS)}, with 'pass' among them; got {list(wanted)}"
        raise EvaluatorError(msg)
    descriptions = dict(descriptions or {})
    stray = sorted(set(descriptions) - set(wanted))
    if stray:
        msg = f"descriptions for metrics that are not reported: {stray}; the metrics are {list(wanted)}"
        raise EvaluatorError(msg)
    return tuple(
        replace(m, description=descriptions.get(m.name, m.description)) for m in BOOL_METRIC_SPECS if m.name in wanted
    )


def bool_score(
    answer_ok: bool | None,
    context_ok: bool | None = None,
    *,
    rationale: str | None = None,
    error: str | None = None,
    details: dict[str, Any] | None = None,
    unrated: str = "parse_failure",
    context_unrated: bool = False,
) -> Score:
    """Compute the five bool metrics for one row.

    A row passes when both the answer and the context pass and fails when either fails.

    A row whose outcome is unknown (its answer could not be checked, or its answer passed and its
    context could not be checked) is *unrated*: ``pass``, ``fail`` and (when the answer is the
    unknown part) ``generation_failures`` are ``None``, not 0, so per-model rates are measured over
    the rated rows only; ``parse_failures`` is 1 and the label is ``unrated``, one of
    :data:`UNRATED_LABELS` saying what happened. On every other row ``parse_failures`` is 0, so
    per row ``pass + fail + parse_failures = 1`` whenever ``pass`` has a value.

    Args:
        answer_ok: Whether the answer passed the check (``None``: it could not be checked, e.g. the
            judge's reply could not be parsed).
        context_ok: Whether the retrieved context passed (``None``: not measured on this row).
        rationale: Why, kept as the score's rationale.
        error: Why no value could be made, kept as the score's error.
        details: Structured extras, kept as the score's details.
        unrated: The label of an unrated row, one of :data:`UNRATED_LABELS`.
        context_unrated: Whether the row had a context that could not be checked.

    Returns:
        The row's score, labelled ``pass``, ``fail`` or ``unrated``.

    Raises:
        EvaluatorError: When ``unrated`` is not one of :data:`UNRATED_LABELS`.
    """
    if unrated not in UNRATED_LABELS:
        msg = f"bool_score: unrated must be one of {sorted(UNRATED_LABELS)}, got {unrated!r}"
        raise EvaluatorError(msg)
    retrieval = None if context_ok is None else float(not context_ok)
    generation = None if answer_ok is None else float(not answer_ok)
    if answer_ok is not False and context_ok is not False and (answer_ok is None or context_unrated):
        values: dict[str, float | None] = {
            "pass": None,
            "fail": None,
            "retrieval_failures": retrieval,
            "generation_failures": generation,
            "parse_failures": 1.0,
        }
        return Score(values, rationale=rationale, label=unrated, error=error, details=details)
    ok = bool(answer_ok) and context_ok is not False
    values = {
        "pass": float(ok),
        "fail": float(not ok),
        "retrieval_failures": retrieval,
        "generation_failures": generation,
        "parse_failures": 0.0,
    }
    return Score(values, rationale=rationale, label="pass" if ok else "fail", error=error, details=details)


# ---------------------------------------------------------------------------------------------


class Evaluator:
    """Base class of every evaluator.

    Subclasses set their declaration, ``spec``, in the class body and write :meth:`score` (and,
    rarely, :meth:`aggregate`, :meth:`check_dataset`, :meth:`missing_input` or :meth:`spec_for`);
    ``@register`` registers them by ``spec.id``. Construct through :func:`nbeval.evaluator`
    (``nbeval.evaluator("rouge", threshold=0.5)``).

    Args:
        **params: The instance's parameters: the common ones (``threshold``, ``max_rows``,
            ``name``), the family's (:meth:`extra_params`) and the spec's own; any left out take
            their defaults. An unknown name, a bad threshold or a bad ``max_rows`` raises
            :class:`EvaluatorError`.
    """

    spec: EvaluatorSpec
    """On the class, the evaluator's declaration, set in the class body (built-ins, plugins and
    notebooks alike) and registered by ``@register``. On an instance, the declaration for that
    instance's parameters, from :meth:`spec_for`; the same as the class's unless parameters change
    what the evaluator reads, needs or reports."""

    settings: EvaluatorSettings
    """How this instance runs, as the engine reads it: thresholds, row limit, its own judge and
    embedder, score mode (a frozen value; a change is a copy, see :meth:`with_judge`)."""

    rebuilt_on_use: ClassVar[tuple[str, ...]] = ()
    """Attributes built on first use (a scorer, a tokenizer, a memo) that pickling leaves out:
    the copy builds its own when it first scores. A used evaluator then pickles as a fresh one
    (a Dask worker's copy, a saved plan) however unpicklable what it built is."""

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in self.rebuilt_on_use:
            state.pop(name, None)
        return state

    def __init__(self, **params: Any) -> None:
        declared = type(self).spec
        allowed = {**COMMON_PARAMS, **self.extra_params(), **dict(declared.params)}
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            msg = (
                f"evaluator '{declared.id}' has no parameter {', '.join(map(repr, unknown))}; "
                f"it accepts {', '.join(sorted(allowed))}"
            )
            raise EvaluatorError(msg)
        self.params: dict[str, Any] = {**allowed, **params}
        spec = type(self).spec_for(MappingProxyType(self.params))
        if spec.id != declared.id:
            msg = f"evaluator '{declared.id}': spec_for() returned the spec of '{spec.id}'; it must keep the id"
            raise EvaluatorError(msg)
        self.spec = spec
        thresholds = self._resolve_thresholds(self.params.get("threshold"))
        max_rows = self.params.get("max_rows")
        if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 0):
            msg = f"evaluator '{self.spec.id}': max_rows must be a non-negative integer, got {max_rows!r}"
            raise EvaluatorError(msg)
        self.settings = self._settings_of(thresholds, max_rows)

    def _settings_of(self, thresholds: Mapping[str, float | None], max_rows: int | None) -> EvaluatorSettings:
        """The typed settings the engine reads, from the parameters as given."""
        mode: Any = (self.params.get("score_mode") or "sampled") if "score_mode" in self.spec.params else None
        return EvaluatorSettings(
            thresholds,
            max_rows,
            judge=self.params.get("judge"),
            embedder=self.params.get("embedder"),
            score_mode=mode,
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "settings" not in state:  # pickled before evaluators carried settings: made from what it kept
            self.settings = self._settings_of(state.pop("thresholds", {}), self.params.get("max_rows"))
            self.__dict__.pop("thresholds", None)

    @property
    def thresholds(self) -> Mapping[str, float | None]:
        """Each metric's threshold (read-only; :attr:`settings` holds them)."""
        return self.settings.thresholds

    @thresholds.setter
    def thresholds(self, value: Mapping[str, float | None]) -> None:
        self.settings = self.settings.with_thresholds(value)

    def with_judge(self, judge: Any) -> Evaluator:
        """Copy this evaluator with another judge.

        The copy's settings and its recorded ``params`` name that judge; this one is left as it
        was, so it can be run again with another judge.

        Args:
            judge: The judge the copy asks.

        Returns:
            The copy asking ``judge``.
        """
        clone = copy.copy(self)
        clone.params = {**self.params, "judge": judge}
        clone.settings = self.settings.with_judge(judge)
        return clone

    @classmethod
    def spec_for(cls, params: Mapping[str, Any]) -> EvaluatorSpec:
        """Give the declaration of an instance configured with ``params``.

        Default: the class's declared :attr:`spec`.

        Override it where parameters change what an instance reads, needs or reports, and
        return a copy of the declared spec with those changes (``dataclasses.replace``), keeping
        its id: ``pipeline`` reads the fields its function takes, ``custom_judge`` reports the one
        metric of its assessment type. It runs in :meth:`__init__` before thresholds are
        resolved, so thresholds follow the instance's metrics; raise :class:`EvaluatorError` for
        parameters that make no spec.

        Args:
            params: Every parameter of the instance, defaults filled in (read-only).

        Returns:
            The instance's declaration, with the class's id.
        """
        return cls.spec

    # -- configuration ---------------------------------------------------------------------

    @classmethod
    def extra_params(cls) -> dict[str, Any]:
        """List the parameters accepted by this family beyond the spec's (e.g. ``judge=``, ``embedder=``).

        Returns:
            Each extra parameter's name to its default (``None``).
        """
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
                thresholds[name] = self._threshold(value, name)
            return thresholds
        if isinstance(given, bool) or not isinstance(given, numbers.Real):
            msg = f"evaluator '{self.spec.id}': threshold must be a number or a dict of metric to number, got {given!r}"
            raise EvaluatorError(msg)
        name = "pass" if self.spec.kind == "bool" else self.spec.primary.name
        thresholds[name] = self._threshold(given, name)
        return thresholds

    def _threshold(self, value: Any, metric: str) -> float:
        """Check ``value`` as the threshold of ``metric`` and return it as a float.

        It must be a finite number (a NaN threshold would fail every value, a perfect one too; an
        infinite one pass or fail them all), else :class:`EvaluatorError` naming the evaluator, the
        parameter and the metric.
        """
        where = f"evaluator '{self.spec.id}': threshold of metric '{metric}'"
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise EvaluatorError(f"{where} must be a number, got {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise EvaluatorError(f"{where} must be a finite number, got {number!r}")
        return number

    @property
    def id(self) -> str:
        """The evaluator's id, from its spec."""
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
        """Raise :class:`EvaluatorError` before the run when this evaluator cannot work on ``dataset``.

        The default accepts every dataset.

        Args:
            dataset: The dataset the run will score.
        """

    def missing_input(self, row: Row) -> str | None:
        """Say why ``row`` cannot be scored.

        Default: a required input is missing.

        Args:
            row: The row about to be scored.

        Returns:
            The reason, e.g. ``missing expected_output``; ``None`` when the row can be scored.
        """
        missing = [name for name in self.spec.inputs if field_missing(name, getattr(row, name, None))]
        if missing:
            return "missing " + ", ".join(missing)
        return None

    def score(self, row: Row) -> ScoreResult:
        """Score one row: return a :class:`Score`, or yield requests and then return one.

        Args:
            row: The row to score.

        Returns:
            A :class:`Score`, or a generator that yields requests, receives their answers and
            returns one.

        Raises:
            NotImplementedError: Always, here; every subclass writes its own.
        """
        raise NotImplementedError

    def aggregate(self, rows: Sequence[Row], scores: Sequence[Score]) -> dict[str, Aggregate]:
        """Compute the per-model values from one model's scored rows.

        Default: the mean of each metric over the rows that have a value (not ``None``, not NaN).

        Args:
            rows: The model's scored rows.
            scores: Their scores, in the same order.

        Returns:
            Each metric's name to its aggregate.
        """
        out: dict[str, Aggregate] = {}
        for m in self.spec.metrics:
            vals = [
                v
                for v in (s.values.get(m.name) for s in scores)
                if v is not None and not (isinstance(v, float) and math.isnan(v))
            ]
            out[m.name] = Aggregate(sum(vals) / len(vals) if vals else None, len(vals))
        return out
