"""EvaluationResult: one long table of scores and everything derived from it.

The long table has one row per (dataset row, evaluator, metric). From it and the per-model
aggregates (which an evaluator may compute its own way, e.g. classification's macro F1) come
leaderboards, problems and insights. A result saves to a folder and loads back without loss.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval._version import __version__
from nbeval.data.model import LlmDataset, TestLab

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.evaluators.base import Evaluator
    from nbeval.results.outcome import RowOutcome

__all__ = ["AGGREGATE_COLUMNS", "FORMAT_VERSION", "METRIC_COLUMNS", "PASSED_DTYPE", "SCORE_COLUMNS", "EvaluationResult",
           "load_result"]

#: Columns of the long table, in order.
SCORE_COLUMNS = ["key", "model_key", "evaluator", "metric", "value", "passed", "label", "rationale",
                 "error", "skipped", "skip_reason", "details"]
AGGREGATE_COLUMNS = ["model_key", "evaluator", "metric", "value", "n", "N", "passed", "direction",
                     "threshold", "primary"]
METRIC_COLUMNS = ["evaluator", "evaluator_id", "family", "kind", "metric", "direction", "lo", "hi",
                  "threshold", "primary", "description"]
FORMAT_VERSION = 1
#: The dtype of the ``passed`` columns: pandas' nullable boolean, ``<NA>`` where a pass is
#: unknowable (no value, or no threshold). Test with ``.eq(True)`` / ``.eq(False)`` or
#: ``pd.isna``; ``if passed:`` on ``<NA>`` raises.
PASSED_DTYPE = "boolean"


def _nan_to_none(v: Any) -> Any:
    """A cell as plain JSON: NaN and pandas' ``<NA>`` become ``None``, numpy scalars Python ones."""
    if type(v).__module__ == "numpy" and hasattr(v, "item"):
        v = v.item()  # np.True_ from a nullable boolean column
    if v is None or (isinstance(v, float) and math.isnan(v)) or type(v).__name__ == "NAType":
        return None
    return v


def _passes(value: float | None, threshold: float | None, direction: str) -> bool | None:
    if value is None or threshold is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return bool(value >= threshold) if direction == "higher" else bool(value <= threshold)


