"""Juries: several judges rate every row, and the row's value is their aggregate.

    nbeval.evaluate(lab, ["correctness"], judge=["gpt-4o-mini", "claude-haiku", my_local_judge])
    nbeval.evaluate(lab, ["safety"], judge=nbeval.jury([j1, j2, j3], aggregate="unanimous"))

Any judge evaluator (the judge and RAGAS families, the agents' judges, your own) takes a jury
wherever it takes a judge. Each juror is asked exactly what a single judge would be asked, by a
copy of the evaluator configured with that juror; the jurors' calls go out together, batched and
cached like any judge's. Every juror is asked on its own: the same judge named twice
(``judge=[j, j, j]``) is called once per juror and row, each call an independent sample with its
own cache entry (:func:`juror_request`), never one reply copied to every juror. Whether those
samples differ is the judge's: at temperature 0 a deterministic judge gives the same reply each
time, and its jury then measures self-consistency, not agreement between judges
(:meth:`~nbeval.results.result.EvaluationResult.jury_agreement` says so). Per metric, over the
jurors that gave a value:

* ``majority``: for a metric whose values are all 0 or 1 (a verdict), the side more jurors took;
  an even split goes to the worse side (a row a split jury cannot agree on does not pass). For a
  score, the median.
* ``mean``: the mean.
* ``unanimous``: the worst value by the metric's direction (a row passes only if every juror
  passes it); ``any``: the best (it passes if one juror passes it).

A juror whose reply could not be read, or whose call failed, is left out of the vote and counted
(``details["jury_parse_failures"]``, ``details["jury_failed"]``); only when no juror gave a value
is the row unrated. ``details["jury"]`` keeps every juror's values, label, rationale, error and
own details (and ``repeat_of``, the juror it repeats, for a judge named again), so the explorer
can show them side by side and
:meth:`~nbeval.results.result.EvaluationResult.jury_agreement` can measure how far they agree.
A dry run counts every juror's calls.
"""

from __future__ import annotations

import inspect
import statistics
from collections import Counter
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nbeval.errors import EvaluatorError, NbevalError
from nbeval.evaluators.base import Score
from nbeval.request_kinds import Chat, Gather

if TYPE_CHECKING:
    from nbeval.data.model import Row
    from nbeval.evaluators.base import Evaluator

__all__ = [
    "AGGREGATES",
    "JUROR_SAMPLES",
    "Jury",
    "aggregate_scores",
    "as_jury",
    "is_jury",
    "juror_name",
    "juror_request",
    "jury",
    "jury_score",
    "repeated_jurors",
    "settle_jury",
    "with_judge",
]

#: The ways a jury's verdicts become the row's value.
AGGREGATES = ("majority", "mean", "unanimous", "any")

#: How many sample numbers (:attr:`~nbeval.request_kinds.Chat.sample`) each juror's requests may use:
#: juror ``k``'s sample ``s`` is sent as sample ``s + k * JUROR_SAMPLES``.
JUROR_SAMPLES = 1_000_000


@dataclass(frozen=True)
class Jury:
    """Several judges and how their values are combined (see the module's documentation)."""

    jurors: tuple[Any, ...]
    """Each juror as a judge is given: a model name, a settings dict, a chat model, a function."""
    aggregate: str = "majority"
    """How the jurors' values are combined: one of :data:`AGGREGATES`."""
    names: tuple[str, ...] = ()
    """What each juror is called in details and tables (made from the judges when not given)."""

    def __post_init__(self) -> None:
        if len(self.jurors) < 2:
            msg = f"a jury needs at least two judges, got {len(self.jurors)}; give one judge as judge=... instead"
            raise EvaluatorError(msg)
        if self.aggregate not in AGGREGATES:
            msg = f"unknown jury aggregate {self.aggregate!r}; use one of {', '.join(AGGREGATES)}"
            raise EvaluatorError(msg)
        names = self.names or _distinct([juror_name(j) for j in self.jurors])
        if len(names) != len(self.jurors) or len(set(names)) != len(names):
            msg = f"a jury needs one distinct name per juror; got {list(names)} for {len(self.jurors)} jurors"
            raise EvaluatorError(msg)
        object.__setattr__(self, "names", tuple(names))

    def __repr__(self) -> str:
        # the same text in every session (no memory address): run records and diffs compare it
        return f"Jury({list(self.names)!r}, aggregate={self.aggregate!r})"


