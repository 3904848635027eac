"""Every embedding evaluator's values are unchanged by the faster embedding path (issue 19).

The golden file was written by ``golden/make_golden.py`` with the code as it was before the
path was reworked (sentence-transformers' own ``encode``, a second tokenisation for truncation,
per-row stacking); this test runs the same cases through the current code on the CPU.
"""

from __future__ import annotations

import json
import math

import pytest

from .golden import make_golden

GOLDEN = json.loads(make_golden.GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def now() -> dict[tuple[str, str, str], dict]:
    return {(r["key"], r["evaluator"], r["metric"]): r for r in make_golden.current_values()}


def test_golden_file_covers_every_embedding_evaluator() -> None:
    assert {r["evaluator"] for r in GOLDEN} == set(make_golden.NINE)
    assert any("truncated" in r["rationale"] for r in GOLDEN)  # the long case exercises truncation
    assert any("UMAP" in r["rationale"] for r in GOLDEN)


def test_same_rows(now: dict) -> None:
    assert set(now) == {(r["key"], r["evaluator"], r["metric"]) for r in GOLDEN}


@pytest.mark.parametrize("want", GOLDEN, ids=lambda r: f"{r['key']}-{r['evaluator']}-{r['metric']}")
def test_value_unchanged(now: dict, want: dict) -> None:
    got = now[(want["key"], want["evaluator"], want["metric"])]
    assert got["error"] == want["error"]
    if want["value"] is None:
        assert got["value"] is None
    else:
        assert got["value"] is not None and math.isclose(got["value"], want["value"], rel_tol=0, abs_tol=1e-6)
    assert got["rationale"] == want["rationale"]
