"""What changed between two runs besides their scores, for a :class:`~nbeval.results.runs.diff.RunDiff`.

Each run's facts (usage, label, commit), the configuration differences (judge, embedder, prompts,
parameters, thresholds, nbeval's version) and the warnings they raise.

A setting a result does not record (a result saved before run facts existed, or a fact it lacks:
:data:`~nbeval.results.record.NOT_RECORDED`) is :data:`UNKNOWN`: shown as such, named in one
warning, never counted as a change.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.results.record import NOT_RECORDED, JudgeFact, RunFacts, RunRecord
from nbeval.results.reporting.numbers import format_value

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = [
    "UNKNOWN",
    "UNKNOWN_USAGE",
    "changes",
    "describe_run",
    "load_tables",
    "usage",
    "warnings",
]

#: How a setting a result does not record is shown in ``RunDiff.changes``.
UNKNOWN = "unknown"
_NAN = float("nan")
#: The usage row counting calls whose token usage was unknown (shown only when a run had any).
UNKNOWN_USAGE = "calls of unknown usage"
_WARN = {
    "judge": "the judge changed from {b} to {a}: a difference may come from the judge, not from the models",
    "embedder": "the embedder changed from {b} to {a}: a difference may come from the embedder, not the models",
    "prompt": "the {what} changed: its differences may come from the prompt, not from the models",
    "parameter": "the {what} changed from {b} to {a}: that evaluator's differences may come from it",
    "threshold": "the {what} changed from {b} to {a}: its flips may come from the threshold",
    "nbeval": "nbeval changed from {b} to {a}: an evaluator's scoring may have changed with it",
}


def load_tables(folder: str | os.PathLike[str]) -> EvaluationResult:
    """Read a saved result as a diff reads it, without its dataset.

    That is :func:`nbeval.load_result`'s reading and checks of ``result.json``, ``metrics.jsonl``,
    ``aggregates.jsonl`` and ``scores.parquet``, without the dataset (an empty one in its place),
    which a diff does not use and which costs most of the load of a large result (a Python object
    per row). Folders of format 1 (JSON lines, small by nature) and anything unexpected go through
    :func:`nbeval.load_result` itself.
    """
    from nbeval.data.model import LlmDataset
    from nbeval.results.result import AGGREGATE_COLUMNS, METRIC_COLUMNS, SCORE_FILES, EvaluationResult
    from nbeval.results.storage.columnar import read_scores_parquet
    from nbeval.results.storage.consistency import check_metrics
    from nbeval.results.storage.loading import load_result, read_info, read_records
    from nbeval.results.storage.save_id import check_save

    path = Path(folder)
    if not (path / "result.json").is_file() or not (path / SCORE_FILES["parquet"]).is_file():
        return load_result(path)  # its errors say what is missing
    info = read_info(path / "result.json")
    meta = info.get("meta") or {}
    if RunRecord.from_meta(meta).folder_format < 2:
        return load_result(path)
    scores = read_scores_parquet(path / SCORE_FILES["parquet"])
    aggregates, _ = read_records(path / "aggregates.jsonl", AGGREGATE_COLUMNS)
    aggregates["value"] = aggregates["value"].astype(float)
    metrics, lines = read_records(path / "metrics.jsonl", METRIC_COLUMNS)
    check_metrics(metrics, lines, path / "metrics.jsonl")
    # the files read are those result.json's save wrote (not a mix of two saves), as load_result checks
    check_save(path, info, [SCORE_FILES["parquet"], "aggregates.jsonl", "metrics.jsonl"])
    return EvaluationResult(scores, aggregates, metrics, LlmDataset([]), meta=meta)


def _number(value: Any) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok else _NAN


def usage(before: RunRecord, after: RunRecord) -> pd.DataFrame:
    """Tokens, calls, cost and duration of each run (its record's usage and duration)."""
    import pandas as pd

    facts = []
    for record in (before, after):
        totals = record.usage
        got = {
            "prompt tokens": _number(totals.prompt_tokens),
            "completion tokens": _number(totals.completion_tokens),
            "calls": _number(totals.calls),
        }
        tokens = [v for v in (got["prompt tokens"], got["completion tokens"]) if not math.isnan(v)]
        got["tokens"] = sum(tokens) if tokens else _NAN
        got["cost (USD)"], got["duration (s)"] = _number(totals.priced_cost), _number(record.duration_s)
        facts.append(got)
    order = ["tokens", "prompt tokens", "completion tokens", "calls", "cost (USD)", "duration (s)"]
    unknown = [record.usage.unknown_calls for record in (before, after)]
    if any(unknown):  # a run priced without some calls: its cost is a lower bound, and says so
        for got, n in zip(facts, unknown, strict=True):
            got[UNKNOWN_USAGE] = float(n)
        order.insert(order.index("cost (USD)") + 1, UNKNOWN_USAGE)
    table = pd.DataFrame({"what": order, "before": [facts[0][w] for w in order], "after": [facts[1][w] for w in order]})
    table["change"] = table["after"] - table["before"]
    return table


def _show(value: Any) -> str:
    """A setting as text: ``None`` is "none", a judge its model and parameters, anything else JSON."""
    if value is None:
        return "none"
    if isinstance(value, JudgeFact):
        params = dict(value.params)
        return value.model + (f" {json.dumps(params, sort_keys=True, default=str)}" if params else "")
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _recorded(record: RunRecord) -> RunFacts:
    """The run facts of ``record`` that are known; the others :data:`NOT_RECORDED` (judge, embedder) or ``None``.

    A result no run made (its ``started_at`` is ``None``: :func:`~nbeval.results.run_facts.unknown_run_facts`) knows
    only its dataset's fingerprint and label; elsewhere a ``None`` judge or embedder is known: the run used none. A
    ``None`` fingerprint is unknown.
    """
    facts = record.run
    if facts is None:
        return RunFacts()
    if facts.started_at is None:
        return RunFacts(label=facts.label, dataset_fingerprint=facts.dataset_fingerprint)
    return facts


def _facts(before: RunRecord, after: RunRecord, common: list[str]) -> list[tuple[str, str, str, str]]:
    """The judge, the embedder, the dataset and the prompts, from each record's run facts."""
    runs = [_recorded(before), _recorded(after)]
    rows = []
    settings: list[tuple[str, list[Any]]] = [
        ("judge", [r.judge for r in runs]),
        ("embedder", [r.embedder for r in runs]),
        ("dataset", [NOT_RECORDED if r.dataset_fingerprint is None else r.dataset_fingerprint for r in runs]),
    ]
    for what, values in settings:
        b, a = (UNKNOWN if v is NOT_RECORDED else _show(v) for v in values)
        rows.append(("dataset fingerprint (rows and answers)" if what == "dataset" else what, b, a, what))
    prompts = [run.prompts for run in runs]
    if prompts[0] is not None and prompts[1] is not None:
        rows += [(f"prompt of {e}", _show(prompts[0].get(e)), _show(prompts[1].get(e)), "prompt") for e in common]
    else:
        b, a = (f"{len(p)} recorded" if p is not None else UNKNOWN for p in prompts)
        rows.append(("prompts", b, a, "prompt"))
    return rows


def _params(record: RunRecord) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Evaluator name to (id, params), from the record's evaluators."""
    return {str(e.name): (_show(e.id), e.params or {}) for e in record.evaluators or ()}


def _parameters(before: RunRecord, after: RunRecord, common: list[str]) -> list[tuple[str, str, str, str]]:
    """List each common evaluator's id and parameters where they differ.

    Thresholds are compared per metric, from the metrics tables; ``name`` is what pairs the
    evaluators.
    """
    params = [_params(before), _params(after)]
    rows = []
    for e in (e for e in common if e in params[0] and e in params[1]):
        (id_b, pb), (id_a, pa) = params[0][e], params[1][e]
        rows.append((f"{e} evaluator", id_b, id_a, "parameter"))
        for k in sorted({*pb, *pa} - {"threshold", "name"}):
            rows.append(
                (f"{e} parameter {k}", _show(pb.get(k, "(not set)")), _show(pa.get(k, "(not set)")), "parameter")
            )
    return rows


def changes(before: EvaluationResult, after: EvaluationResult) -> list[tuple[str, str, str, str]]:
    """List every configuration difference as (what, before, after, kind).

    One side is :data:`UNKNOWN` where a result does not record the setting.
    """
    evs = [before.evaluators, after.evaluators]
    common = [e for e in evs[0] if e in evs[1]]
    rows = [(f"evaluator {e}", "run", "not run", "evaluator") for e in evs[0] if e not in evs[1]]
    rows += [(f"evaluator {e}", "not run", "run", "evaluator") for e in evs[1] if e not in evs[0]]
    records = before.record, after.record
    rows += _facts(*records, common) + _parameters(*records, common)
    thresholds = [m.set_index(["evaluator", "metric"])["threshold"] for m in (before.metrics, after.metrics)]
    for (e, metric), t_a in thresholds[1].items():
        t_b = thresholds[0].get((e, metric), t_a)
        if e in common:
            shown = [format_value(_number(t), 4) if not math.isnan(_number(t)) else "none" for t in (t_b, t_a)]
            rows.append((f"threshold of {e}.{metric}", shown[0], shown[1], "threshold"))
    versions = [UNKNOWN if r.nbeval_version is None else r.nbeval_version for r in records]
    rows.append(("nbeval version", versions[0], versions[1], "nbeval"))
    return [r for r in rows if r[1] != r[2]]


def warnings(found: list[tuple[str, str, str, str]], before: RunRecord, after: RunRecord) -> list[str]:
    """Write the sentences about changed configuration, the most likely to explain a difference first.

    Then whether both runs scored the very same rows (the same dataset fingerprint: answers
    included), and the settings one run does not record. A changed fingerprint says nothing by
    itself: new answers change it.
    """
    out, unknown = [], []
    for kind in ("judge", "embedder", "prompt", "parameter", "threshold", "nbeval", "evaluator", "dataset"):
        for what, b, a, _ in (c for c in found if c[3] == kind):
            if UNKNOWN in (b, a):
                unknown.append(f"the {what} ({'before' if b == UNKNOWN else 'after'} run)")
            elif kind == "evaluator":
                out.append(f"the {what} is only in the {'after' if b == 'not run' else 'before'} run: not compared")
            elif kind != "dataset":
                out.append(_WARN[kind].format(what=what, b=b, a=a))
    prints = [_recorded(record).dataset_fingerprint for record in (before, after)]
    if prints[0] is not None and prints[0] == prints[1]:
        out.append(
            "both runs scored the same rows, answers included (the same dataset fingerprint): every "
            "difference comes from the scoring (evaluators, judge, prompts), not from the models"
        )
    if unknown:
        out.append(f"not recorded, so whether it changed is unknown: {', '.join(unknown)}")
    return out


def describe_run(record: RunRecord) -> str:
    """A run's label, start and commit in words ("" when its record holds none)."""
    run = _recorded(record)
    parts = [f"'{run.label}'"] if run.label else []
    parts += [f"started {run.started_at}"] if run.started_at else []
    if run.git_commit:
        parts.append(f"commit {run.git_commit[:12]}" + (" with uncommitted changes" if run.git_dirty else ""))
    return ", ".join(parts)