class EvaluationResult:
    """The outcome of one run. Build it with :func:`nbeval.evaluate`; reload it with
    :func:`nbeval.load_result`."""

    def __init__(self, scores: pd.DataFrame, aggregates: pd.DataFrame, metrics: pd.DataFrame,
                 dataset: LlmDataset, *, meta: dict[str, Any] | None = None,
                 explanations: dict[str, dict[str, Any]] | None = None,
                 model_labels: dict[str, str] | None = None) -> None:
        self.scores = scores
        """The long table (see :data:`SCORE_COLUMNS`)."""
        self.aggregates = aggregates
        """Per model, evaluator and metric: value, rows measured ``n`` of ``N``, pass/fail."""
        self.metrics = metrics
        """What each reported metric is: direction, range, threshold used, primary."""
        self.dataset = dataset
        """The rows that were evaluated (prompts, answers, contexts)."""
        self.meta = meta or {}
        """Run facts: duration, token usage and cost, whether it was cancelled, versions."""
        self.explanations = explanations or {}
        """Per evaluator and model: structured explanations (e.g. a confusion matrix)."""
        self.model_labels = model_labels or {}
        """Model key to a readable name (from a lab's models), where known."""

    # -- construction from the engine ---------------------------------------------------------

    @classmethod
    def from_outcomes(cls, outcomes: Sequence[RowOutcome], evaluators: Sequence[Evaluator],
                      dataset: LlmDataset, *, lab: TestLab | None = None, duration_s: float | None = None,
                      usage: dict[str, Any] | None = None, cancelled: bool = False) -> EvaluationResult:
        import pandas as pd

        metric_rows = []
        for ev in evaluators:
            for m in ev.spec.metrics:
                metric_rows.append([ev.name, ev.id, ev.spec.family, ev.spec.kind, m.name, m.direction, m.lo,
                                    m.hi, ev.thresholds.get(m.name), m.primary or m is ev.spec.primary,
                                    m.description])
        metrics = pd.DataFrame(metric_rows, columns=METRIC_COLUMNS)

        records: list[list[Any]] = []
        grouped: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {}
        counts: dict[tuple[str, str], int] = {}
        for o in outcomes:
            ev, row = o.evaluator, o.row
            counts[(ev.name, row.model_key)] = counts.get((ev.name, row.model_key), 0) + 1
            if o.score is None:
                reason = o.skip_reason or "not scored"
                for m in ev.spec.metrics:
                    records.append([row.key, row.model_key, ev.name, m.name, None, None, None, None, None,
                                    True, reason, None])
                continue
            s = o.score
            grouped.setdefault((ev.name, row.model_key), ([], []))
            grouped[(ev.name, row.model_key)][0].append(row)
            grouped[(ev.name, row.model_key)][1].append(s)
            rationale = s.rationale
            if o.warnings:
                rationale = "; ".join([*o.warnings, rationale] if rationale else o.warnings)
            details = json.dumps(s.details, ensure_ascii=False, default=str) if s.details else None
            for m in ev.spec.metrics:
                v = s.values.get(m.name)
                v = None if v is None else float(v)
                records.append([row.key, row.model_key, ev.name, m.name, v,
                                _passes(v, ev.thresholds.get(m.name), m.direction), s.label, rationale,
                                s.error, False, None, details])
        scores = pd.DataFrame(records, columns=SCORE_COLUMNS)
        scores["value"] = scores["value"].astype(float)
        scores["passed"] = scores["passed"].astype(PASSED_DTYPE)
        scores["skipped"] = scores["skipped"].astype(bool)

        agg_rows: list[list[Any]] = []
        explanations: dict[str, dict[str, dict[str, Any]]] = {}
        by_name = {ev.name: ev for ev in evaluators}
        for (name, model_key), n_rows in counts.items():
            ev = by_name[name]
            rows, row_scores = grouped.get((name, model_key), ([], []))
            aggs = ev.aggregate(rows, row_scores) if row_scores else {}
            for m in ev.spec.metrics:
                a = aggs.get(m.name)
                value = None if a is None else a.value
                t = ev.thresholds.get(m.name)
                agg_rows.append([model_key, name, m.name, value, 0 if a is None else a.n, n_rows,
                                 _passes(value, t, m.direction), m.direction, t,
                                 m.primary or m is ev.spec.primary])
                if a is not None and a.details:
                    explanations.setdefault(name, {}).setdefault(model_key, {})[m.name] = a.details
        aggregates = pd.DataFrame(agg_rows, columns=AGGREGATE_COLUMNS)
        aggregates["value"] = aggregates["value"].astype(float)
        aggregates["passed"] = aggregates["passed"].astype(PASSED_DTYPE)
        meta = {"nbeval_version": __version__, "duration_s": duration_s, "usage": usage or {},
                "cancelled": cancelled, "format_version": FORMAT_VERSION,
                "evaluators": [{"name": ev.name, "id": ev.id, "params": _jsonable(ev.params)} for ev in evaluators]}
        labels = {m.key: m.label for m in lab.models} if lab is not None else {}
        return cls(scores, aggregates, metrics, dataset, meta=meta, explanations=explanations,
                   model_labels=labels)

    # -- views ----------------------------------------------------------------------------

    def to_pandas(self) -> pd.DataFrame:
        """The long table: one row per dataset row × evaluator × metric."""
        return self.scores.copy()

    @property
    def model_keys(self) -> list[str]:
        return list(dict.fromkeys(self.aggregates["model_key"]))

    @property
    def evaluators(self) -> list[str]:
        return list(dict.fromkeys(self.metrics["evaluator"]))

    def label(self, model_key: str) -> str:
        """A model's readable name."""
        return self.model_labels.get(model_key, model_key)

    def primary_metric(self, evaluator: str) -> str:
        m = self.metrics[(self.metrics["evaluator"] == evaluator) & self.metrics["primary"]]
        if m.empty:
            msg = f"no evaluator '{evaluator}' in this result; it has {self.evaluators}"
            raise KeyError(msg)
        return str(m["metric"].iloc[0])

    def leaderboard(self, evaluator: str | None = None, metric: str | None = None) -> pd.DataFrame:
        """One row per model; one column per metric plus ``<metric>_n`` (rows measured) and ``N``.

        With ``evaluator=None`` every evaluator's metrics appear as ``<evaluator>.<metric>``.
        Models are sorted best first on the chosen (default: primary) metric.
        """
        from nbeval.results.leaderboard import leaderboard

        return leaderboard(self, evaluator=evaluator, metric=metric)

    @property
    def problems(self) -> pd.DataFrame:
        """Threshold breaches per model and primary metric, and perturbation flips."""
        from nbeval.results.insights import problems

        return problems(self)

    @property
    def insights(self) -> pd.DataFrame:
        """The best model on each primary metric and the hardest test cases."""
        from nbeval.results.insights import insights

        return insights(self)

    def cases(self) -> pd.DataFrame:
        """The dataset rows (prompt, expected, answer, context) by key and model."""
        return self.dataset.to_pandas()

    def summary(self) -> str:
        """A plain-text summary: leaderboards of primary metrics and problems."""
        from nbeval.results.leaderboard import summary_text

        return summary_text(self)

    def __repr__(self) -> str:
        return (f"EvaluationResult({len(self.model_keys)} models, {len(self.evaluators)} evaluators, "
                f"{len(self.scores)} scores, {len(self.problems)} problems)")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from nbeval.results.renderers import get_renderer

        render = get_renderer("mimebundle")
        if render is None:  # the notebook kit is not installed: text and HTML only
            from nbeval.results.report import summary_html

            return {"text/plain": repr(self), "text/html": summary_html(self)}
        return render(self)

    # -- persistence ----------------------------------------------------------------------

    def save(self, folder: str | Path) -> Path:
        """Write the result to ``folder`` (created): JSON files that :func:`load_result` reads back."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        _write_records(folder / "scores.jsonl", self.scores)
        _write_records(folder / "aggregates.jsonl", self.aggregates)
        _write_records(folder / "metrics.jsonl", self.metrics)
        self.dataset.to_json(str(folder / "dataset.json"))
        (folder / "result.json").write_text(json.dumps(
            {"meta": self.meta, "explanations": self.explanations, "model_labels": self.model_labels},
            indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        return folder

    def to_csv(self, path: str | Path) -> None:
        """The long table as CSV."""
        self.scores.to_csv(path, index=False)

    def to_html(self, path: str | Path | None = None) -> str:
        """A static, self-contained HTML report; written to ``path`` when given."""
        from nbeval.results.report import report_html

        html = report_html(self)
        if path is not None:
            Path(path).write_text(html, encoding="utf-8")
        return html


def _jsonable(params: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in params.items():
        try:
            json.dumps(v)
            out[k] = v
        except TypeError:
            out[k] = repr(v)
    return out


def _write_records(path: Path, df: pd.DataFrame) -> None:
    # The stdlib writer keeps every float exactly (pandas' to_json rounds to 10 digits).
    cols = list(df.columns)
    with open(path, "w", encoding="utf-8") as fh:
        for rec in df.itertuples(index=False, name=None):
            fh.write(json.dumps(dict(zip(cols, map(_nan_to_none, rec), strict=True)), ensure_ascii=False))
            fh.write("\n")


def _read_records(path: Path, columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    with open(path, encoding="utf-8") as fh:
        recs = [json.loads(line) for line in fh if line.strip()]
    return pd.DataFrame(recs, columns=columns)


def load_result(folder: str | Path) -> EvaluationResult:
    """Load a result written by :meth:`EvaluationResult.save`."""
    from nbeval.errors import DataError

    folder = Path(folder)
    if not (folder / "result.json").exists():
        msg = f"{folder} holds no saved result (result.json is missing); save one with result.save(folder)"
        raise DataError(msg, source=str(folder))
    info = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    scores = _read_records(folder / "scores.jsonl", SCORE_COLUMNS)
    scores["value"] = scores["value"].astype(float)
    scores["passed"] = scores["passed"].astype(PASSED_DTYPE)
    scores["skipped"] = scores["skipped"].astype(bool)
    aggregates = _read_records(folder / "aggregates.jsonl", AGGREGATE_COLUMNS)
    aggregates["value"] = aggregates["value"].astype(float)
    aggregates["passed"] = aggregates["passed"].astype(PASSED_DTYPE)
    metrics = _read_records(folder / "metrics.jsonl", METRIC_COLUMNS)
    dataset = LlmDataset.from_json(str(folder / "dataset.json"))
    return EvaluationResult(scores, aggregates, metrics, dataset, meta=info.get("meta"),
                            explanations=info.get("explanations"), model_labels=info.get("model_labels"))
