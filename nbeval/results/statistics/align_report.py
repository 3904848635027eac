"""What :func:`nbeval.align` measured: the :class:`AlignReport` of an aligned judge on the held-out rows.

On the held-out labelled rows, the judge's verdicts before and after are compared with the person's:
accuracy and Cohen's kappa, each with a percentile bootstrap interval over held-out test cases
(``2000`` resamples drawn with ``seed``; a resample where kappa is undefined is left out of kappa's
interval). A bootstrap whose resamples all give the same value says nothing of the uncertainty (one
held-out test case, or every verdict right, or every one wrong): then accuracy's interval is the
Wilson score interval of the held-out rows (:func:`~nbeval.results.statistics.stats.wilson_interval`; 1 right
of 1 gives about 0.21 to 1 at 95%), and kappa has none. A row the judge could not rate counts as a
disagreement (in kappa it is a third verdict, ``"unrated"``). Whether the change of accuracy is
real is the exact McNemar test on the rows whose correctness changed
(:func:`~nbeval.results.statistics.stats.mcnemar_exact`); ``significant`` is true when accuracy rose and
``p < alpha``.

Fewer than :data:`MIN_HELD_OUT_ROWS` held-out rows are too few for the accuracy to mean much: the
report says so (``str()`` and :attr:`AlignReport.note`) and :func:`nbeval.align` warns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from nbeval.results.statistics.agreement import PASS_FAIL
from nbeval.results.statistics.stats import BOOTSTRAP_RESAMPLES, cohen_kappa, mcnemar_exact, wilson_interval

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MIN_HELD_OUT_ROWS", "UNRATED", "AlignReport", "align_report"]

#: The fewest held-out rows whose accuracy the report takes for a measure; with fewer it says the
#: accuracy is not meaningful (and :func:`nbeval.align` warns).
MIN_HELD_OUT_ROWS = 10
#: The verdict of a held-out row the judge could not rate.
UNRATED = "unrated"


@dataclass(frozen=True, eq=False)
class AlignReport:
    """How an aligned judge did on held-out labelled rows, before and after (see :mod:`nbeval.engine.align`).

    ``str()`` says it in words; :meth:`to_frame` gives the table.
    """

    evaluator: str
    """The evaluator aligned (its name in the result)."""
    held_out: tuple[str, ...]
    """The held-out test cases, by key, sorted."""
    trained_on: tuple[str, ...]
    """The test cases examples could be taken from, sorted."""
    examples: tuple[tuple[str, str, str], ...]
    """The examples added to the prompt, in order: ``(key, model_key, label)``."""
    n: int
    """Held-out labelled rows measured."""
    accuracy_before: float
    """The share of held-out rows the judge got right before aligning."""
    accuracy_before_low: float
    """The low end of ``accuracy_before``'s interval (the bootstrap's, or Wilson's; see the module)."""
    accuracy_before_high: float
    """The high end of ``accuracy_before``'s interval (the bootstrap's, or Wilson's; see the module)."""
    accuracy_after: float
    """The share of held-out rows the aligned judge got right."""
    accuracy_after_low: float
    """The low end of ``accuracy_after``'s interval (the bootstrap's, or Wilson's; see the module)."""
    accuracy_after_high: float
    """The high end of ``accuracy_after``'s interval (the bootstrap's, or Wilson's; see the module)."""
    kappa_before: float
    """Cohen's kappa between the person's verdicts and the judge's before aligning (NaN when undefined)."""
    kappa_before_low: float
    """The low end of ``kappa_before``'s bootstrap interval (NaN when the bootstrap cannot say)."""
    kappa_before_high: float
    """The high end of ``kappa_before``'s bootstrap interval (NaN when the bootstrap cannot say)."""
    kappa_after: float
    """Cohen's kappa between the person's verdicts and the aligned judge's (NaN when undefined)."""
    kappa_after_low: float
    """The low end of ``kappa_after``'s bootstrap interval (NaN when the bootstrap cannot say)."""
    kappa_after_high: float
    """The high end of ``kappa_after``'s bootstrap interval (NaN when the bootstrap cannot say)."""
    fixed: int
    """Held-out rows the judge got wrong before and right after."""
    broken: int
    """Held-out rows the judge got right before and wrong after."""
    p_value: float
    """The two-sided p-value of the exact McNemar test on ``fixed`` and ``broken``."""
    significant: bool
    """Accuracy rose and ``p_value < alpha``."""
    level: float
    """The confidence level of the intervals."""
    alpha: float
    """The significance level of the test."""
    rows: pd.DataFrame
    """The held-out rows: ``key, model_key, human, before, after`` (verdicts ``pass``, ``fail``
    or ``unrated``)."""

    def to_frame(self) -> pd.DataFrame:
        """The report as a table: one row each for ``before`` and ``after``.

        Returns:
            The columns ``n, accuracy, accuracy_low, accuracy_high, kappa, kappa_low, kappa_high``,
            indexed by ``judge`` (``before``, ``after``).
        """
        import pandas as pd

        columns = ["n", "accuracy", "accuracy_low", "accuracy_high", "kappa", "kappa_low", "kappa_high"]
        data = [
            [
                self.n,
                *(getattr(self, f"{m}_{when}{end}") for m in ("accuracy", "kappa") for end in ("", "_low", "_high")),
            ]
            for when in ("before", "after")
        ]
        return pd.DataFrame(data, index=pd.Index(["before", "after"], name="judge"), columns=columns)

    def __str__(self) -> str:
        pct = f"{self.level:.0%}"
        lines = [
            f"Aligned '{self.evaluator}' with {len(self.examples)} worked examples from {len(self.trained_on)} "
            f"test cases; measured on {self.n} labelled rows of {len(self.held_out)} held-out test cases.",
        ]
        for measure in ("accuracy", "kappa"):
            for when in ("before", "after"):
                value, low, high = (getattr(self, f"{measure}_{when}{end}") for end in ("", "_low", "_high"))
                lines.append(f"  {measure} {when}:".ljust(19) + _with_interval(value, low, high, pct))
        verdict = "significant" if self.significant else "not significant"
        what = "improvement" if self.accuracy_after > self.accuracy_before else "change"
        lines.append(
            f"Aligned, the judge is right on {self.fixed} rows it had wrong and wrong on {self.broken} it had "
            f"right; exact McNemar p = {self.p_value:.3g}: the {what} is {verdict} at the {self.alpha:g} level."
        )
        if self.note:
            lines.append(f"Note: {self.note}.")
        return "\n".join(lines)

    @property
    def note(self) -> str:
        """A caution when the held-out rows are too few for the accuracy to mean much.

        Too few is under :data:`MIN_HELD_OUT_ROWS`; ``""`` otherwise.
        """
        if self.n >= MIN_HELD_OUT_ROWS:
            return ""
        rows = "row" if self.n == 1 else "rows"
        return (
            f"measured on only {self.n} held-out labelled {rows} (fewer than {MIN_HELD_OUT_ROWS}), so the accuracy "
            "is not meaningful; label more test cases, or hold more of them out (holdout=)"
        )

    def __repr__(self) -> str:
        return (
            f"AlignReport({self.evaluator!r}, n={self.n}, accuracy {self.accuracy_before:.3f} -> "
            f"{self.accuracy_after:.3f}, kappa {self.kappa_before:.3f} -> {self.kappa_after:.3f}, "
            f"p={self.p_value:.3g})"
        )


