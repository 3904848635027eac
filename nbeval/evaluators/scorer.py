"""``@nbeval.scorer``: a plain function as an evaluator, the one function route.

The function's parameter names choose what it reads from each row (:data:`FIELDS`:
``actual_output``, ``input``, ``expected_output``, ``context`` ...; ``context`` and
``expected_context`` as lists of chunk texts; ``row`` for the whole
:class:`~nbeval.data.model.Row`). Parameters without a default are required inputs (a row missing
one is skipped, as for every evaluator); those with a default are optional inputs::

    @nbeval.scorer
    def polite(actual_output: str) -> bool:
        return "please" in actual_output.lower()

    @nbeval.scorer(name="lengths", metrics=["words", "chars"], range=(0, math.inf))
    def lengths(actual_output):
        return {"words": len(actual_output.split()), "chars": len(actual_output)}

    nbeval.evaluate(rows, [polite, "rouge"])   # or "polite": decorating registers it by id

The return convention (:meth:`ScoringFunction.to_score`), one for every function route:

- a bool (1.0 or 0.0) or a number: the value of the primary metric, named after the scorer (as a
  custom judge's metric is named after its id); ``None`` or anything else errors the row;
- a dict of metric to value, for named metrics, which must be declared with ``metrics=`` (a value
  under any other name errors the row and names the metrics); its key ``rationale``, when there
  is one, is the row's rationale, not a metric;
- a ``(value, rationale)`` pair: either of the above with the row's rationale;
- a :class:`~nbeval.evaluators.base.Score`, as it is.

Its scoring does no I/O through nbeval: the engine just calls it, and an exception it raises errors
that row only. ``nbeval.evaluator("pipeline", fn=...)`` is an older spelling of the same route
(:func:`scoring_function` reads its function; its one metric is ``score``).

The decorated name stays callable as the function; ``.evaluator(threshold=...)`` configures it
like ``nbeval.evaluator(id, ...)``. A package offers scorers to the command line through the
``nbeval.evaluators`` entry-point group (``polite = "mypkg.scorers:polite"``). A saved result keeps
the scorer's metrics table, so it loads where the function does not exist.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Direction, Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import _CLASSES, _builtin_specs, register, unregister
from nbeval.evaluators.row_fields import FUNCTION_FIELDS, close_match_hint, field_value

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = ["FIELDS", "Scorer", "ScorerEvaluator", "ScoringFunction", "scorer", "scoring_function"]

#: The parameter names a scorer function may have: the row fields it may read, and ``row``.
FIELDS: tuple[str, ...] = (*FUNCTION_FIELDS, "row")
_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")
_UNSET: Any = object()


class ScorerEvaluator(Evaluator):
    """The evaluator of one :class:`Scorer`: a subclass is made per scorer, with its spec."""

    scorer: Scorer

    def score(self, row: Row) -> Score:
        """The function's return for ``row``, read by the one convention."""
        return self.scorer.score_row(row)

    def __reduce__(self) -> tuple[Any, ...]:
        # the class is made at decoration time: a copy (a Dask worker's) is rebuilt from the scorer,
        # which pickles by reference to the module holding the decorated function
        return (_configured, (self.scorer, self.params))


def _configured(s: Scorer, params: dict[str, Any]) -> Evaluator:
    return s.evaluator(**params)


class ScoringFunction:
    """A function read as an evaluator.

    It holds the row fields the function takes by parameter name, its declaration, and what its
    return value means (:meth:`to_score`). Made by :func:`scoring_function`; :class:`Scorer`
    (``@nbeval.scorer``) and ``pipeline(fn=...)`` score through it.
    """

    def __init__(self, fn: Callable[..., Any], spec: EvaluatorSpec, args: tuple[str, ...], label: str) -> None:
        self.function = fn
        """The function, called with the row fields of :attr:`args` by name."""
        self.spec = spec
        """The evaluator's declaration."""
        self.args = args
        """The row fields (or ``row``) passed to the function, by parameter name."""
        self.label = label
        """How a row's error names the function (``scorer 'polite'``)."""

    @property
    def id(self) -> str:
        """The evaluator id."""
        return self.spec.id

    def call(self, row: Row) -> Any:
        """What the function returns for ``row``."""
        return self.function(**{name: field_value(row, name) for name in self.args})

    def score_row(self, row: Row) -> Score:
        """The function's return for ``row`` as a :class:`Score`."""
        return self.to_score(self.call(row))

    def to_score(self, out: Any) -> Score:
        """The function's return value as a :class:`Score`, by the convention of the module docstring."""
        if isinstance(out, Score):
            return out
        rationale = None
        if isinstance(out, tuple) and len(out) == 2 and (out[1] is None or isinstance(out[1], str)):
            out, rationale = out
        if isinstance(out, Mapping):
            values: dict[str, float | None] = {}
            for key, value in out.items():
                if key == "rationale":
                    rationale = None if value is None else str(value)
                    continue
                number = _number(value)
                if number is _UNSET:
                    error = f"{self.label} returned {value!r} for '{key}', not a number"
                    return Score({}, rationale=rationale, error=error)
                values[str(key)] = number
            return Score(values, rationale=rationale)
        number = _number(out)
        if number is _UNSET or number is None:
            error = (
                f"{self.label} returned {out!r}, not a number; return a bool, a number, "
                "a dict of metric to number, either with a rationale as a pair, or an nbeval.Score"
            )
            return Score({self.spec.primary.name: None}, rationale=rationale, error=error)
        return Score({self.spec.primary.name: number}, rationale=rationale)


