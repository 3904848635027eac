"""What happened to each model's rows under each evaluator, counted: what the problems are made of.

A :class:`Tally` counts, for one model and evaluator on the evaluator's primary metric, the rows
that errored (by the first line of their error), could not be rated (by label), were skipped (by
reason), gave no value for another reason, and the rows in all. Tallies add up: a partitioned
run's parts each count their own rows (:func:`tally_rows` in the worker) and the client adds the
parts' tallies, so its problems are the ones a local run shows without reading a score
(:mod:`nbeval.results.reporting.problems` writes both from tallies).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = ["ERROR_CHARS", "MAX_ERROR_LINES", "Tally", "first_line", "result_tallies", "scores_tallies", "tally_rows"]

#: How long an error's first line may be in a problem's message (cut in the middle beyond it).
ERROR_CHARS = 120
#: Distinct error lines a partitioned run's tally keeps (the commonest); past twice as many, the
#: rest are counted together, so that errors that all differ cannot fill the client's memory.
MAX_ERROR_LINES = 1_000


@dataclass
class Tally:
    """One model and evaluator's rows on the evaluator's primary metric, counted by what happened to them."""

    metric: str
    """The primary metric the rows were counted on."""
    rows: int = 0
    """Rows of this model and evaluator (scored or skipped)."""
    errored: dict[str, int] = field(default_factory=dict)
    """Rows whose call or scoring failed, by the first line of their error (:func:`first_line`)."""
    unrated: dict[str, int] = field(default_factory=dict)
    """Rows that could not be rated, by label (:data:`~nbeval.evaluators.base.UNRATED_LABELS`)."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Skipped rows, by skip reason."""
    no_value: int = 0
    """Scored rows with no value, no error and a rated label."""
    other_errors: int = 0
    """Errored rows whose lines :meth:`trim` let go (counted, not named)."""

    @property
    def errored_rows(self) -> int:
        """Every errored row, named or not."""
        return sum(self.errored.values()) + self.other_errors

    def trim(self) -> None:
        """Keep the :data:`MAX_ERROR_LINES` commonest error lines once there are twice as many; count the rest."""
        if len(self.errored) <= 2 * MAX_ERROR_LINES:
            return
        ordered = sorted(self.errored.items(), key=lambda kv: (-kv[1], kv[0]))
        self.errored = dict(ordered[:MAX_ERROR_LINES])
        self.other_errors += sum(n for _, n in ordered[MAX_ERROR_LINES:])

    def add(self, other: Tally) -> None:
        """Add ``other``'s counts (the same model and evaluator, other rows) to these."""
        self.rows += other.rows
        self.no_value += other.no_value
        self.other_errors += other.other_errors
        for mine, theirs in (
            (self.errored, other.errored),
            (self.unrated, other.unrated),
            (self.skipped, other.skipped),
        ):
            for what, n in theirs.items():
                mine[what] = mine.get(what, 0) + n

    def to_json(self) -> list[Any]:
        """A JSON form (what a part's ``summary.json`` holds)."""
        return [self.metric, self.rows, self.errored, self.unrated, self.skipped, self.no_value, self.other_errors]

    @classmethod
    def from_json(cls, data: list[Any]) -> Tally:
        """The tally of :meth:`to_json`'s form."""
        metric, rows, errored, unrated, skipped, no_value, other_errors = data
        return cls(
            str(metric), int(rows), dict(errored), dict(unrated), dict(skipped), int(no_value), int(other_errors)
        )


def tally_rows(
    rows: Iterable[tuple[str, Any, str, bool, Any, Any, Any, Any]], primary: Mapping[Any, str]
) -> dict[tuple[str, Any], Tally]:
    """Count rows of a long table by model and evaluator, on each evaluator's primary metric.

    Args:
        rows: Per row of the long table: model key, evaluator (its name, or any id ``primary``
            knows it by), metric, skipped, error, value, label and skip reason (other metrics'
            rows are passed over).
        primary: Each evaluator's primary metric.

    Returns:
        The tallies, keyed by (model key, evaluator), in the order their first row came.
    """
    from nbeval.evaluators.base import UNRATED_LABELS

    out: dict[tuple[str, Any], Tally] = {}
    for model, ev, metric, skipped, error, value, label, reason in rows:
        if primary.get(ev) != metric:
            continue
        t = out.get((model, ev))
        if t is None:
            t = out[(model, ev)] = Tally(metric)
        t.rows += 1
        if skipped:
            why = str(reason)
            t.skipped[why] = t.skipped.get(why, 0) + 1
        elif value is not None and not (isinstance(value, float) and math.isnan(value)):
            continue
        elif label in UNRATED_LABELS:
            t.unrated[label] = t.unrated.get(label, 0) + 1
        elif error is not None and not (isinstance(error, float) and math.isnan(error)):
            line = first_line(str(error))
            t.errored[line] = t.errored.get(line, 0) + 1
        else:
            t.no_value += 1
    return out


def scores_tallies(scores: pd.DataFrame, primary: Mapping[str, str]) -> dict[tuple[str, str], Tally]:
    """:func:`tally_rows` of a long table given as a DataFrame."""
    cols = ("model_key", "evaluator", "metric", "skipped", "error", "value", "label", "skip_reason")
    lists = [scores[c].astype(object).where(scores[c].notna(), None).tolist() for c in cols]
    lists[0], lists[1], lists[2] = ([str(v) for v in col] for col in lists[:3])
    lists[3] = [bool(v) for v in lists[3]]
    return tally_rows(zip(*lists, strict=True), primary)


def result_tallies(result: EvaluationResult) -> dict[tuple[str, str], Tally]:
    """The tallies of a result: a partitioned run's from its parts, otherwise counted from its long table."""
    if result.part_summaries is not None:
        return result.part_summaries.tallies()
    m = result.metrics
    primary = {
        str(e): str(x) for e, x in m.loc[m["primary"].astype(bool), ["evaluator", "metric"]].itertuples(index=False)
    }
    return scores_tallies(result.scores, primary)


def first_line(error: str) -> str:
    """Shorten an error to one line.

    The line is its first non-empty line, spaces collapsed, cut in the middle to at most
    :data:`ERROR_CHARS` characters (the end of a wrapped error often says the cause).
    """
    line = next((ln for ln in str(error).splitlines() if ln.strip()), "")
    line = " ".join(line.split()) or "(no message)"
    if len(line) <= ERROR_CHARS:
        return line
    size = ERROR_CHARS * 11 // 20  # the head (what failed, where); the tail (a wrapped error's cause) the rest
    head, tail = line[:size], line[-(ERROR_CHARS - size - 3) :]
    if " " in head[-12:]:  # cut between words where a word ends near the cut
        head = head[: head.rindex(" ")]
    if " " in tail[:12]:
        tail = tail[tail.index(" ") + 1 :]
    return f"{head.rstrip()} … {tail.lstrip()}"