def jury(judges: Iterable[Any], aggregate: str = "majority", *, names: Sequence[str] | None = None) -> Jury:
    """Make a jury of several judges whose values are combined into each row's.

    Give it wherever a judge evaluator takes ``judge=``; see :mod:`nbeval.evaluators.jury` for how
    the jurors are asked and how their values are combined.

    Args:
        judges: The jurors, at least two, any judges: model names, settings dicts, local models,
            functions.
        aggregate: How their values are combined: ``"majority"``, ``"mean"``, ``"unanimous"`` or
            ``"any"``.
        names: What each juror is called in results, one distinct name per juror; made from the
            judges when not given.

    Returns:
        The jury.

    Raises:
        EvaluatorError: When there are fewer than two judges, the aggregate is unknown, or the
            names are not one distinct name per juror.
    """
    return Jury(tuple(judges), aggregate, tuple(names or ()))


def is_jury(judge: Any) -> bool:
    """Whether ``judge`` stands for several judges: a :class:`Jury`, or a list or tuple of judges."""
    return isinstance(judge, (Jury, list, tuple))


def as_jury(judge: Any) -> Jury:
    """``judge`` as a :class:`Jury` (a list or tuple becomes a majority jury)."""
    return judge if isinstance(judge, Jury) else Jury(tuple(judge))


def settle_jury(panel: Jury) -> Jury:
    """Turn each juror of ``panel`` given as settings into a model object; names are kept.

    Settings are a dict, which may hold an API key; the model object keeps the key private, as a
    single judge's settings are.
    """
    if not any(isinstance(j, dict) for j in panel.jurors):
        return panel
    from nbeval.chat.config import resolve_chat_model

    jurors = tuple(resolve_chat_model(j) if isinstance(j, dict) else j for j in panel.jurors)
    return Jury(jurors, panel.aggregate, panel.names)


def juror_name(judge: Any) -> str:
    """A short, stable name for a judge: its model name, a function's name, a model object's ``name``."""
    if isinstance(judge, str):
        return judge
    if isinstance(judge, dict):
        return str(judge.get("name") or judge.get("model") or "judge")  # "name": what results call it
    name = getattr(judge, "name", None) or getattr(judge, "model", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(judge, "__name__", None) or type(judge).__name__)


def repeated_jurors(panel: Jury) -> list[str | None]:
    """Name, per juror of ``panel``, the first juror that is the same judge.

    The same judge is the same name, equal settings, the same model, function or cache identity;
    ``None`` stands for a judge's first seat. Agreement between such jurors is one judge's
    self-consistency, not agreement between judges.
    """
    first: dict[Any, str] = {}
    out: list[str | None] = []
    for judge, name in zip(panel.jurors, panel.names, strict=True):
        key = _judge_key(judge)
        out.append(first.get(key))
        first.setdefault(key, name)
    return out


def _judge_key(judge: Any) -> Any:
    """What tells one judge from another, for :func:`repeated_jurors`."""
    if isinstance(judge, str):
        return ("name", judge.strip())
    if isinstance(judge, dict):
        return ("settings", repr(sorted(judge.items(), key=lambda kv: str(kv[0]))))
    fn = getattr(judge, "fn", None)  # a function wrapped as a chat model: the function tells
    if callable(fn):
        return ("function", id(fn))
    try:
        identity = judge.cache_identity() if getattr(judge, "cacheable", True) else None
    except Exception:  # an identity that cannot be made: the object itself tells
        identity = None
    return ("model", identity) if isinstance(identity, str) else ("object", id(judge))


def _distinct(names: list[str]) -> list[str]:
    """``names`` with repeats numbered (``judge``, ``judge#2``), so every juror has its own column."""
    seen: Counter[str] = Counter()
    out = []
    for n in names:
        seen[n] += 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def with_judge(ev: Evaluator, judge: Any) -> Evaluator:
    """``ev`` asking ``judge``: a shallow copy with its own parameters, which name that judge.

    ``ev`` itself is left as it was: a run never changes the evaluators it was given (the same
    object run again with another judge must ask that judge).
    """
    return ev.with_judge(judge)


