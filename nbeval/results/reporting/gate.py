"""The CI gate: which kinds of problem it can fail on, and whether a result trips it.

One definition for every front end: ``nbeval run --fail-on-problems`` / ``--fail-on KINDS``
(exit status 1) and ``%nbeval run`` (a failed cell) both call :func:`check_gate` and print the
lines of its :class:`GateVerdict`.

The kinds, by their ``--fail-on`` name (:data:`GATE_KINDS`; see
:func:`nbeval.results.reporting.problems.problems` for what each problem means):

* ``threshold``: a model's aggregate of an evaluator's primary metric is on the wrong side of
  its threshold;
* ``unrated``: rows that could not be rated (neither passes nor fails);
* ``flip``: a perturbed test case passes where its original fails, or the reverse;
* ``errored``: rows whose call or scoring failed (the long table's ``error``);
* ``unmeasured``: a model and evaluator measured on none of its rows.

A run that measured nothing at all (no row of any model and evaluator has a value, or the data
had no row) fails every gate, whatever kinds were chosen, with a line of its own: a gate chosen
to watch, say, only thresholds has nothing to watch then, and passing would call it fine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from nbeval.errors import BadParameter

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = ["GATE_KINDS", "GateKind", "GateVerdict", "check_gate", "parse_gate_kinds"]


@dataclass(frozen=True)
class GateKind:
    """A kind of problem the gate can fail on, and how its line counts it."""

    kind: str
    """The problems' ``kind`` in :attr:`EvaluationResult.problems <nbeval.results.EvaluationResult.problems>`."""
    one: str
    """What one is called in the gate's line (``1 threshold breach``)."""
    many: str
    """What several are called (``3 threshold breaches``)."""
    note: str = ""
    """Said after the count, e.g. what the kind means."""
    counts_rows: bool = False
    """Count the rows the problems hold (their ``value``) rather than the problems."""


#: The kinds the gate can fail on, by their ``--fail-on`` name; ``--fail-on-problems`` is all of them.
GATE_KINDS: MappingProxyType[str, GateKind] = MappingProxyType(
    {
        "threshold": GateKind("threshold", "threshold breach", "threshold breaches"),
        "unrated": GateKind(
            "unrated", "unrated", "unrated", " (rows that could not be rated; they are not failed rows)"
        ),
        "flip": GateKind("perturbation_flip", "perturbation flip", "perturbation flips"),
        "errored": GateKind(
            "errored", "row errored", "rows errored", " (the call or scoring failed)", counts_rows=True
        ),
        "unmeasured": GateKind("unmeasured", "unmeasured", "unmeasured", " (a model and evaluator measured on no row)"),
    }
)

#: How many model and evaluator pairs an ``unmeasured`` line names.
_NAMED = 3


def parse_gate_kinds(text: str) -> tuple[str, ...]:
    """Parse ``--fail-on``'s value: comma-separated names of :data:`GATE_KINDS`, each once.

    An unknown name (or none at all) raises :class:`~nbeval.errors.BadParameter` (a ``ValueError``)
    saying which names there are.
    """
    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    unknown = [k for k in kinds if k not in GATE_KINDS]
    if unknown or not kinds:
        given = ", ".join(map(repr, unknown)) or repr(text)
        msg = f"unknown problem kind {given}; choose from {', '.join(GATE_KINDS)}"
        raise BadParameter(msg)
    return kinds


@dataclass(frozen=True)
class GateVerdict:
    """What the gate found: one line per kind present, split into the kinds it fails on and the kinds left out."""

    failing: tuple[str, ...]
    """Lines (``3 threshold breaches``) for the chosen kinds present: the gate trips when any."""
    ignored: tuple[str, ...]
    """Lines for the kinds present that were not chosen (listed, not failed on)."""
    chosen: tuple[str, ...]
    """The ``--fail-on`` names failed on, in :data:`GATE_KINDS` order."""

    @property
    def tripped(self) -> bool:
        """Whether the gate fails: a problem of a chosen kind is present."""
        return bool(self.failing)

    def lines(self) -> list[str]:
        """``failing: ...`` lines, then ``not failing on: ... (--fail-on KINDS)`` ones."""
        return [f"failing: {line}" for line in self.failing] + self.ignored_lines()

    def ignored_lines(self) -> list[str]:
        """The ``not failing on: ... (--fail-on KINDS)`` lines alone."""
        return [f"not failing on: {line} (--fail-on {','.join(self.chosen)})" for line in self.ignored]


def check_gate(result: EvaluationResult, fail_on: Literal[True] | Sequence[str]) -> GateVerdict:
    """The gate on ``result``: ``fail_on`` is ``True`` (every kind of :data:`GATE_KINDS`) or the names to fail on.

    Each kind present gets one line saying how many and, for ``errored`` and ``unmeasured``, why (the commonest errors;
    the models and evaluators that measured nothing).
    """
    chosen = set(GATE_KINDS) if fail_on is True else set(fail_on)
    unknown = chosen - set(GATE_KINDS)
    if unknown:
        msg = f"unknown problem kind {', '.join(map(repr, sorted(unknown)))}; choose from {', '.join(GATE_KINDS)}"
        raise BadParameter(msg)
    problems = result.problems
    failing: list[str] = []
    ignored: list[str] = []
    for name, k in GATE_KINDS.items():
        found = problems[problems["kind"] == k.kind]
        if found.empty:
            continue
        n = int(found["value"].sum()) if k.counts_rows else len(found)
        line = f"{n} {k.one if n == 1 else k.many}{k.note}{_why(result, name, found)}"
        (failing if name in chosen else ignored).append(line)
    nothing = _nothing_measured(result)
    if nothing:
        failing.append(nothing)
    return GateVerdict(tuple(failing), tuple(ignored), tuple(k for k in GATE_KINDS if k in chosen))


def _nothing_measured(result: EvaluationResult) -> str:
    """Return the line of a run that measured nothing at all.

    The line is empty ("") when some primary metric of some model and evaluator has a value (``n`` >
    0).
    """
    agg = result.aggregates
    primary = agg.loc[agg["primary"].astype(bool)]  # .loc: an empty object column is no list of names
    if bool((primary["n"] > 0).any()):
        return ""
    rows = int(primary["N"].max()) if len(primary) else 0
    what = "the data has no row" if rows == 0 else "no model and evaluator was measured on any row"
    return f"nothing was measured: {what} (this fails every gate, whatever --fail-on chooses)"


def _why(result: EvaluationResult, name: str, found: pd.DataFrame) -> str:
    """What a line adds after its count: the commonest errors, or what measured nothing."""
    if name == "errored":
        from nbeval.results.reporting.problems import errors_of_run

        return f": {errors_of_run(result)}"
    if name == "unmeasured":
        pairs = [f"{result.label(str(p.model_key))}: {p.evaluator}" for p in found.head(_NAMED).itertuples()]
        more = len(found) - _NAMED
        return ": " + ", ".join(pairs) + (f" and {more} more" if more > 0 else "")
    return ""
