"""The diff's CI gate.

It serves ``nbeval diff --fail-on-regression``, ``%nbeval diff --fail-on-regression`` and
:meth:`RunDiff.gate() <nbeval.results.runs.diff.RunDiff.gate>`.

A diff's tests are paired, so a comparison with no pair has no test and no regression: a gate
that only asked "is there a regression?" passed two runs on different datasets, an after run
whose every judge call failed, and a model that answered none of its 30 rows. The gate also fails,
one line per kind, naming the evaluator and model (from :attr:`RunDiff.coverage`):

* *nothing was compared*: no test case was measured in both runs;
* *unmeasured after*: a model and evaluator measured before, on no row after (its rows errored,
  were skipped, or are not in the after run);
* *unmeasured before*: one the before run's gate calls unmeasured, measured after: nothing to
  compare with (one new in the after run is no failure: there was nothing to regress from);
* *measured in neither run*: one the before run has, measured in neither, that a run's gate calls
  unmeasured (not every row lacking an optional input: :func:`nbeval.results.reporting.problems.problems`);
* *few shared rows*: the test cases measured in both runs are fewer than ``min_shared`` (default
  :data:`MIN_SHARED`, a half) of the larger of the two runs' measured rows. The larger, so that
  a run whose answers mostly failed cannot hide behind its few measured rows; a suite that grew
  from 30 to 40 cases shares 75% and passes, one that tripled needs a lower ``--min-shared``.

Scoring code only: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nbeval.errors import BadParameter

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results.runs.diff import RunDiff

__all__ = ["DIFF_GATE_KINDS", "MIN_SHARED", "DiffVerdict", "check_diff_gate", "check_min_shared", "coverage_lines"]

#: The smallest share of the larger run's measured rows that must be measured in both runs.
MIN_SHARED = 0.5
#: How many model and evaluator pairs a line names.
_NAMED = 3


def check_min_shared(min_shared: Any) -> float:
    """``min_shared`` as a float, or :class:`~nbeval.errors.BadParameter` saying what it is."""
    ok = isinstance(min_shared, (int, float)) and not isinstance(min_shared, bool)
    if not ok or not 0 <= min_shared <= 1:  # NaN fails the comparison too
        msg = (
            "min_shared is the smallest share of each run's measured rows that both runs must share, "
            f"a number from 0 to 1 (e.g. 0.5); got {min_shared!r}"
        )
        raise BadParameter(msg)
    return float(min_shared)


@dataclass(frozen=True)
class DiffVerdict:
    """What the diff's gate found: one line per kind that trips it."""

    failing: tuple[str, ...]
    """Lines such as ``nothing was compared: ...``; the gate trips when there is any."""
    min_shared: float = MIN_SHARED
    """The share of shared rows it asked for."""
    found: tuple[tuple[str, str, str], ...] = ()
    """What tripped it, machine-readable: ``(kind, model_key, evaluator)``, ``kind`` one of
    :data:`DIFF_GATE_KINDS` (``("nothing compared", "", "")`` for the whole diff)."""

    @property
    def tripped(self) -> bool:
        """Whether the gate fails."""
        return bool(self.failing)

    def lines(self) -> list[str]:
        """``failing: ...`` lines, as the command line prints them."""
        return [f"failing: {line}" for line in self.failing]


def _named(part: pd.DataFrame, detail: Any) -> str:
    """Up to :data:`_NAMED` pairs of ``part``, each with ``detail(row)``, and how many more."""
    shown = [f"{r.model_key}: {r.evaluator} ({detail(r)})" for r in part.head(_NAMED).itertuples(index=False)]
    more = len(part) - _NAMED
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _after(r: Any) -> str:
    return f"0 of {r.N_after} after" if r.N_after else "not in the after run"


#: The kinds of :attr:`DiffVerdict.found`, in the order the gate's lines come.
DIFF_GATE_KINDS = (
    "nothing compared",
    "unmeasured after",
    "unmeasured before",
    "measured in neither run",
    "few shared rows",
    "regression",
)


