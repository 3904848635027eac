"""Benchmark of the arena fit (nbeval.results.statistics.arena): prints its timings and what it recovers.

    .venv/bin/python benchmarks/arena_fit_bench.py                        # 10 models x 500 cases, 1,000 resamples
    .venv/bin/python benchmarks/arena_fit_bench.py --cases 2000 --judges 3

Simulates a judge with a known first-slot bias (``--beta``) on ``--models`` models with evenly
spaced true strengths: every case asks every pair in both orders (10 models x 500 cases x 45
pairs x 2 orders = 45,000 verdicts), outcomes drawn from P(first wins) = σ(θ_first − θ_second + β)
(with ``--ties`` a share of them replaced by ties, which pulls the recovered ratings towards 1000).
It then times the fit alone, the fit with ``--resamples`` bootstrap refits (``fit_arena``), and
reading the three tables, the best of ``--repeat`` runs, and prints recovered against true
ratings. The target is fit + bootstrap + tables under 10 s on one core; exit 1 if it is missed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nbeval.results.statistics.arena import Verdict, elo_rating, fit_arena

TARGET_S = 10.0


def simulate(
    n_models: int, n_cases: int, n_judges: int, beta: float, ties: float, seed: int
) -> tuple[Any, list[Verdict]]:
    """True θ (mean zero) and the verdicts: every pair of every case in both orders, judges in turn."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(-1.5, 1.5, n_models)
    firsts, seconds = np.nonzero(~np.eye(n_models, dtype=bool))  # every ordered pair
    verdicts = []
    for case in range(n_cases):
        p = 1.0 / (1.0 + np.exp(-(theta[firsts] - theta[seconds] + beta)))
        draw, tie = rng.random(p.size), rng.random(p.size) < ties
        judge = f"judge-{case % n_judges}"
        for f, s, won, tied in zip(firsts, seconds, draw < p, tie, strict=True):
            outcome = "tie" if tied else ("first" if won else "second")
            verdicts.append(Verdict(f"case-{case}", f"model-{f}", f"model-{s}", outcome, judge))
    return theta, verdicts


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, out = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--judges", type=int, default=1)
    parser.add_argument("--beta", type=float, default=0.5, help="the judges' true first-slot log-odds")
    parser.add_argument("--ties", type=float, default=0.0, help="share of verdicts turned into ties")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    theta, verdicts = simulate(args.models, args.cases, args.judges, args.beta, args.ties, args.seed)
    print(
        f"{len(verdicts):,} verdicts: {args.models} models x {args.cases} cases x both orders, {args.judges} judge(s)"
    )
    import pandas  # noqa: F401  (imported once here, so the table timings do not include it)

    fit_only, _ = best_of(args.repeat, lambda: fit_arena(verdicts, n_boot=0))
    with_boot, fit = best_of(args.repeat, lambda: fit_arena(verdicts, n_boot=args.resamples, seed=0))
    tables, (arena, pairs, bias) = best_of(
        args.repeat, lambda: (fit.arena_table(), fit.head_to_head_table(), fit.position_bias_table())
    )
    total = with_boot + tables
    print(f"{'fit alone':<40}{fit_only:>8.3f} s")
    print(f"{f'fit + {args.resamples:,} bootstrap refits':<40}{with_boot:>8.3f} s")
    print(f"{'three tables':<40}{tables:>8.3f} s")
    print(f"{'total (target < 10 s)':<40}{total:>8.3f} s")

    true_rating = dict(zip([f"model-{m}" for m in range(args.models)], elo_rating(theta), strict=True))
    print(f"\n{'model':<10}{'true':>8}{'rating':>9}{'lo':>9}{'hi':>9}  inside")
    for row in arena.itertuples():
        truth = true_rating[row.model_key]
        inside = "yes" if row.rating_lo <= truth <= row.rating_hi else "no"
        print(f"{row.model_key:<10}{truth:>8.1f}{row.rating:>9.1f}{row.rating_lo:>9.1f}{row.rating_hi:>9.1f}  {inside}")
    for row in bias.itertuples():
        print(
            f"{row.judge}: true beta {args.beta:.3f}, fitted {row.beta:.3f} [{row.beta_lo:.3f}, {row.beta_hi:.3f}], "
            f"first-slot rate {row.first_slot_rate:.3f}, consistency {row.consistency:.3f}"
        )
    print(
        f"{len(pairs)} head-to-head rows; first row: "
        f"{pairs.iloc[0].model_a} v {pairs.iloc[0].model_b} p={pairs.iloc[0].p_a_beats_b:.3f}"
    )
    if total >= TARGET_S:
        print(f"MISSED: {total:.2f} s >= {TARGET_S} s")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
