"""`nbeval evaluators --family` lists one family; `nbeval demo --no-embedding` leaves the embedding
evaluators out (and the default keeps them in)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from nbeval.demo import demo_evaluators


def _listed_ids(text: str) -> set[str]:
    """The evaluator ids in `nbeval evaluators`' text listing (lines "  <id>   inputs: ...")."""
    return set(re.findall(r"^  (\S+) +inputs:", text, re.MULTILINE))


@pytest.mark.parametrize("family", ["deterministic", "embedding", "judge"])
def test_family_lists_exactly_that_family(family: str, capsys: pytest.CaptureFixture[str]) -> None:
    expected = {s.id for s in nbeval.list_evaluators(family)}
    everything = {s.id for s in nbeval.list_evaluators()}
    assert expected and expected != everything
    assert main(["evaluators", "--family", family]) == 0
    out = capsys.readouterr().out
    assert _listed_ids(out) == expected
    assert re.findall(r"^\[(\w+)\]$", out, re.MULTILINE) == [family]  # one family heading
    assert main(["evaluators", "--family", family, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {e["id"] for e in listed} == expected and {e["family"] for e in listed} == {family}
    assert main(["evaluators"]) == 0  # without it: every family
    assert _listed_ids(capsys.readouterr().out) == everything


def _run_evaluators(out: Path) -> set[str]:
    return set(nbeval.load_result(out).evaluators)


@pytest.mark.slow
def test_demo_no_embedding_leaves_the_embedding_evaluators_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    embedding = {s.id for s in nbeval.list_evaluators("embedding")}
    assert main(["demo", "--no-embedding", "--no-progress", "--out", str(tmp_path / "fast")]) == 0
    fast = _run_evaluators(tmp_path / "fast")
    assert fast == set(demo_evaluators(include_embedding=False)) and not fast & embedding
    assert capsys.readouterr().out.splitlines()[0].startswith(f"nbeval demo: {len(fast)} evaluators")
    assert main(["demo", "--no-progress", "--out", str(tmp_path / "full")]) == 0
    full = _run_evaluators(tmp_path / "full")
    assert full == fast | embedding  # the default adds every embedding evaluator, nothing else
    assert capsys.readouterr().out.splitlines()[0].startswith(f"nbeval demo: {len(full)} evaluators")