def _with_interval(value: float, low: float, high: float, pct: str) -> str:
    if math.isnan(value):
        return "undefined (every verdict is the same one)"
    if math.isnan(low):
        return f"{value:.3f}"
    return f"{value:.3f} ({pct} interval {low:.3f} to {high:.3f})"


def align_report(
    name: str,
    test: pd.DataFrame,
    units: Sequence[tuple[str, ...]],
    held: Sequence[int],
    chosen: Sequence[tuple[str, str, str]],
    seed: int,
    level: float,
    alpha: float,
) -> AlignReport:
    """Build the :class:`AlignReport` of evaluator ``name`` from ``test``, its held-out labelled rows.

    ``test`` has the columns ``key, model_key, human, before, after``; verdicts are ``pass``,
    ``fail`` or :data:`UNRATED`.

    ``units`` are the labelled test cases by key, grouped (a case with its perturbed copies), and
    ``held`` the indexes of the units held out; the rest are the ones examples could come from.
    ``chosen`` are the examples added to the prompt, ``(key, model_key, label)``. ``seed`` draws
    the bootstrap resamples, ``level`` is the intervals' confidence level and ``alpha`` the
    significance level of the McNemar test.
    """
    human = test["human"].tolist()
    before, after = test["before"].tolist(), test["after"].tolist()
    right_before = np.array([h == b for h, b in zip(human, before, strict=True)])
    right_after = np.array([h == a for h, a in zip(human, after, strict=True)])
    fixed = int((~right_before & right_after).sum())
    broken = int((right_before & ~right_after).sum())
    p = mcnemar_exact(fixed, broken)
    acc_b, acc_a = float(right_before.mean()), float(right_after.mean())
    intervals = _bootstrap(test, seed, level)
    held_keys = sorted(key for i in held for key in units[i])
    trained = sorted(key for i, u in enumerate(units) if i not in set(held) for key in u)
    return AlignReport(
        evaluator=name,
        held_out=tuple(held_keys),
        trained_on=tuple(trained),
        examples=tuple(chosen),
        n=len(test),
        accuracy_before=acc_b,
        accuracy_before_low=intervals["accuracy_before"][0],
        accuracy_before_high=intervals["accuracy_before"][1],
        accuracy_after=acc_a,
        accuracy_after_low=intervals["accuracy_after"][0],
        accuracy_after_high=intervals["accuracy_after"][1],
        kappa_before=cohen_kappa(human, before),
        kappa_before_low=intervals["kappa_before"][0],
        kappa_before_high=intervals["kappa_before"][1],
        kappa_after=cohen_kappa(human, after),
        kappa_after_low=intervals["kappa_after"][0],
        kappa_after_high=intervals["kappa_after"][1],
        fixed=fixed,
        broken=broken,
        p_value=p,
        significant=bool(acc_a > acc_b and p < alpha),
        level=level,
        alpha=alpha,
        rows=test[["key", "model_key", "human", "before", "after"]].copy(),
    )


