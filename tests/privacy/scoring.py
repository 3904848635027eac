"""Recall and false alarms of a detector on the privacy corpus; shared by the tests and by
``benchmarks/detector_quality.py``.

A detector is any function from a text to ``(start, end, kind)`` spans, so nbeval and its peers
are scored the same way: a positive case is *found* when some span covers part of its labelled
value, and a hard negative is a *false alarm* when any span is reported in it (by the detector
of its ``side`` only, when it has one). For nbeval the kind must also be the labelled one
(``right_kind``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from tests.privacy.corpus import Case

__all__ = ["Detector", "Tally", "nbeval_detectors", "score"]

Span = tuple[int, int, str]
Detector = Callable[[str], Iterable[Span]]


@dataclass
class Tally:
    """Counts for one group of cases (a kind, a family or a whole group)."""

    cases: int = 0
    found: int = 0
    right_kind: int = 0
    false_alarms: int = 0

    @property
    def recall(self) -> float:
        return self.found / self.cases if self.cases else 1.0


@dataclass
class Report:
    """Tallies per group (``pii``, ``secret``, ``negative``), per labelled kind (``kinds``; the
    negatives under ``negative: <family>``) and per family of positives (``families``, finer
    than kinds: ``card (UATP)``, ``jwt (unsigned)``...)."""

    groups: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    kinds: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    families: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    alarms: list[tuple[Case, list[Span]]] = field(default_factory=list)
    misses: list[tuple[Case, list[Span]]] = field(default_factory=list)
    secrets_as_pii: list[Case] = field(default_factory=list)


def _overlaps(span: tuple[int, int], found: Sequence[Span]) -> list[Span]:
    return [f for f in found if f[0] < span[1] and span[0] < f[1]]


def score(cases: Iterable[Case], pii: Detector | None, secrets: Detector | None) -> Report:
    """Score ``pii`` on the PII cases, ``secrets`` on the secret cases, and both on the hard
    negatives (a tool missing one side is scored on the other only)."""
    report = Report()
    for case in cases:
        if case.group == "negative":
            sides = {"pii": (pii,), "secret": (secrets,)}.get(case.side or "", (pii, secrets))
            found = [s for d in sides if d is not None for s in d(case.text)]
            for tally in (report.groups["negative"], report.kinds[f"negative: {case.family}"]):
                tally.cases += 1
                tally.false_alarms += bool(found)
            if found:
                report.alarms.append((case, found))
            continue
        detector = pii if case.group == "pii" else secrets
        if detector is None:
            continue
        span = case.span
        assert span is not None and case.kind is not None
        hits = _overlaps(span, list(detector(case.text)))
        for tally in (report.groups[case.group], report.kinds[case.kind], report.families[case.family]):
            tally.cases += 1
            tally.found += bool(hits)
            tally.right_kind += any(h[2] == case.kind for h in hits)
        if not hits:
            report.misses.append((case, hits))
        if case.group == "secret" and pii is not None and _overlaps(span, list(pii(case.text))):
            report.secrets_as_pii.append(case)
    return report


def nbeval_detectors() -> tuple[Detector, Detector]:
    """nbeval's ``find_pii`` and ``find_secrets`` with their default settings, as detectors."""
    from nbeval.detectors import find_pii, find_secrets

    def pii(text: str) -> list[Span]:
        return [(f.start, f.end, f.kind) for f in find_pii(text)]

    def secrets(text: str) -> list[Span]:
        return [(f.start, f.end, f.kind) for f in find_secrets(text)]

    return pii, secrets
