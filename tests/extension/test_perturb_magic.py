"""``%nbeval perturb``: the CLI's perturb options in a magic, the suite bound to a name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbeval
from nbeval.data.model import TestSuite


def test_perturb_binds_the_same_suite_as_nbeval_perturb(shell: Any, tmp_path: Path) -> None:
    suite = TestSuite.from_dict(
        {
            "name": "s",
            "tests": [
                {
                    "test_cases": [
                        {
                            "prompt": "Which platform does the train to Lyon leave from?",
                            "expected_output": "Platform 4.",
                        },
                        {
                            "prompt": "Can I bring my bicycle on the night train?",
                            "expected_output": "Yes, with a reservation.",
                        },
                    ]
                }
            ],
        }
    )
    shell.ns["mine"] = suite
    out = tmp_path / "p.json"
    ran = shell.cell(f"%nbeval perturb mine -p typos,base64 --intensity high --seed 3 -o pert --out {out}")
    assert ran.success, ran.stdout + ran.stderr
    got = shell.ns["pert"]
    expected = nbeval.perturb(suite, "typos,base64", intensity="high", seed=3)
    assert [c.prompt for c in got.test_cases] == [c.prompt for c in expected.test_cases]
    assert len(got.test_cases) == 6  # two originals, two perturbations of each
    assert TestSuite.from_json(out).to_json() == got.to_json()
    assert sum("perturbed_by:Base64Perturbator:high" in c.categories for c in got.test_cases) == 2


def test_perturb_with_an_unknown_perturbator_is_one_line(shell: Any) -> None:
    ran = shell.cell("%nbeval perturb demo -p typoz")
    assert not ran.success
    lines = [ln for ln in (ran.stdout + ran.stderr).splitlines() if ln.strip()]
    assert len(lines) == 1 and "typoz" in lines[0]
