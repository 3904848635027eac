"""Which rows people should label next: the unlabelled rows where the judge is least sure.

:func:`label_queue` lists an evaluator's scored rows that have no human label yet (see
:mod:`nbeval.results.storage.labels`), most uncertain first, each with an ``uncertainty`` between 0 and 1
and a ``why`` in words. How uncertain a row is:

* **Unrated** (the judge's reply could not be read, or its call failed): 1, the most uncertain.
* **A jury** (``details["jury"]``, see :mod:`nbeval.evaluators.jury`): the share of jurors that
  disagree, that is, are outside the largest group of jurors giving the same verdict (a juror
  without a verdict is in no group). A juror's verdict is pass or fail by the metric's threshold,
  or its value when the metric has none. Three jurors split two to one give 1/3.
* **Head to head** (the ``pairwise`` evaluator): the share of the row's pairs asked in both orders
  whose two verdicts disagree (a pair with an unreadable order counts as disagreeing); a pair asked
  in one order only does not count.
* **Otherwise**, for a metric with a threshold, how close the value is to it: ``1 - |value -
  threshold| / span``, the span being the distance from the threshold to the end of the metric's
  range on the value's side (for an unbounded range, to the row farthest from the threshold). A
  value on the threshold gives 1; a verdict of 1.0 or 0.0 with the threshold 0.5 gives 0.
  Without a threshold: 0.

Rows with the same uncertainty are ordered unrated first, then by closeness to the threshold (for
a jury; for head to head, of the win rate to 0.5), then in dataset order.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from nbeval.results.aggregates import passes

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = ["QUEUE_COLUMNS", "label_queue"]

#: The columns of :func:`label_queue`.
QUEUE_COLUMNS = ["key", "model_key", "value", "label", "uncertainty", "why"]
_PAIRWISE = "pairwise"


def label_queue(result: EvaluationResult, evaluator: Any) -> pd.DataFrame:
    """List ``evaluator``'s unlabelled scored rows of ``result``, most uncertain first.

    Columns ``key, model_key, value`` (of the primary metric), ``label`` (the judge's),
    ``uncertainty`` (0 to 1) and ``why`` (see :mod:`nbeval.results.statistics.label_queue`).
    ``evaluator``: its name in the result, or the evaluator object.
    """
    import pandas as pd

    name = evaluator if isinstance(evaluator, str) else str(getattr(evaluator, "name", evaluator))
    metric = result.primary_metric(name)  # NotFound naming the evaluators for an unknown one
    m = result.metrics
    spec = m[(m["evaluator"] == name) & (m["metric"] == metric)].iloc[0]
    given = spec["threshold"]
    threshold = None if pd.isna(given) else float(given)
    scale = _Scale(threshold, float(spec["lo"]), float(spec["hi"]), str(spec["direction"]) == "higher")
    s = result.scores
    s = s[(s["evaluator"] == name) & (s["metric"] == metric) & ~s["skipped"].astype(bool)]
    labels = result.labels
    done = {(str(a), str(b)) for a, b in labels.loc[labels["evaluator"] == name, ["key", "model_key"]].to_numpy()}
    position = {(r.key, r.model_key): i for i, r in enumerate(result.dataset.rows)}
    values = [float(v) for v in s["value"] if v == v]
    scale.far = max((abs(v - threshold) for v in values), default=0.0) if threshold is not None else 0.0
    pairwise = str(spec["evaluator_id"]) == _PAIRWISE
    out = []
    for key, model, value, label, error, details in zip(
        s["key"], s["model_key"], s["value"], s["label"], s["error"], s["details"], strict=True
    ):
        key, model = str(key), str(model)
        if (key, model) in done:
            continue
        value = None if pd.isna(value) else float(value)
        label = None if pd.isna(label) else str(label)
        info = _details(details)
        if value is None:
            uncertainty, unrated, closeness, why = 1.0, 1, 1.0, _unrated_why(label, error)
        elif isinstance(info.get("jury"), list) and info["jury"]:
            uncertainty, why = _jury(info["jury"], metric, scale)
            unrated, closeness = 0, scale.closeness(value)
        elif pairwise:
            uncertainty, why = _pairs(info)
            unrated, closeness = 0, 1 - 2 * abs(value - 0.5)
        else:
            closeness = scale.closeness(value)
            uncertainty, unrated, why = closeness, 0, scale.why(value)
        order = (-uncertainty, -unrated, -closeness, position.get((key, model), len(position)))
        out.append((key, model, value, label, uncertainty, why, *order))
    out.sort(key=lambda r: r[6:])
    table = pd.DataFrame([r[:6] for r in out], columns=QUEUE_COLUMNS)
    table["value"] = table["value"].astype(float)
    table["uncertainty"] = table["uncertainty"].astype(float)
    return table


class _Scale:
    """Where a value lies against the metric's threshold."""

    def __init__(self, threshold: float | None, lo: float, hi: float, higher: bool) -> None:
        self.threshold, self.lo, self.hi, self.higher = threshold, lo, hi, higher
        self.far = 0.0
        """The largest distance of a row's value from the threshold (for an unbounded range)."""

    def verdict(self, value: float) -> Any:
        """``pass``/``fail`` by the threshold; the value itself without one."""
        if self.threshold is None:
            return value
        return "pass" if passes(value, self.threshold, self.higher) else "fail"

    def closeness(self, value: float) -> float:
        t = self.threshold
        if t is None:
            return 0.0
        span = (self.hi - t) if value >= t else (t - self.lo)
        if not math.isfinite(span) or span <= 0:
            span = self.far
        if span <= 0:
            return 1.0
        return min(1.0, max(0.0, 1.0 - abs(value - t) / span))

    def why(self, value: float) -> str:
        if self.threshold is None:
            return "the metric has no threshold to be near"
        gap = value - self.threshold
        side = "on" if gap == 0 else ("above" if gap > 0 else "below")
        where = "" if gap == 0 else f"{abs(gap):.3g} "
        return f"value {value:.3g} is {where}{side} the threshold {self.threshold:.3g}"


def _details(details: Any) -> dict[str, Any]:
    if isinstance(details, dict):
        return details
    if isinstance(details, str) and details:
        try:
            found = json.loads(details)
        except ValueError:  # cut short by the stored-size limit
            return {}
        return found if isinstance(found, dict) else {}
    return {}


def _unrated_why(label: str | None, error: Any) -> str:
    if label == "parse_failure":
        return "the judge's reply could not be read"
    if isinstance(error, str) and error:
        return f"no verdict: {error[:120]}"
    return "no verdict"


def _jury(jurors: list[Any], metric: str, scale: _Scale) -> tuple[float, str]:
    """The share of jurors outside the largest group giving the same verdict, and why."""
    verdicts: list[Any] = []
    silent = 0
    for juror in jurors:
        v = (juror.get("values") or {}).get(metric) if isinstance(juror, dict) else None
        if v is None or (isinstance(v, float) and math.isnan(v)):
            silent += 1
        else:
            verdicts.append(scale.verdict(float(v)))
    counts = Counter(verdicts)
    largest = max(counts.values(), default=0)
    share = 1 - largest / len(jurors)
    parts = [f"{n} {v if isinstance(v, str) else f'say {v:g}'}" for v, n in counts.most_common()]
    if silent:
        parts.append(f"{silent} gave no verdict")
    head = "the jurors agree" if share == 0 else "the jurors disagree"
    return share, f"{head}: {', '.join(parts)}"


def _pairs(info: dict[str, Any]) -> tuple[float, str]:
    """The share of the row's pairs asked in both orders whose verdicts disagree, and why."""
    asked: Counter[str] = Counter()
    for v in info.get("verdicts") or []:
        if isinstance(v, dict):
            asked.update({str(v.get("first")), str(v.get("second"))})
    both, flipped, unread = 0, [], []
    for pair in info.get("pairs") or []:
        opponent = str(pair.get("opponent")) if isinstance(pair, dict) else ""
        if asked[opponent] < 2:  # one order only: nothing to compare
            continue
        both += 1
        consistent = pair.get("consistent")
        if consistent is False:
            flipped.append(opponent)
        elif consistent is not True:
            unread.append(opponent)
    if not both:
        return 0.0, "no pair was asked in both orders"
    if not flipped and not unread:
        return 0.0, f"both orders agree against every opponent ({both})"
    parts = [f"the two orders disagree against {', '.join(flipped)}"] if flipped else []
    parts += [f"an order could not be read against {', '.join(unread)}"] if unread else []
    return (len(flipped) + len(unread)) / both, f"{'; '.join(parts)} (of {both} opponents)"
