"""EvaluationResult: one long table of scores and everything derived from it.

The long table has one row per (dataset row, evaluator, metric). From it and the per-model
aggregates (which an evaluator may compute its own way, e.g. classification's macro F1) come
leaderboards, problems and insights. A result saves to a folder and loads back without loss.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.csvsafe import csv_safe
from nbeval.data.model import LlmDataset, TestLab
from nbeval.errors import NotFound
from nbeval.results.aggregates import (
    AGGREGATE_COLUMNS,
    METRIC_COLUMNS,
    PASSED_DTYPE,
    add_aggregate_rows,
    aggregates_table,
    metrics_table,
    model_labels,
    run_record,
)
from nbeval.results.record import FORMAT_VERSION, RunRecord
from nbeval.results.score_table import SCORE_COLUMNS, outcome_columns, typed_scores
from nbeval.results.storage.files import write_aside
from nbeval.results.storage.saving import DATASET_FILES, RESULT_FILES, SCORE_FILES

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.evaluators.base import Evaluator
    from nbeval.results.outcome import RowOutcome

__all__ = [
    "AGGREGATE_COLUMNS",
    "DATASET_FILES",
    "FORMAT_VERSION",
    "METRIC_COLUMNS",
    "PASSED_DTYPE",
    "RESULT_FILES",
    "SCORE_COLUMNS",
    "SCORE_FILES",
    "EvaluationResult",
]


class EvaluationResult:
    """The outcome of one run. Build it with :func:`nbeval.evaluate`; reload it with :func:`nbeval.load_result`."""

    def __init__(
        self,
        scores: pd.DataFrame,
        aggregates: pd.DataFrame,
        metrics: pd.DataFrame,
        dataset: LlmDataset,
        *,
        meta: dict[str, Any] | None = None,
        explanations: dict[str, dict[str, Any]] | None = None,
        model_labels: dict[str, str] | None = None,
        record: RunRecord | None = None,
    ) -> None:
        self.scores = scores
        """The long table (see :data:`SCORE_COLUMNS`)."""
        self.aggregates = aggregates
        """Per model, evaluator and metric: value, rows measured ``n`` of ``N``, pass/fail."""
        self.metrics = metrics
        """What each reported metric is: direction, range, threshold used, primary."""
        self.dataset = dataset
        """The rows that were evaluated (prompts, answers, contexts)."""
        self.meta: dict[str, Any] = record.to_meta() if record is not None else (meta or {})
        """Run facts as JSON, as ``result.json`` holds them: duration, token usage and cost,
        whether it was cancelled, versions, and (a result of :func:`nbeval.evaluate`)
        ``meta["run"]``: when it started, its label, the git commit, the dataset's fingerprint,
        judge, embedder and prompts. :attr:`record` is the same facts typed (read from this dict
        each time, so an edit here shows there); ``record=`` gives them typed instead."""
        self.explanations = explanations or {}
        """Per evaluator and model: structured explanations (e.g. a confusion matrix)."""
        self.model_labels = model_labels or {}
        """Model key to a readable name (from a lab's models), where known."""

    @property
    def record(self) -> RunRecord:
        """The run facts typed (:class:`~nbeval.results.record.RunRecord`), read from :attr:`meta`
        (in any format nbeval has written); assigning a record sets :attr:`meta` to its JSON form.
        :class:`~nbeval.errors.DataError` names a part of :attr:`meta` of the wrong type.
        """
        return RunRecord.from_meta(self.meta)

    @record.setter
    def record(self, record: RunRecord) -> None:
        self.meta = record.to_meta()

    # -- construction from the engine ---------------------------------------------------------

    @classmethod
    def from_outcomes(
        cls,
        outcomes: Sequence[RowOutcome],
        evaluators: Sequence[Evaluator],
        dataset: LlmDataset,
        *,
        lab: TestLab | None = None,
        duration_s: float | None = None,
        usage: dict[str, Any] | None = None,
        cancelled: bool = False,
    ) -> EvaluationResult:
        """The result of a run: the tables built from each row's ``outcomes`` of ``evaluators`` over ``dataset``,
        with the lab, duration, usage and whether the run was cancelled as its facts.
        """
        grouped: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {}
        counts: dict[tuple[str, str], int] = {}
        for o in outcomes:
            ev, row = o.evaluator, o.row
            counts[(ev.name, row.model_key)] = counts.get((ev.name, row.model_key), 0) + 1
            if o.score is not None:
                group = grouped.setdefault((ev.name, row.model_key), ([], []))
                group[0].append(row)
                group[1].append(o.score)
        scores = typed_scores(outcome_columns(outcomes))

        agg_rows: list[list[Any]] = []
        explanations: dict[str, dict[str, Any]] = {}
        by_name = {ev.name: ev for ev in evaluators}
        for (name, model_key), n_rows in counts.items():
            ev = by_name[name]
            rows, row_scores = grouped.get((name, model_key), ([], []))
            aggs = ev.aggregate(rows, row_scores) if row_scores else {}
            add_aggregate_rows(agg_rows, explanations, ev, model_key, aggs, n_rows)
        record = run_record(evaluators, duration_s=duration_s, usage=usage, cancelled=cancelled)
        return cls(
            scores,
            aggregates_table(agg_rows),
            metrics_table(evaluators),
            dataset,
            record=record,
            explanations=explanations,
            model_labels=model_labels(lab),
        )

    # -- views ----------------------------------------------------------------------------

    def to_pandas(self) -> pd.DataFrame:
        """The long table: one row per dataset row × evaluator × metric."""
        return self.scores.copy()

    @property
    def model_keys(self) -> list[str]:
        """The models in the result, in the order they first appear."""
        return list(dict.fromkeys(self.aggregates["model_key"]))

    @property
    def evaluators(self) -> list[str]:
        """The evaluators in the result, in the order they ran."""
        return list(dict.fromkeys(self.metrics["evaluator"]))

    def label(self, model_key: str) -> str:
        """A model's readable name."""
        return self.model_labels.get(model_key, model_key)

    def check_evaluator(self, evaluator: str) -> None:
        """Raise :class:`~nbeval.errors.NotFound` (a ``KeyError``) naming the evaluators this result
        has when ``evaluator`` is not one.
        """
        if evaluator not in self.evaluators:
            msg = f"no evaluator '{evaluator}' in this result; it has {self.evaluators}"
            raise NotFound(msg)

    def primary_metric(self, evaluator: str) -> str:
        """The name of ``evaluator``'s primary metric; raises :class:`~nbeval.errors.NotFound` when the evaluator is
        not in the result or has none.
        """
        m = self.metrics[(self.metrics["evaluator"] == evaluator) & self.metrics["primary"]]
        if m.empty:
            self.check_evaluator(evaluator)
            msg = f"evaluator '{evaluator}' has no primary metric in this result"
            raise NotFound(msg)
        return str(m["metric"].iloc[0])

    def leaderboard(
        self, evaluator: str | None = None, metric: str | None = None, ci: float | None = None
    ) -> pd.DataFrame:
        """One row per model; one column per metric plus ``<metric>_n`` (rows measured) and ``N``.

        With ``evaluator=None`` every evaluator's metrics appear as ``<evaluator>.<metric>``.
        Models are sorted best first on the chosen (default: primary) metric. With ``ci=0.95``
        each metric is followed by ``<metric>_lo`` and ``<metric>_hi``, the ends of its 95%
        interval; ``attrs["ci"]`` names the method of each column (see
        :func:`nbeval.results.leaderboard.leaderboard`).
        """
        from nbeval.results.leaderboard import leaderboard

        return leaderboard(self, evaluator=evaluator, metric=metric, ci=ci)

    def compare(self, model_a: str, model_b: str, evaluator: str | None = None, *, alpha: float = 0.05) -> pd.DataFrame:
        """Whether ``model_a`` and ``model_b`` really differ: one row per evaluator and metric,
        paired on test cases, with the mean difference, its 95% interval, a paired test and
        Holm-adjusted p-values (see :func:`nbeval.results.statistics.compare.compare`).
        """
        from nbeval.results.statistics.compare import compare

        return compare(self, model_a, model_b, evaluator=evaluator, alpha=alpha)

    def arena(
        self, evaluator: str = "pairwise", *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> pd.DataFrame:
        """Arena ratings from head-to-head verdicts, one row per model, best first: ``model_key,
        rating, rating_lo, rating_hi, wins, losses, ties, n, win_rate``. Bradley-Terry strengths
        with the judge's first-slot preference fitted and removed, on the Elo scale (1000 is the
        mean model), with bootstrap intervals over test cases (see :mod:`nbeval.results.statistics.arena`).
        """
        from nbeval.results.statistics.head_to_head import arena_fit

        return arena_fit(self, evaluator, n_boot=n_boot, seed=seed, level=level).arena_table()

    def head_to_head(
        self, evaluator: str = "pairwise", *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> pd.DataFrame:
        """One row per pair of models compared: ``model_a, model_b, p_a_beats_b, lo, hi, wins_a,
        wins_b, ties, inconsistent, n``; ``p_a_beats_b`` is the fitted chance that ``model_a``'s
        answer is preferred with no slot preference, ``inconsistent`` the cases whose two orders
        disagree.
        """
        from nbeval.results.statistics.head_to_head import arena_fit

        return arena_fit(self, evaluator, n_boot=n_boot, seed=seed, level=level).head_to_head_table()

    def position_bias(
        self, evaluator: str = "pairwise", *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> pd.DataFrame:
        """How much each judge favours the answer shown first: ``judge, first_slot_rate, beta,
        beta_lo, beta_hi, consistency, n`` (``beta`` > 0: the first slot is preferred; 0: no
        preference; ``consistency``: the share of pairs whose two orders agree).
        """
        from nbeval.results.statistics.head_to_head import arena_fit

        return arena_fit(self, evaluator, n_boot=n_boot, seed=seed, level=level).position_bias_table()

    @property
    def labels(self) -> pd.DataFrame:
        """Human labels of judge verdicts: ``key, model_key, evaluator, label`` (see
        :mod:`nbeval.results.storage.labels`); empty when there are none.
        """
        from nbeval.results.storage.labels import empty_labels

        labels = getattr(self, "_labels", None)
        return empty_labels() if labels is None else labels.copy()

    def set_labels(self, labels: Any) -> None:
        """Add human labels, replacing those of the same (key, model_key, evaluator).

        ``labels``: a DataFrame or list of dicts with ``key, model_key, evaluator, label``, or the path of a CSV file
        with those columns. A label for a test case, model or evaluator the result does not have raises
        :class:`~nbeval.errors.DataError` naming the row and field, and no label is changed.
        """
        from nbeval.results.storage.labels import merge_labels, read_labels

        self._labels = merge_labels(self.labels, read_labels(labels, self))

    def agreement(self, evaluator: str) -> Any:
        """How well ``evaluator``'s verdicts agree with the human labels: a
        :class:`~nbeval.results.statistics.agreement.JudgeAgreement` (Cohen's kappa, raw agreement, the
        confusion matrix and, for a score, the ROC curve and the threshold that best matches).
        """
        from nbeval.results.statistics.agreement import agreement

        return agreement(self, evaluator)

    def label_queue(self, evaluator: Any) -> pd.DataFrame:
        """``evaluator``'s rows that no person has labelled yet, the ones the judge is least sure of
        first (jurors disagreeing, a value near the threshold, head-to-head orders disagreeing,
        unrated rows): ``key, model_key, value, label, uncertainty, why`` (see
        :mod:`nbeval.results.statistics.label_queue`).
        """
        from nbeval.results.statistics.label_queue import label_queue

        return label_queue(self, evaluator)

    def jury_agreement(self, evaluator: str, *, metric: str | None = None, n_boot: int = 1000, seed: int = 0) -> Any:
        """How far the jurors of ``evaluator`` (run with ``judge=[...]``) agree with each other: a
        :class:`~nbeval.results.statistics.jury_agreement.JuryAgreement` with Krippendorff's α (nominal for
        verdicts, interval for scores) and its bootstrap interval, Fleiss' κ and Cohen's κ per pair
        of jurors. ``jury_values(evaluator)`` is the table it is measured on.
        """
        from nbeval.results.statistics.jury_table import jury_agreement

        return jury_agreement(self, evaluator, metric=metric, n_boot=n_boot, seed=seed)

    def jury_values(self, evaluator: str, metric: str | None = None) -> pd.DataFrame:
        """Each juror's value of ``metric`` (the primary by default) per row, and each row's
        ``disagreement`` between jurors (sort by it to read the contested cases first).
        """
        from nbeval.results.statistics.jury_table import jury_values

        return jury_values(self, evaluator, metric)

    @property
    def problems(self) -> pd.DataFrame:
        """Problems, one row each: models and evaluators that measured nothing (``unmeasured``),
        rows whose call or scoring failed (``errored``), threshold breaches per model and primary
        metric (``threshold``), rows that could not be rated (``unrated``) and perturbation flips
        (``perturbation_flip``); see :func:`nbeval.results.reporting.problems.problems`.
        """
        from nbeval.results.reporting.problems import problems

        return problems(self)

    @property
    def insights(self) -> pd.DataFrame:
        """The best model on each primary metric and the hardest test cases."""
        from nbeval.results.reporting.insights import insights

        return insights(self)

    def robustness(self, evaluator: str | None = None, metric: str | None = None) -> pd.DataFrame:
        """Flip rates of perturbed test cases against their originals, one row per evaluator,
        metric, model, perturbator and intensity, worst first.

        Columns: ``n`` (pairs with both values known), ``flips`` (threshold crossings either way),
        ``flips_down`` (original passed, perturbed case failed), ``flip_rate`` (``flips / n``) and
        ``mean_delta`` (mean change, signed so that negative is worse). ``metric`` defaults to each
        evaluator's primary metric. See :mod:`nbeval.results.statistics.robustness`.
        """
        from nbeval.results.statistics.robustness import robustness

        return robustness(self, evaluator=evaluator, metric=metric)

    def cases(self) -> pd.DataFrame:
        """The dataset rows (prompt, expected, answer, context) by key and model."""
        return self.dataset.to_pandas()

    def summary(self, brief: bool = False) -> str:
        """A plain-text summary whose lines fit 100 columns: a leaderboard per evaluator (every
        metric, 95% intervals), whether each lead is real, and the problems. With ``brief``: one
        table of every evaluator's primary metric by model, and the problems counted by kind.
        """
        from nbeval.results.reporting.text import brief_text, summary_text

        return brief_text(self) if brief else summary_text(self)

    def __repr__(self) -> str:
        return (
            f"EvaluationResult({len(self.model_keys)} models, {len(self.evaluators)} evaluators, "
            f"{len(self.scores)} scores, {len(self.problems)} problems)"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from nbeval.results.renderers import get_renderer

        render = get_renderer("mimebundle")
        if render is None:  # the notebook kit is not installed: text and HTML only
            from nbeval.results.reporting.report import summary_html

            return {"text/plain": repr(self), "text/html": summary_html(self)}
        bundle: dict[str, Any] = render(self)
        return bundle

    # -- persistence ----------------------------------------------------------------------

    def save(self, folder: str | Path, *, label: str | None = None, scores_format: str = "parquet") -> Path:
        """Write the result to ``folder`` (created): the :data:`RESULT_FILES`, which
        :func:`nbeval.load_result` reads back. Other files in ``folder`` are left alone (a long table
        of the other format too: ``result.json`` says which one belongs to the result).

        The long table goes to ``scores.parquet`` and the dataset to ``dataset.parquet``
        (columnar, compressed, written in chunks; pyarrow reads them, and so do pandas, Polars,
        DuckDB and Spark). ``scores_format="jsonl"`` writes ``scores.jsonl`` (one JSON object per
        line) and ``dataset.json`` instead, as nbeval before format version 2 did.

        The files are written into a hidden folder inside ``folder`` first and renamed into
        place only once all of them are written (``result.json`` last), so a save that fails or
        is interrupted while writing leaves the previous result in ``folder`` as it was. The
        renames hold the folder's lock, so two saves into one folder at once leave one of them
        whole; ``result.json`` keeps a save id and each file's hash, so a folder that mixes two
        saves anyway (a crash between two renames, a file copied in) is a DataError on load,
        never a result (see :mod:`nbeval.results.storage.save_id`). A file or folder
        where the result cannot go, or a human label longer than
        :data:`~nbeval.results.storage.limits.MAX_LABEL_CHARS` (which :func:`nbeval.load_result` would
        refuse), raises :class:`~nbeval.errors.DataError` before anything is written.

        ``label`` names the run (``result.save("runs/0412", label="bigger chunks")``): it is kept
        in the folder's run facts and, once the folder is written, in ``result.record.run.label``
        (``None`` keeps the label the result has). Text of at most
        :data:`~nbeval.results.storage.limits.MAX_LABEL_CHARS` characters; anything else raises before
        anything is written. :func:`nbeval.runs` lists the runs saved in a folder.
        """
        from nbeval.results.storage.saving import save_result

        return save_result(self, folder, scores_format=scores_format, label=label)

    def to_jsonl(self, path: str | Path) -> None:
        """The long table as JSON lines (one object per score, floats exact), written aside and
        renamed over ``path``: the format of ``scores.jsonl``, for tools that read no Parquet.
        """
        from nbeval.results.storage.saving import write_records

        write_aside(path, lambda tmp: write_records(tmp, self.scores))

    def to_csv(self, path: str | Path | Any) -> None:
        """The long table as CSV, written aside and renamed over ``path`` (a failed write keeps
        the previous file); ``path`` may also be an open text file.

        Text cells that begin with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return get an
        apostrophe ``'`` in front, so a spreadsheet shows them as text instead of running them as
        formulas (CSV injection; see :mod:`nbeval.data.csvsafe`, whose ``csv_unsafe`` removes
        it). Numbers, negative ones included, are written as numbers. Lines end with CRLF (as
        RFC 4180 has it), so a cell holding a line break or a carriage return is quoted whole.
        """
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        table = self.scores.copy()
        for column in table.columns:
            if not (is_numeric_dtype(table[column]) or is_bool_dtype(table[column])):
                table[column] = table[column].map(csv_safe)
        if not isinstance(path, (str, os.PathLike)):  # an open file or buffer: written in place
            table.to_csv(path, index=False, lineterminator="\r\n")
            return
        write_aside(path, lambda tmp: table.to_csv(tmp, index=False, lineterminator="\r\n"))

    def to_html(self, path: str | Path | None = None) -> str:
        """A static, self-contained HTML report; written to ``path`` when given (aside first, then
        renamed over it, so a failed write keeps the previous report). Its size is bounded: see
        :mod:`nbeval.results.reporting.report`.
        """
        from nbeval.results.reporting.report import report_html

        html = report_html(self)
        if path is not None:
            write_aside(path, lambda tmp: tmp.write_text(html, encoding="utf-8"))
        return html
