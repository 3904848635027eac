"""What every detector returns: a :class:`Finding`, and helpers all detectors share.

The helpers mask digits, keep one finding per overlapping region and write summaries without values.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Finding", "label", "mask_digits", "resolve_overlaps", "summary"]


@dataclass(frozen=True)
class Finding:
    """One detected item.

    Its kind, its span in the text, a masked rendering of it and, where the detector knows it, the
    country it belongs to (``"GB"`` for a British phone number).
    """

    kind: str
    start: int
    end: int
    redacted: str
    locale: str | None = None


def label(finding: Finding) -> str:
    """The kind with its locale when known, e.g. ``phone (GB)``; never the value."""
    return f"{finding.kind} ({finding.locale})" if finding.locale else finding.kind


def mask_digits(value: str, keep_last: int) -> str:
    """Replace every digit but the last ``keep_last`` with ``*``, keeping the layout."""
    remaining = sum(c.isdigit() for c in value)
    out = []
    for c in value:
        if c.isdigit():
            remaining -= 1
            out.append(c if remaining < keep_last else "*")
        else:
            out.append(c)
    return "".join(out)


def resolve_overlaps(findings: Iterable[Finding], priority: tuple[str, ...]) -> list[Finding]:
    """Keep one finding per overlapping region.

    Earlier kinds in ``priority`` are preferred, then longer spans; the result is sorted by
    position.
    """
    rank = {k: i for i, k in enumerate(priority)}
    ordered = sorted(findings, key=lambda f: (rank.get(f.kind, len(rank)), f.start - f.end))
    # Kept spans never overlap, so sorted by start they are sorted by end too: each new
    # candidate only needs comparing with its two neighbours (found by bisection).
    starts: list[int] = []
    kept: list[Finding] = []
    for f in ordered:
        i = bisect.bisect_right(starts, f.start)
        if i > 0 and kept[i - 1].end > f.start:
            continue
        if i < len(kept) and kept[i].start < f.end:
            continue
        starts.insert(i, f.start)
        kept.insert(i, f)
    return kept


def summary(findings: Iterable[Finding]) -> str:
    """Summarise findings in one line: each kind found and how often, never the values themselves.

    For example ``found: credit_card (1), email (2)``.
    """
    counts = Counter(f.kind for f in findings)
    if not counts:
        return "found: nothing"
    return "found: " + ", ".join(f"{kind} ({n})" for kind, n in sorted(counts.items()))