def juror_request(request: Any, juror: int) -> Any:
    """``request`` as juror number ``juror`` (0 for the first) of a jury asks it.

    A chat request is marked as its own sample (:attr:`~nbeval.request_kinds.Chat.sample`, part of the
    cache key, never sent): otherwise the same judge named twice would ask the same request twice,
    which the client answers once (one call, or one cache entry), and every copy of the judge
    would get one reply, a perfect agreement that measured nothing. The first juror's requests
    are left as they are, so its replies are shared with a single-judge run of the same judge.
    A scorer's own samples (ragas asks several) stay apart: juror ``k`` numbers them from
    ``k * JUROR_SAMPLES``. Other requests (embeddings, local models) are deterministic and
    shared.
    """
    if isinstance(request, Gather):
        return Gather(tuple(juror_request(part, juror) for part in request.requests))
    if not isinstance(request, Chat) or juror == 0:
        return request
    if not 0 <= request.sample < JUROR_SAMPLES:
        msg = (
            f"a juror's scorer asked for sample {request.sample} of one request; a jury keeps each juror's "
            f"samples apart for sample numbers 0 to {JUROR_SAMPLES - 1}"
        )
        raise EvaluatorError(msg)
    return replace(request, sample=request.sample + juror * JUROR_SAMPLES)


_FINISHED = object()


def jury_score(ev: Evaluator, row: Row, panel: Jury) -> Generator[Any, Any, Score]:
    """Score ``row`` once per juror of ``panel`` and return the aggregate score.

    The jurors' requests are asked together each round; the result is the aggregate
    :class:`~nbeval.evaluators.base.Score`.
    """
    n = len(panel.jurors)
    scores: list[Score | None] = [None] * n
    running: dict[int, Any] = {}
    asked: dict[int, Any] = {}
    for i, judge in enumerate(panel.jurors):
        try:
            result = with_judge(ev, judge).score(row)
        except Exception as exc:
            scores[i] = _error(exc)
            continue
        if inspect.isgenerator(result):
            running[i] = result
            asked[i] = _advance(result, None, first=True, scores=scores, i=i)
        else:
            scores[i] = result if isinstance(result, Score) else _not_a_score(result)
    asked = {i: r for i, r in asked.items() if r is not _FINISHED}
    while asked:
        parts: list[Any] = []
        spans: list[tuple[int, int, int, bool]] = []
        for i, req in asked.items():
            try:
                req = juror_request(req, i)
            except EvaluatorError as exc:
                running[i].close()
                scores[i] = _error(exc)
                continue
            if isinstance(req, Gather):
                spans.append((i, len(parts), len(req.requests), True))
                parts.extend(req.requests)
            else:
                spans.append((i, len(parts), 1, False))
                parts.append(req)
        if not spans:
            break
        answers = yield Gather(tuple(parts))
        following: dict[int, Any] = {}
        for i, start, count, gathered in spans:
            value = tuple(answers[start : start + count]) if gathered else answers[start]
            nxt = _advance(running[i], value, first=False, scores=scores, i=i, throw=not gathered)
            if nxt is not _FINISHED:
                following[i] = nxt
        asked = following
    done = [s if s is not None else Score({}, error="the juror gave no score") for s in scores]
    return aggregate_scores(ev, done, panel)


def _advance(gen: Any, value: Any, *, first: bool, scores: list[Score | None], i: int, throw: bool = True) -> Any:
    """One juror's next request, or :data:`_FINISHED` with its score filed.

    A failed single request is raised into the juror's scorer, as the engine does for a lone evaluator.
    """
    try:
        if first:
            return next(gen)
        if throw and isinstance(value, BaseException):
            return gen.throw(value)
        return gen.send(value)
    except StopIteration as stop:
        scores[i] = stop.value if isinstance(stop.value, Score) else _not_a_score(stop.value)
    except Exception as exc:
        scores[i] = _error(exc)
    return _FINISHED


def _error(exc: BaseException) -> Score:
    text = str(exc) or type(exc).__name__
    return Score({}, error=text if isinstance(exc, NbevalError) else f"{type(exc).__name__}: {text}")