class Scorer(ScoringFunction):
    """A function decorated with :func:`scorer`.

    It is still callable as the function, and registered as the evaluator :attr:`id`.
    """

    __wrapped__: Callable[..., Any]

    def __init__(self, fn: Callable[..., Any], spec: EvaluatorSpec, args: tuple[str, ...]) -> None:
        super().__init__(fn, spec, args, f"scorer '{spec.id}'")
        functools.update_wrapper(self, fn)
        self.evaluator_class: type[ScorerEvaluator] = type(
            f"{spec.id}_scorer", (ScorerEvaluator,), {"scorer": self, "__module__": __name__}
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the decorated function itself, as if it were not decorated."""
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<nbeval scorer {self.spec.id!r} reading {', '.join(self.args) or 'nothing'}>"

    def __reduce__(self) -> str:
        return str(getattr(self, "__qualname__", self.spec.id))  # by reference, as the function it replaces

    def evaluator(self, **params: Any) -> Evaluator:
        """This scorer configured: ``polite.evaluator(threshold=0.8, max_rows=10)``."""
        return self.evaluator_class(**params)

    def register(self) -> None:
        """Register (again) under :attr:`id`; a scorer registered there before is replaced."""
        current = _CLASSES.get(self.spec.id)
        if current is not None and issubclass(current, ScorerEvaluator):
            unregister(self.spec.id)
        register(spec=self.spec)(self.evaluator_class)


def _number(value: Any) -> Any:
    """``value`` as a metric value (bools as 1.0 / 0.0; ``None`` stays), or :data:`_UNSET`."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, numbers.Real) and not math.isnan(float(value)):
        return float(value)
    return _UNSET


@overload
def scorer(fn: Callable[..., Any], /) -> Scorer: ...


@overload
def scorer(
    *,
    name: str | None = None,
    metrics: Sequence[str | MetricSpec] | None = None,
    threshold: float | None = _UNSET,
    direction: Direction = "higher",
    range: tuple[float, float] = (0.0, 1.0),
    description: str | None = None,
) -> Callable[[Callable[..., Any]], Scorer]: ...


def scorer(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    metrics: Sequence[str | MetricSpec] | None = None,
    threshold: float | None = _UNSET,
    direction: Direction = "higher",
    range: tuple[float, float] = (0.0, 1.0),
    description: str | None = None,
) -> Scorer | Callable[[Callable[..., Any]], Scorer]:
    """Make a plain function an evaluator (see the module docstring), registered by its id.

    Use it bare (``@nbeval.scorer``) or with keywords (``@nbeval.scorer(name=..., metrics=...)``).

    Args:
        fn: The function, when used bare; ``None`` when called with keywords, to get the decorator.
        name: The id (default: the function's name).
        metrics: The names (or :class:`MetricSpec`) of the metrics the function reports by name,
            the first primary (default: one metric named after the id).
        threshold: The threshold of the metrics given by name; not given, it follows
            :func:`~nbeval.evaluators.base.default_threshold` (0.5 in [0, 1], else none).
        direction: Whether higher or lower values of the metrics given by name are better.
        range: The smallest and largest values of the metrics given by name.
        description: What the evaluator checks (default: the docstring's first paragraph).

    Returns:
        The :class:`Scorer` when used bare; otherwise a decorator that makes one.

    Raises:
        EvaluatorError: At decoration, for a parameter that is not a row field, or an id that is a
            built-in evaluator's.
    """

    def deco(f: Callable[..., Any]) -> Scorer:
        read = scoring_function(
            f,
            name=name,
            metrics=metrics,
            threshold=threshold,
            direction=direction,
            range=range,
            description=description,
        )
        if read.id in _builtin_specs():
            msg = f"@nbeval.scorer: '{read.id}' is a built-in evaluator; give the scorer another name with name='...'"
            raise EvaluatorError(msg)
        made = Scorer(f, read.spec, read.args)
        made.register()
        return made

    return deco if fn is None else deco(fn)


def scoring_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    metrics: Sequence[str | MetricSpec] | None = None,
    threshold: float | None = _UNSET,
    direction: Direction = "higher",
    range: tuple[float, float] = (0.0, 1.0),
    description: str | None = None,
    lenient: bool = False,
    label: str | None = None,
) -> ScoringFunction:
    """``fn`` read as an evaluator, registered nowhere: the arguments are :func:`scorer`'s.

    ``lenient=True`` reads the parameters as ``pipeline(fn=...)`` always has: ``*args`` and
    ``**kwargs`` are ignored, and so is a parameter that is no row field but has a default (it is
    not passed); without it, each of those is an :class:`EvaluatorError`. ``label`` names the
    function in a row's error (default: ``scorer '<id>'``).
    """
    if not callable(fn):
        msg = f"@nbeval.scorer decorates a function, not {type(fn).__name__}"
        raise EvaluatorError(msg)
    id = name if name is not None else getattr(fn, "__name__", "")
    if not isinstance(id, str) or not _ID.match(id):
        msg = (
            f"@nbeval.scorer: {id!r} cannot be an evaluator id (letters, digits, _ . -, not first a digit); "
            "give name='...'"
        )
        raise EvaluatorError(msg)
    where = label or f"@nbeval.scorer '{id}'"
    args, required, optional = _parameters(fn, where, lenient)
    lo, hi = (float(x) for x in range)
    extra = {} if threshold is _UNSET else {"threshold": threshold}
    names = list(metrics) if metrics else [id]
    doc = inspect.getdoc(fn) or ""
    text = description if description is not None else " ".join(doc.split("\n\n")[0].split())
    specs = tuple(
        m
        if isinstance(m, MetricSpec)
        else MetricSpec(
            str(m), direction, lo=lo, hi=hi, primary=i == 0, **extra, description=text if not metrics else ""
        )
        for i, m in enumerate(names)
    )
    if len({m.name for m in specs}) != len(specs):
        msg = f"@nbeval.scorer '{id}': metrics named twice in {[m.name for m in specs]}"
        raise EvaluatorError(msg)
    if any(m.name == "rationale" for m in specs):  # the key of a returned dict that holds the rationale
        msg = f"@nbeval.scorer '{id}': a metric cannot be named 'rationale'; give it another name"
        raise EvaluatorError(msg)
    spec = EvaluatorSpec(
        id=id,
        family="custom",
        kind="score",
        inputs=required,
        optional_inputs=optional,
        metrics=specs,
        description=text,
        module=getattr(fn, "__module__", "") or "",
    )
    return ScoringFunction(fn, spec, args, label or f"scorer '{id}'")


