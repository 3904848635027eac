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
    from nbeval.results.statistics.part_summaries import PartSummaries

__all__ = [
    "AGGREGATE_COLUMNS",
    "DATASET_FILES",
    "FORMAT_VERSION",
    "LAZY_DISPLAY_SCORES",
    "METRIC_COLUMNS",
    "PASSED_DTYPE",
    "RESULT_FILES",
    "SCORE_COLUMNS",
    "SCORE_FILES",
    "EvaluationResult",
]


#: Scores of a result read lazily (a partitioned run's) above which showing it in a notebook does
#: not read them: the display is the leaderboards, from the aggregates.
LAZY_DISPLAY_SCORES = 1_000_000


class EvaluationResult:
    """The outcome of one run, as a long table of scores and the tables derived from it.

    Build it with :func:`nbeval.evaluate`; reload it with :func:`nbeval.load_result`.

    Args:
        scores: The long table, one row per (dataset row, evaluator, metric) (see
            :data:`SCORE_COLUMNS`).
        aggregates: Per model, evaluator and metric: value, rows measured ``n`` of ``N``, pass/fail.
        metrics: What each reported metric is: direction, range, threshold used, primary.
        dataset: The rows that were evaluated (prompts, answers, contexts).
        meta: Run facts as JSON, as ``result.json`` holds them; ``None`` for none. Not used when
            ``record`` is given.
        explanations: Per evaluator and model: structured explanations (e.g. a confusion matrix);
            ``None`` for none.
        model_labels: Model key to a readable name (from a lab's models), where known; ``None`` for
            none.
        record: The run facts typed; when given, ``result.meta`` is its JSON form instead of ``meta``.
    """

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
        self._lazy_scores: Any = None
        self._scores: pd.DataFrame | None = None
        self.scores = scores
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
        self.part_summaries: PartSummaries | None = None
        """A partitioned run's parts' summaries, added up: its intervals, comparisons and problems
        come from them, not from the long table (see
        :mod:`~nbeval.results.statistics.part_summaries`); ``None`` for any other result."""

    @property
    def scores(self) -> pd.DataFrame:
        """The long table (see :data:`SCORE_COLUMNS`).

        A partitioned run's result reads it from its run folder the first time it is asked for
        (:class:`~nbeval.results.storage.partitions.PartScores`): its aggregates and ``n_scores``
        do not need it.
        """
        if self._scores is None:
            self._scores = self._lazy_scores.load()
            self._lazy_scores = None
        return self._scores

    @scores.setter
    def scores(self, scores: Any) -> None:
        if hasattr(scores, "load") and not hasattr(scores, "columns"):  # read when first asked for
            self._lazy_scores, self._scores = scores, None
        else:
            self._lazy_scores, self._scores = None, scores

    @property
    def n_scores(self) -> int:
        """Rows of the long table, counted without reading it."""
        return len(self._lazy_scores) if self._scores is None else len(self._scores)

    @property
    def record(self) -> RunRecord:
        """The run facts typed (:class:`~nbeval.results.record.RunRecord`), read from :attr:`meta`.

        They are read in any format nbeval has written; assigning a record sets :attr:`meta` to its JSON
        form. :class:`~nbeval.errors.DataError` names a part of :attr:`meta` of the wrong type.
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
        """Build the result of a run from each dataset row's outcomes.

        The tables are built from each row's ``outcomes`` of ``evaluators`` over ``dataset``, with the lab,
        duration, usage and whether the run was cancelled as its facts.

        Args:
            outcomes: What each evaluator gave for each dataset row (its score, or none when the row was
                skipped).
            evaluators: The evaluators that ran; they aggregate their scores and declare the metrics.
            dataset: The rows that were evaluated.
            lab: The lab whose models give the readable model labels; ``None`` when there is none.
            duration_s: How long the run took, in seconds, when known.
            usage: The run's usage totals (tokens, calls, cost), when known.
            cancelled: Whether the run was cancelled before it finished.

        Returns:
            The result: its long table, aggregates and metrics, and the run's record.
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
        """The long table: one row per dataset row × evaluator × metric.

        Returns:
            A copy of :attr:`scores`, so a change to it leaves the result as it was.
        """
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
        """A model's readable name.

        Args:
            model_key: The model's key in the result.

        Returns:
            Its label in :attr:`model_labels`, or ``model_key`` itself when it has none.
        """
        return self.model_labels.get(model_key, model_key)

    def check_evaluator(self, evaluator: str) -> None:
        """Check that this result has the evaluator ``evaluator``.

        Args:
            evaluator: The evaluator's name.

        Raises:
            NotFound: When ``evaluator`` is not one of this result's evaluators (the message names those it
                has); :class:`~nbeval.errors.NotFound` is a ``KeyError``.
        """
        if evaluator not in self.evaluators:
            msg = f"no evaluator '{evaluator}' in this result; it has {self.evaluators}"
            raise NotFound(msg)

    def primary_metric(self, evaluator: str) -> str:
        """The name of ``evaluator``'s primary metric.

        Args:
            evaluator: The evaluator's name in the result.

        Returns:
            The primary metric's name.

        Raises:
            NotFound: When the evaluator is not in the result or has no primary metric.
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

        Args:
            evaluator: The evaluator whose metrics to show; ``None`` shows every evaluator's.
            metric: The metric to sort the models by; ``None`` sorts by the primary metric.
            ci: The confidence level of an interval for each metric (e.g. ``0.95``); ``None`` for no
                intervals.

        Returns:
            The leaderboard, indexed by model key, best first.
        """
        from nbeval.results.leaderboard import leaderboard

        return leaderboard(self, evaluator=evaluator, metric=metric, ci=ci)

    def compare(self, model_a: str, model_b: str, evaluator: str | None = None, *, alpha: float = 0.05) -> pd.DataFrame:
        """Tell whether ``model_a`` and ``model_b`` really differ, metric by metric.

        One row per evaluator and metric, paired on test cases, with the mean difference, its 95%
        interval, a paired test and Holm-adjusted p-values (see
        :func:`nbeval.results.statistics.compare.compare`).

        Args:
            model_a: The key of the first model.
            model_b: The key of the model it is compared with.
            evaluator: The evaluator whose metrics to compare; ``None`` compares every evaluator's.
            alpha: The significance level of the Holm-adjusted tests.

        Returns:
            The comparisons, one row per evaluator and metric; ``attrs["alpha"]`` holds ``alpha`` and
            ``attrs["family"]`` the family of the Holm adjustment in words.
        """
        from nbeval.results.statistics.compare import compare

        return compare(self, model_a, model_b, evaluator=evaluator, alpha=alpha)

    def arena(
        self, evaluator: str = "pairwise", *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> pd.DataFrame:
        """Arena ratings from head-to-head verdicts, one row per model, best first.

        The columns are ``model_key, rating, rating_lo, rating_hi, wins, losses, ties, n, win_rate``.
        Bradley-Terry strengths with the judge's first-slot preference fitted and removed, on the Elo
        scale (1000 is the mean model), with bootstrap intervals over test cases (see
        :mod:`nbeval.results.statistics.arena`).

        Args:
            evaluator: The head-to-head evaluator whose verdicts to fit (``pairwise`` by default).
            level: The confidence level of the intervals.
            n_boot: How many bootstrap resamples of test cases the intervals are computed from (0: no
                intervals).
            seed: The seed of the bootstrap's draws.

        Returns:
            The arena table, one row per model, best first.

        Raises:
            NotFound: When the result has no evaluator ``evaluator``.
            BadParameter: When ``evaluator`` filed no head-to-head verdicts.
        """
        from nbeval.results.statistics.head_to_head import arena_fit

        return arena_fit(self, evaluator, n_boot=n_boot, seed=seed, level=level).arena_table()

    def head_to_head(
        self, evaluator: str = "pairwise", *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> pd.DataFrame:
        """One row per pair of models compared, with the chance that one's answer is preferred.

        The columns are ``model_a, model_b, p_a_beats_b, lo, hi, wins_a, wins_b, ties, inconsistent, n``;
        ``p_a_beats_b`` is the fitted chance that ``model_a``'s answer is preferred with no slot
        preference, ``inconsistent`` the cases whose two orders disagree.

        Args:
            evaluator: The head-to-head evaluator whose verdicts to fit (``pairwise`` by default).
            level: The confidence level of the interval ``lo`` to ``hi``.
            n_boot: How many bootstrap resamples of test cases the intervals are computed from (0: no
                intervals).
            seed: The seed of the bootstrap's draws.

        Returns:
            The head-to-head table, one row per pair of models compared.

        Raises:
            NotFound: When the result has no evaluator ``evaluator``.
            BadParameter: When ``evaluator`` filed no head-to-head verdicts.
        """
        from nbeval.results.statistics.head_to_head import arena_fit

        return arena_fit(self, evaluator, n_boot=n_boot, seed=seed, level=level).head_to_head_table()

    def position_bias(
        self, evaluator: str = "pairwise", *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
    ) -> pd.DataFrame:
        """How much each judge favours the answer shown first.

        The columns are ``judge, first_slot_rate, beta, beta_lo, beta_hi, consistency, n`` (``beta`` > 0:
        the first slot is preferred; 0: no preference; ``consistency``: the share of pairs whose two
        orders agree).

        Args:
            evaluator: The head-to-head evaluator whose verdicts to fit (``pairwise`` by default).
            level: The confidence level of the interval ``beta_lo`` to ``beta_hi``.
            n_boot: How many bootstrap resamples of test cases the intervals are computed from (0: no
                intervals).
            seed: The seed of the bootstrap's draws.

        Returns:
            One row per judge.

        Raises:
            NotFound: When the result has no evaluator ``evaluator``.
            BadParameter: When ``evaluator`` filed no head-to-head verdicts.
        """
        from nbeval.results.statistics.head_to_head import arena_fit

        return arena_fit(self, evaluator, n_boot=n_boot, seed=seed, level=level).position_bias_table()

    @property
    def labels(self) -> pd.DataFrame:
        """Human labels of judge verdicts: ``key, model_key, evaluator, label``.

        See :mod:`nbeval.results.storage.labels`; the table is empty when there are none.
        """
        from nbeval.results.storage.labels import empty_labels

        labels = getattr(self, "_labels", None)
        return empty_labels() if labels is None else labels.copy()

    def set_labels(self, labels: Any) -> None:
        """Add human labels, replacing those of the same (key, model_key, evaluator).

        A label for a test case, model or evaluator the result does not have raises
        :class:`~nbeval.errors.DataError` naming the row and field, and no label is changed.

        Args:
            labels: A DataFrame or list of dicts with ``key, model_key, evaluator, label``, or the path of
                a CSV file with those columns.

        Raises:
            DataError: When a label is for a test case, model or evaluator the result does not have (no
                label is changed then).
        """
        from nbeval.results.storage.labels import merge_labels, read_labels

        self._labels = merge_labels(self.labels, read_labels(labels, self))

    def agreement(self, evaluator: str) -> Any:
        """Measure how well ``evaluator``'s verdicts agree with the human labels.

        Args:
            evaluator: The evaluator's name in the result.

        Returns:
            A :class:`~nbeval.results.statistics.agreement.JudgeAgreement`: Cohen's kappa, raw agreement,
            the confusion matrix and, for a score, the ROC curve and the threshold that best matches.
        """
        from nbeval.results.statistics.agreement import agreement

        return agreement(self, evaluator)

    def label_queue(self, evaluator: Any) -> pd.DataFrame:
        """List ``evaluator``'s rows that no person has labelled yet, the ones the judge is least sure of first.

        The judge is least sure where jurors disagree, a value is near the threshold, head-to-head orders
        disagree, or a row is unrated (see :mod:`nbeval.results.statistics.label_queue`).

        Args:
            evaluator: The evaluator's name in the result, or the evaluator object.

        Returns:
            The rows to label, most uncertain first: ``key, model_key, value, label, uncertainty, why``.
        """
        from nbeval.results.statistics.label_queue import label_queue

        return label_queue(self, evaluator)

    def jury_agreement(self, evaluator: str, *, metric: str | None = None, n_boot: int = 1000, seed: int = 0) -> Any:
        """Measure how far the jurors of ``evaluator`` (run with ``judge=[...]``) agree with each other.

        ``jury_values(evaluator)`` is the table it is measured on.

        Args:
            evaluator: The evaluator's name in the result; it must have been run with a jury.
            metric: The metric to measure agreement on; ``None`` for the evaluator's primary metric.
            n_boot: How many bootstrap resamples the interval of α is computed from.
            seed: The seed of the bootstrap's draws.

        Returns:
            A :class:`~nbeval.results.statistics.jury_agreement.JuryAgreement` with Krippendorff's α
            (nominal for verdicts, interval for scores) and its bootstrap interval, Fleiss' κ and Cohen's
            κ per pair of jurors.
        """
        from nbeval.results.statistics.jury_table import jury_agreement

        return jury_agreement(self, evaluator, metric=metric, n_boot=n_boot, seed=seed)

    def jury_values(self, evaluator: str, metric: str | None = None) -> pd.DataFrame:
        """Each juror's value of ``metric`` per row, and each row's disagreement between jurors.

        Sort by ``disagreement`` to read the contested cases first.

        Args:
            evaluator: The evaluator's name in the result; it must have been run with a jury.
            metric: The metric whose values to show; ``None`` for the evaluator's primary metric.

        Returns:
            One row per row the jury scored: ``key``, ``model_key``, one column per juror and
            ``disagreement``.
        """
        from nbeval.results.statistics.jury_table import jury_values

        return jury_values(self, evaluator, metric)

    @property
    def problems(self) -> pd.DataFrame:
        """Problems, one row each, of every kind the result can show.

        Models and evaluators that measured nothing (``unmeasured``), rows whose call or scoring failed
        (``errored``), threshold breaches per model and primary metric (``threshold``), rows that could
        not be rated (``unrated``) and perturbation flips (``perturbation_flip``); see
        :func:`nbeval.results.reporting.problems.problems`.
        """
        from nbeval.results.reporting.problems import problems

        return problems(self)

    @property
    def insights(self) -> pd.DataFrame:
        """The best model on each primary metric and the hardest test cases."""
        from nbeval.results.reporting.insights import insights

        return insights(self)

    def robustness(self, evaluator: str | None = None, metric: str | None = None) -> pd.DataFrame:
        """Flip rates of perturbed test cases against their originals, worst first.

        One row per evaluator, metric, model, perturbator and intensity. Columns: ``n`` (pairs with both
        values known), ``flips`` (threshold crossings either way), ``flips_down`` (original passed,
        perturbed case failed), ``flip_rate`` (``flips / n``) and ``mean_delta`` (mean change, signed so
        that negative is worse). See :mod:`nbeval.results.statistics.robustness`.

        Args:
            evaluator: The evaluator to show; ``None`` shows every evaluator.
            metric: The metric to measure flips on; ``None`` for each evaluator's primary metric.

        Returns:
            The flip rates, worst first.
        """
        from nbeval.results.statistics.robustness import robustness

        return robustness(self, evaluator=evaluator, metric=metric)

    def cases(self) -> pd.DataFrame:
        """The dataset rows (prompt, expected, answer, context) by key and model.

        Returns:
            The dataset as a DataFrame, one row per test case and model.
        """
        return self.dataset.to_pandas()

    def summary(self, brief: bool = False) -> str:
        """A plain-text summary whose lines fit 100 columns.

        It shows a leaderboard per evaluator (every metric, 95% intervals), whether each lead is real,
        and the problems.

        Args:
            brief: Show instead one table of every evaluator's primary metric by model, and the problems
                counted by kind.

        Returns:
            The summary, lines separated by newlines.
        """
        from nbeval.results.reporting.text import brief_text, summary_text

        return brief_text(self) if brief else summary_text(self)

    def __repr__(self) -> str:
        head = (
            f"EvaluationResult({len(self.model_keys)} models, {len(self.evaluators)} evaluators, {self.n_scores} scores"
        )
        if self._scores is None:
            head = f"{head} in {self.meta.get('run_dir', 'its run folder')}"
            if self.part_summaries is None or self.part_summaries.perturbed:
                return f"{head})"  # counting the problems would read every score
        return f"{head}, {len(self.problems)} problems)"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from nbeval.results.renderers import get_renderer

        if self._scores is None and self.n_scores > LAZY_DISPLAY_SCORES:
            # shown, a partitioned run's millions of scores would be read into this process: its
            # leaderboards come from the aggregates, and the long table waits until it is asked for
            from nbeval.results.reporting.report import unread_summary_html

            return {"text/plain": repr(self), "text/html": unread_summary_html(self)}
        render = get_renderer("mimebundle")
        if render is None:  # the notebook kit is not installed: text and HTML only
            from nbeval.results.reporting.report import summary_html

            return {"text/plain": repr(self), "text/html": summary_html(self)}
        bundle: dict[str, Any] = render(self)
        return bundle

    # -- persistence ----------------------------------------------------------------------

    def save(self, folder: str | Path, *, label: str | None = None, scores_format: str = "parquet") -> Path:
        """Write the result to ``folder`` (created) as the files :func:`nbeval.load_result` reads back.

        The files are the :data:`RESULT_FILES`. Other files in ``folder`` are left alone (a long table of
        the other format too: ``result.json`` says which one belongs to the result).

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

        Args:
            folder: The folder to write the result to; it is created when missing.
            label: The run's label, kept in its run facts; ``None`` keeps the label the result has.
            scores_format: ``"parquet"`` (the default) or ``"jsonl"``: the format of the long table and
                the dataset.

        Returns:
            ``folder``, as a :class:`~pathlib.Path`.

        Raises:
            DataError: When the result cannot go where ``folder`` says, or a human label is longer than
                :data:`~nbeval.results.storage.limits.MAX_LABEL_CHARS`; nothing is written then.
            BadParameter: When ``scores_format`` is neither ``"parquet"`` nor ``"jsonl"``, or ``label``
                is text too long to name a run.
            BadArgumentType: When ``label`` is not text.
        """
        from nbeval.results.storage.saving import save_result

        return save_result(self, folder, scores_format=scores_format, label=label)

    def to_jsonl(self, path: str | Path) -> None:
        """Write the long table as JSON lines, one object per score, floats exact.

        It is written aside and renamed over ``path``: the format of ``scores.jsonl``, for tools that
        read no Parquet.

        Args:
            path: The file to write.
        """
        from nbeval.results.storage.saving import write_records

        write_aside(path, lambda tmp: write_records(tmp, self.scores))

    def to_csv(self, path: str | Path | Any) -> None:
        """Write the long table as CSV.

        It is written aside and renamed over ``path`` (a failed write keeps the previous file).

        Text cells that begin with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return get an
        apostrophe ``'`` in front, so a spreadsheet shows them as text instead of running them as
        formulas (CSV injection; see :mod:`nbeval.data.csvsafe`, whose ``csv_unsafe`` removes
        it). Numbers, negative ones included, are written as numbers. Lines end with CRLF (as
        RFC 4180 has it), so a cell holding a line break or a carriage return is quoted whole.

        Args:
            path: The file to write, or an open text file (written in place).
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
        """A static, self-contained HTML report, bounded in size.

        Its size is bounded: see :mod:`nbeval.results.reporting.report`.

        Args:
            path: Where to write the report (aside first, then renamed over it, so a failed write keeps
                the previous report); ``None`` writes nothing.

        Returns:
            The report's HTML.
        """
        from nbeval.results.reporting.report import report_html

        html = report_html(self)
        if path is not None:
            write_aside(path, lambda tmp: tmp.write_text(html, encoding="utf-8"))
        return html