def _not_a_score(value: Any) -> Score:
    return Score({}, error=f"the juror's scorer returned {type(value).__name__}, not a Score")


def aggregate_scores(ev: Evaluator, scores: Sequence[Score], panel: Jury) -> Score:
    """The jury's :class:`~nbeval.evaluators.base.Score` from each juror's (in juror order)."""
    spec = ev.spec
    names = [m.name for m in spec.metrics] or sorted({k for s in scores for k in s.values})
    values: dict[str, float | None] = {}
    for name in names:
        given = [float(v) for s in scores if (v := s.values.get(name)) is not None]
        values[name] = _combine(given, panel.aggregate, _direction(ev, name)) if given else None
    primary = spec.primary.name if spec.metrics else (names[0] if names else None)
    voted = [s for s in scores if primary is not None and s.values.get(primary) is not None]
    parse_failures = sum(s.label == "parse_failure" for s in scores)
    failed = sum(1 for s in scores if s not in voted and s.label != "parse_failure")
    label = _label(scores, primary, values.get(primary) if primary else None)
    if not voted:
        label = "parse_failure" if parse_failures else label
    rationale = "\n".join(
        f"[{name}] {s.label or ('no value' if s.values.get(primary or '') is None else 'rated')}: "
        f"{s.rationale or s.error or ''}".rstrip()
        for name, s in zip(panel.names, scores, strict=True)
    )
    errors = [f"{name}: {s.error}" for name, s in zip(panel.names, scores, strict=True) if s.error]
    repeats = repeated_jurors(panel)
    details: dict[str, Any] = {
        "jury": [
            {
                "juror": name,
                "values": dict(s.values),
                "label": s.label,
                "rationale": s.rationale,
                "error": s.error,
                "details": s.details,
                **({"repeat_of": repeat} if repeat else {}),
            }
            for name, s, repeat in zip(panel.names, scores, repeats, strict=True)
        ],
        "jury_aggregate": panel.aggregate,
        "jury_votes": len(voted),
        "jury_parse_failures": parse_failures,
        "jury_failed": failed,
        "judge": _usage(scores),
    }
    return Score(
        values, rationale=rationale, label=label, error="; ".join(errors) if not voted else None, details=details
    )


def _direction(ev: Evaluator, metric: str) -> str:
    try:
        return ev.spec.metric(metric).direction
    except (KeyError, ValueError, EvaluatorError):
        return "higher"


def _combine(values: list[float], how: str, direction: str) -> float:
    worst, best = (min, max) if direction == "higher" else (max, min)
    if how == "mean":
        return statistics.fmean(values)
    if how == "unanimous":
        return worst(values)
    if how == "any":
        return best(values)
    if all(v in (0.0, 1.0) for v in values):  # a verdict: the side more jurors took
        ones = sum(values)
        zeros = len(values) - ones
        if ones == zeros:
            return worst(0.0, 1.0)  # a split jury: the worse side
        return 1.0 if ones > zeros else 0.0
    return float(statistics.median(values))


def _label(scores: Sequence[Score], primary: str | None, value: float | None) -> str | None:
    """The label most jurors whose value is the jury's gave (``None`` when none matches it)."""
    if primary is None or value is None:
        return None
    labels = [s.label for s in scores if s.label and s.values.get(primary) == value]
    return Counter(labels).most_common(1)[0][0] if labels else None


def _usage(scores: Sequence[Score]) -> dict[str, Any]:
    """The jurors' judge accounting added up (calls, tokens, cost) for the row's details."""
    total: dict[str, Any] = {"calls": 0, "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": None}
    for s in scores:
        usage = (s.details or {}).get("judge")
        if not isinstance(usage, dict):
            continue
        for k in ("calls", "cached_calls", "prompt_tokens", "completion_tokens"):
            total[k] += int(usage.get(k) or 0)
        if usage.get("unknown_usage_calls"):  # a juror's cost is a lower bound: so is the jury's
            total["unknown_usage_calls"] = total.get("unknown_usage_calls", 0) + int(usage["unknown_usage_calls"])
        if usage.get("cost") is not None:
            total["cost"] = (total["cost"] or 0.0) + float(usage["cost"])
    return total