def _parameters(
    fn: Callable[..., Any], where: str, lenient: bool
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Give the parameters passed, the required inputs and the optional ones of ``fn``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        msg = f"{where}: cannot read the function's parameters; wrap it in a def with named ones"
        raise EvaluatorError(msg) from None
    args: list[str] = []
    required: list[str] = []
    optional: list[str] = []
    for p in sig.parameters.values():
        stars: dict[Any, str] = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}
        if lenient and (p.kind in stars or (p.name not in FIELDS and p.default is not p.empty)):
            continue  # pipeline(fn=...) has always left these to the function
        if (
            p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            or (p.kind is p.POSITIONAL_ONLY and not lenient)
            or (p.name not in FIELDS)
        ):
            what = stars.get(p.kind, "") + p.name
            why = "is positional-only" if p.kind is p.POSITIONAL_ONLY and p.name in FIELDS else "is not a row field"
            if lenient:
                why = "is not a dataset field"  # the wording pipeline(fn=...) has always used
            msg = (
                f"{where}: the parameter '{what}' {why}{close_match_hint(p.name, FIELDS)}; name each parameter "
                f"after the field it reads (it is passed by name), one of {', '.join(FIELDS)}"
            )
            raise EvaluatorError(msg)
        args.append(p.name)
        if p.name != "row":
            (required if p.default is p.empty else optional).append(p.name)
    return tuple(args), tuple(required), tuple(optional)