_VERDICTS = ("pass", "fail", UNRATED)


def _bootstrap(test: pd.DataFrame, seed: int, level: float) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals of accuracy and kappa, before and after, resampling the held-out test cases.

    Each case is reduced to counts of (human, judge) verdict pairs, so a resample is a matrix product.
    """
    keys = sorted(set(test["key"]))
    index = {k: i for i, k in enumerate(keys)}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(keys), size=(BOOTSTRAP_RESAMPLES, len(keys)))
    weights = np.zeros((BOOTSTRAP_RESAMPLES, len(keys)))
    np.add.at(weights, (np.arange(BOOTSTRAP_RESAMPLES)[:, None], draws), 1.0)
    out: dict[str, tuple[float, float]] = {}
    for when in ("before", "after"):
        counts = np.zeros((len(keys), 2, len(_VERDICTS)))  # case, human (pass, fail), judge
        for key, h, j in zip(test["key"], test["human"], test[when], strict=True):
            counts[index[key], PASS_FAIL.index(h), _VERDICTS.index(j)] += 1
        cells = (weights @ counts.reshape(len(keys), -1)).reshape(BOOTSTRAP_RESAMPLES, 2, len(_VERDICTS))
        total = cells.sum(axis=(1, 2))
        agree = cells[:, 0, 0] + cells[:, 1, 1]
        p_o = agree / total
        human_share = cells.sum(axis=2) / total[:, None]
        judge_share = cells.sum(axis=1)[:, :2] / total[:, None]
        p_e = (human_share * judge_share).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = np.where(p_e >= 1.0, np.nan, (p_o - p_e) / (1 - p_e))
        accuracy, kappa_interval = _percentiles(p_o, level), _percentiles(kappa, level)
        if accuracy[0] == accuracy[1]:  # every resample the same: the bootstrap cannot measure the uncertainty
            accuracy = wilson_interval(int((test["human"] == test[when]).sum()), len(test), level)
        if kappa_interval[0] == kappa_interval[1]:
            kappa_interval = (math.nan, math.nan)
        out[f"accuracy_{when}"], out[f"kappa_{when}"] = accuracy, kappa_interval
    return out


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float]:
    known = values[~np.isnan(values)]
    if known.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(known, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
