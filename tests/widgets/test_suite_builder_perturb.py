"""The SuiteBuilder's Perturb action: perturbed copies of every case, as nbeval.perturb makes them."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

import nbeval
from nbeval.widgets import SuiteBuilder


def _builder() -> SuiteBuilder:
    b = SuiteBuilder()
    b.add_case(
        prompt="Which platform does the 8:15 to Lyon leave from?",
        expected_output="Platform 4.",
        condition='"platform 4"',
    )
    b.add_case(prompt="Can I take my dog on the train?", expected_output="Yes, on a lead.")
    return b


def test_the_perturb_button_adds_linked_copies_as_nbeval_perturb_makes_them() -> None:
    b = _builder()
    original = b.value
    b.perturbators.value = ("typos", "case")
    b.intensity.value = "medium"
    b.seed.value = 7
    b.perturb_button.click()
    expected = nbeval.perturb(original, ["typos", "case"], intensity="medium", seed=7)
    assert [c.prompt for c in b.value.test_cases] == [c.prompt for c in expected.test_cases]
    assert len(b.value.test_cases) == 6 and "added 4 perturbed cases" in b.message.value
    perturbed = b.value.test_cases[2]
    assert perturbed.expected_output == "Platform 4." and perturbed.condition == '"platform 4"'
    assert any(r.type == "perturbation_source" for r in perturbed.relationships)

    b.perturb_button.click()  # perturbed cases are not perturbed again; the same copies are not added twice
    assert len(b.value.test_cases) == 6 and "added 0 perturbed cases" in b.message.value


def test_perturb_without_a_perturbator_says_so() -> None:
    b = _builder()
    b.perturb_button.click()
    assert len(b.value.test_cases) == 2 and "choose at least one perturbator" in b.message.value