def _coverage_parts(c: pd.DataFrame, share: float) -> list[tuple[str, str, pd.DataFrame, Any]]:
    """Describe the coverage rows of every kind but ``nothing compared`` and ``regression``.

    Each kind as (kind, its words, the coverage rows of that kind, what a row's parentheses say).
    """
    b, a = c["rows_before"] > 0, c["rows_after"] > 0
    kinds = [
        (
            "unmeasured after",
            "unmeasured after (measured before, on no row after)",
            b & ~a,
            lambda r: f"measured on {r.rows_before:,} rows before, {_after(r)}",
        ),
        (
            "unmeasured before",
            "unmeasured before (nothing to compare the after run's rows with)",
            ~b & a & c["unmeasured_before"],
            lambda r: f"0 of {r.N_before} rows measured before, {r.rows_after:,} after",
        ),
        (
            "measured in neither run",
            "measured in neither run",
            ~b & ~a & (c["N_before"] > 0) & (c["unmeasured_before"] | c["unmeasured_after"]),
            lambda r: f"0 of {r.N_before} rows before, 0 of {r.N_after} after",
        ),
        (
            "few shared rows",
            f"with few shared rows (measured in both runs: below {share:.0%} of the rows a run measured; --min-shared)",
            b & a & (c["share"] < share),
            lambda r: (
                f"shared: {r.shared:,} of the {r.rows_before:,} rows measured before, "
                f"{r.shared:,} of the {r.rows_after:,} after: "
                f"{math.floor(r.share * 100 + 1e-9):.0f}%"  # floored: 49.9% is not shown as 50%
            ),
        ),
    ]
    return [(kind, words, c[mask.to_numpy(dtype=bool)], detail) for kind, words, mask, detail in kinds]


def _nothing_compared(c: pd.DataFrame) -> str:
    """The line of a diff that compared no row, or ""."""
    if int(c["shared"].sum()) > 0:
        return ""
    return (
        f"nothing was compared: 0 rows measured in both runs ({int(c['rows_before'].sum()):,} before, "
        f"{int(c['rows_after'].sum()):,} after); are they runs of the same dataset, and did their calls succeed?"
    )


def coverage_lines(d: RunDiff, min_shared: float | None = None) -> list[str]:
    """Say what ``d`` did not compare (every kind but regressions), at ``min_shared``.

    ``min_shared`` is ``d.min_shared`` when not given; the lines are empty when the diff compared
    enough.
    """
    share = check_min_shared(d.min_shared if min_shared is None else min_shared)
    nothing = _nothing_compared(d.coverage)
    lines = [nothing] if nothing else []
    for _, words, part, detail in _coverage_parts(d.coverage, share):
        if len(part):
            lines.append(f"{len(part)} {words}: {_named(part, detail)}")
    return lines


def check_diff_gate(d: RunDiff, min_shared: float | None = None) -> DiffVerdict:
    """The gate on ``d``: :func:`coverage_lines`, then the regressions, if any."""
    share = check_min_shared(d.min_shared if min_shared is None else min_shared)
    lines = coverage_lines(d, share)
    found = [("nothing compared", "", "")] if _nothing_compared(d.coverage) else []
    for kind, _, part, _ in _coverage_parts(d.coverage, share):
        found += [(kind, str(m), str(e)) for m, e in zip(part["model_key"], part["evaluator"], strict=True)]
    worse = d.regressions
    if len(worse):
        named = [f"{r.evaluator}.{r.metric} · {r.model_key}" for r in worse.head(_NAMED).itertuples(index=False)]
        more = f" and {len(worse) - _NAMED} more" if len(worse) > _NAMED else ""
        n = len(worse)
        lines.append(
            f"a regression was found ({n} comparison{'s' if n > 1 else ''} got worse): {', '.join(named)}{more}"
        )
        found += [("regression", str(m), str(e)) for m, e in zip(worse["model_key"], worse["evaluator"], strict=True)]
    return DiffVerdict(tuple(lines), share, tuple(found))
