"""`nbeval evaluators --json` is standard JSON: unbounded ranges are null, never Infinity."""

from __future__ import annotations

import json
import math

import pytest

import nbeval
from nbeval.cli import main


def _refuse(constant: str) -> None:
    raise ValueError(f"non-standard JSON constant {constant}")


def test_evaluators_json_is_standard(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluators", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out, parse_constant=_refuse)
    by_id = {e["id"]: e for e in listed}
    # every metric whose declared upper bound is unbounded shows null there, the others their number
    unbounded = 0
    for spec in nbeval.list_evaluators():
        for m, shown in zip(spec.metrics, by_id[spec.id]["metrics"], strict=True):
            assert shown["range"] == [m.lo if math.isfinite(m.lo) else None, m.hi if math.isfinite(m.hi) else None]
            unbounded += not math.isfinite(m.hi)
    assert unbounded > 0  # the catalogue has such metrics (counts such as step edits)
