"""Robustness: how each model's scores move between test cases and their perturbed copies.

A perturbed test case names its original through the relationship ``perturbation_source`` (the
target is the original's key) and says how it was made in a category
``perturbed_by:<Perturbator>:<intensity>`` (older data: ``perturbed_by:<Perturbator>``).

:func:`perturbation_pairs` lines each perturbed row up with its original's row (same model,
evaluator and metric); :func:`robustness` summarizes the pairs per model, perturbator and
intensity. The *flip* rule is shared with the ``perturbation_flip`` problems of
:mod:`nbeval.results.reporting.insights`: a pair flips when both sides have a known pass/fail and they
differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbeval.errors import NotFound

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = [
    "PAIR_COLUMNS",
    "PERTURBED_BY",
    "ROBUSTNESS_COLUMNS",
    "UNKNOWN",
    "flipped",
    "parse_perturbed_by",
    "perturbation_pairs",
    "robustness",
]

#: The category prefix naming the perturbator (and intensity) a test case was made with.
PERTURBED_BY = "perturbed_by:"
#: Perturbator or intensity of a perturbed case whose category does not say.
UNKNOWN = "unknown"

#: Columns of :func:`perturbation_pairs`: the perturbed row (``key``, ``value``, ``passed``), its
#: original (``source_key``, ``source_value``, ``source_passed``), and the metric's ``direction``.
PAIR_COLUMNS = [
    "evaluator",
    "metric",
    "model_key",
    "key",
    "source_key",
    "perturbator",
    "intensity",
    "value",
    "source_value",
    "passed",
    "source_passed",
    "direction",
]

#: Columns of :func:`robustness`:
#:
#: * ``n``: perturbed rows whose own value and whose original's value are both known;
#: * ``flips``: pairs on different sides of the threshold (either way; needs a threshold);
#: * ``flips_down``: pairs whose original passed and whose perturbed case failed;
#: * ``flip_rate``: ``flips / n``;
#: * ``mean_delta``: the mean change from original to perturbed case, signed so that negative is
#:   worse: ``perturbed - original`` for higher-is-better metrics, ``original - perturbed`` for
#:   lower-is-better ones.
ROBUSTNESS_COLUMNS = [
    "evaluator",
    "metric",
    "model_key",
    "perturbator",
    "intensity",
    "n",
    "flips",
    "flips_down",
    "flip_rate",
    "mean_delta",
]


def parse_perturbed_by(categories: list[str]) -> tuple[str, str]:
    """Read ``(perturbator, intensity)`` from the first ``perturbed_by:`` category.

    :data:`UNKNOWN` for what it does not say (no such category, or one without an intensity).

    >>> parse_perturbed_by(["geo", "perturbed_by:TyposPerturbator:medium"])
    ('TyposPerturbator', 'medium')
    >>> parse_perturbed_by(["perturbed_by:TyposPerturbator"])
    ('TyposPerturbator', 'unknown')
    """
    for c in categories:
        if c.startswith(PERTURBED_BY):
            name, _, intensity = c[len(PERTURBED_BY) :].partition(":")
            return name.strip() or UNKNOWN, intensity.strip() or UNKNOWN
    return UNKNOWN, UNKNOWN


def _chosen_metrics(result: EvaluationResult, evaluator: str | None, metric: str | None) -> pd.DataFrame:
    """``evaluator`` / ``metric`` / ``direction`` of the metrics to look at (default: primary ones)."""
    m = result.metrics
    if evaluator is not None:
        result.check_evaluator(evaluator)
        m = m[m["evaluator"] == evaluator]
    if metric is None:
        m = m[m["primary"].astype(bool)]
    else:
        if not (m["metric"] == metric).any():
            msg = f"no metric '{metric}' in {f'evaluator {evaluator!r}' if evaluator else 'this result'}"
            raise NotFound(msg)
        m = m[m["metric"] == metric]
    return m[["evaluator", "metric", "direction"]]


def perturbation_pairs(
    result: EvaluationResult, evaluator: str | None = None, metric: str | None = None
) -> pd.DataFrame:
    """Each perturbed row beside its original's row, one line per pair (:data:`PAIR_COLUMNS`).

    Only rows that were scored (not skipped) with a known value on both sides form a pair;
    ``passed`` / ``source_passed`` may still be ``<NA>`` (no threshold). Metrics as in
    :func:`robustness`; pairs come in the order of the result's long table.
    """
    import pandas as pd

    sources: dict[str, str] = {}
    kinds: dict[str, tuple[str, str]] = {}
    for r in result.dataset.rows:
        src = r.perturbation_source
        if src:
            sources.setdefault(r.key, src)
            found = parse_perturbed_by(r.categories)
            if r.key not in kinds or kinds[r.key] == (UNKNOWN, UNKNOWN):
                kinds[r.key] = found
    chosen = _chosen_metrics(result, evaluator, metric)
    if not sources or chosen.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in PAIR_COLUMNS})
    s = result.scores
    s = s.loc[
        ~s["skipped"].astype(bool) & s["value"].notna(), ["evaluator", "metric", "model_key", "key", "value", "passed"]
    ]
    s = s.merge(chosen, on=["evaluator", "metric"])
    perturbed = s[s["key"].isin(list(sources))].copy()
    perturbed["source_key"] = perturbed["key"].map(sources)
    originals = s.drop(columns="direction").rename(
        columns={"key": "source_key", "value": "source_value", "passed": "source_passed"}
    )
    pairs = perturbed.merge(originals, on=["evaluator", "metric", "model_key", "source_key"], how="inner")
    pairs["perturbator"] = [kinds[k][0] for k in pairs["key"]]
    pairs["intensity"] = [kinds[k][1] for k in pairs["key"]]
    return pairs[PAIR_COLUMNS].reset_index(drop=True)


def flipped(pairs: pd.DataFrame) -> pd.Series:
    """Per pair: both sides have a known pass/fail and they differ (the flip rule)."""
    known = pairs["passed"].notna() & pairs["source_passed"].notna()
    return (
        (known & (pairs["passed"].astype("boolean") != pairs["source_passed"].astype("boolean")))
        .fillna(False)
        .astype(bool)
    )


def robustness(result: EvaluationResult, evaluator: str | None = None, metric: str | None = None) -> pd.DataFrame:
    """Flip rates per evaluator, metric, model, perturbator and intensity (:data:`ROBUSTNESS_COLUMNS`).

    ``metric`` defaults to each evaluator's primary metric; ``evaluator`` keeps one evaluator.
    A perturbed case whose categories do not name its perturbator is counted under
    :data:`UNKNOWN` (likewise its intensity). Sorted by ``flip_rate``, highest first (ties keep
    the order in which their pairs first appear in the long table). Empty when the result has no perturbed pairs.
    """
    import pandas as pd

    keys = ["evaluator", "metric", "model_key", "perturbator", "intensity"]
    pairs = perturbation_pairs(result, evaluator, metric)
    if pairs.empty:
        empty = {c: pd.Series(dtype=object) for c in keys}
        empty.update({c: pd.Series(dtype="int64") for c in ("n", "flips", "flips_down")})
        empty.update({c: pd.Series(dtype=float) for c in ("flip_rate", "mean_delta")})
        return pd.DataFrame(empty, columns=ROBUSTNESS_COLUMNS)
    flips = flipped(pairs)
    delta = pairs["value"].astype(float) - pairs["source_value"].astype(float)
    work = pairs[keys].assign(
        n=1,
        flips=flips.astype("int64"),
        flips_down=(flips & pairs["source_passed"].eq(True)).astype("int64"),
        delta=delta.where(pairs["direction"] != "lower", -delta),
    )
    out = (
        work.groupby(keys, sort=False, observed=True)
        .agg(
            n=("n", "sum"),
            flips=("flips", "sum"),
            flips_down=("flips_down", "sum"),
            mean_delta=("delta", "mean"),
        )
        .reset_index()
    )
    out["flip_rate"] = out["flips"] / out["n"]
    out = out.sort_values("flip_rate", ascending=False, kind="stable").reset_index(drop=True)
    return out[ROBUSTNESS_COLUMNS]
