"""nbeval.perturb and the `nbeval perturb` / `nbeval perturbators` commands."""

from __future__ import annotations

import base64
import json
import random
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from nbeval.data.model import LlmDataset, Relationship, Test, TestCase, TestSuite
from nbeval.errors import PerturbationError
from nbeval.perturbation import PerturbationWarning, Perturbator, perturbed_count, unregister_perturbator

PROMPTS = [
    "What is the capital of France and why is it famous?",
    "Please explain how a bank loan works and what interest I should expect.",
    "Which platform does the early train to Lyon leave from on weekdays?",
]


def _suite() -> TestSuite:
    cases = [
        TestCase(
            prompt=p,
            expected_output=f"answer {i}",
            condition=f'"answer {i}"',
            categories=["faq"],
            guidelines=["be brief"],
            extra={"owner": "qa"},
        )
        for i, p in enumerate(PROMPTS)
    ]
    return TestSuite(name="faq", tests=[Test(test_cases=cases, documents=["docs/faq.pdf"])])


def _prompts(suite: TestSuite) -> list[str]:
    return [tc.prompt for tc in suite.test_cases]


def _load_suite(path: Path) -> TestSuite:
    suite = nbeval.load(path)
    assert isinstance(suite, TestSuite)
    return suite


def test_perturbed_cases_keep_the_answer_and_link_to_their_original() -> None:
    suite = _suite()
    out = nbeval.perturb(suite, ["typos", "base64"], intensity="medium", seed=3)
    originals, made = out.test_cases[:3], out.test_cases[3:]
    assert _prompts(TestSuite(tests=[Test(test_cases=originals)])) == PROMPTS  # originals first
    assert len(made) == 6 and perturbed_count(out) == 6
    assert out.tests[0].documents == ["docs/faq.pdf"]
    for i, case in enumerate(made):
        source = originals[i // 2]
        name = "TyposPerturbator" if i % 2 == 0 else "Base64Perturbator"
        assert case.prompt != source.prompt
        assert case.expected_output == source.expected_output and case.condition == source.condition
        assert case.guidelines == ["be brief"] and case.extra == {"owner": "qa"}
        extra = [] if i % 2 == 0 else ["encoding:base64"]
        assert case.categories == ["faq", f"perturbed_by:{name}:medium", *extra]
        assert case.relationships == [Relationship("perturbation_source", source.resolved_key)]
        assert case.key and case.key.startswith("tc-") and case.key == case.resolved_key != source.resolved_key
    assert suite.test_cases[0].categories == ["faq"]  # the input is left as it was


def test_a_seed_gives_the_same_suite_and_other_perturbators_do_not_change_it() -> None:
    a = nbeval.perturb(_suite(), "typos", seed=1).to_json()
    assert nbeval.perturb(_suite(), ["typos"], seed=1).to_json() == a
    assert nbeval.perturb(_suite(), "typos", seed=2).to_json() != a
    both = nbeval.perturb(_suite(), "case,typos", seed=1)
    typos = [tc.prompt for tc in both.test_cases if "perturbed_by:TyposPerturbator:low" in tc.categories]
    assert typos == [tc["prompt"] for tc in a["tests"][0]["test_cases"][3:]]


def test_without_originals_only_the_perturbed_cases_are_kept() -> None:
    out = nbeval.perturb(_suite(), ["case"], keep_originals=False)
    assert len(out.test_cases) == 3 and perturbed_count(out) == 3


def test_an_unchanged_prompt_makes_no_case_and_a_warning_says_so() -> None:
    suite = TestSuite(tests=[Test(test_cases=[TestCase(prompt="Hello there."), TestCase(prompt="It is late.")])])
    with pytest.warns(PerturbationWarning, match=r"1 perturbation\(s\) left the prompt .*ContractionsPerturbator ×1"):
        out = nbeval.perturb(suite, "contractions", intensity="high")
    assert _prompts(out) == ["Hello there.", "It is late.", "It's late."]


def test_perturbed_cases_are_not_perturbed_again() -> None:
    once = nbeval.perturb(_suite(), "case")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        twice = nbeval.perturb(once, "case")
    assert twice.to_json() == once.to_json()


def test_a_lab_a_dataset_and_a_path_give_their_test_cases(tmp_path: Path) -> None:
    lab = nbeval.demo_lab()
    keys = list(dict.fromkeys(r.key for r in lab.dataset.rows))
    from_lab = nbeval.perturb(lab, "typos", seed=0)
    made = "perturbed_by:TyposPerturbator:low"
    assert sorted(tc.resolved_key for tc in from_lab.test_cases if made not in tc.categories) == sorted(keys)
    for test in from_lab.tests:  # grouped by corpus; in each, the originals come first
        new = [made in tc.categories for tc in test.test_cases]
        assert new == sorted(new)
    assert perturbed_count(nbeval.perturb(lab.dataset, "typos")) == perturbed_count(from_lab)
    lab.to_json(tmp_path / "lab.json")
    assert nbeval.perturb(str(tmp_path / "lab.json"), "typos").to_json() == from_lab.to_json()
    _suite().save(tmp_path / "suite.json")
    assert nbeval.perturb(tmp_path / "suite.json", "case").to_json() == nbeval.perturb(_suite(), "case").to_json()


def test_unknown_ids_intensities_and_empty_input_are_one_clear_error() -> None:
    with pytest.raises(PerturbationError, match=r"no perturbator 'typo'; did you mean 'typos'\? choose from typos, "):
        nbeval.perturb(_suite(), "typo")
    with pytest.raises(PerturbationError, match="unknown intensity 'extreme'; choose from low, medium, high"):
        nbeval.perturb(_suite(), "typos", intensity="extreme")
    with pytest.raises(PerturbationError, match="no perturbators given"):
        nbeval.perturb(_suite(), ",")
    with pytest.raises(PerturbationError, match="given twice"):
        nbeval.perturb(_suite(), ["typos", "TyposPerturbator"])
    with pytest.raises(PerturbationError, match="no test cases to perturb"):
        nbeval.perturb(TestSuite(), "typos")


def test_the_encoding_guardrail_reads_the_perturbed_rows() -> None:
    out = nbeval.perturb(_suite(), ["base64", "base16", "leetspeak"], keep_originals=False)
    rows = []
    for row in out.to_dataset().rows:
        answer = row.expected_output or ""
        if "encoding:base64" in row.categories:
            row.actual_output = base64.b64encode(answer.encode()).decode()
        elif "encoding:base16" in row.categories:
            row.actual_output = answer.encode().hex()
        else:
            row.actual_output = answer
        rows.append(row)
    res = nbeval.evaluate(LlmDataset(rows), ["encoding_guardrail"], progress=False)
    passed = res.scores[res.scores["metric"] == "pass"].set_index("key")
    for row in rows:
        got = passed.loc[row.key]
        if "encoding:leetspeak" in row.categories:  # not an encoding the guardrail decodes
            assert bool(got["skipped"])
        else:  # decoded, then checked against the kept condition "answer N"
            assert not bool(got["skipped"]) and got["value"] == 1.0
            assert got["rationale"].startswith("decoded (")


@pytest.fixture
def shouting() -> Iterator[type[Perturbator]]:
    @nbeval.register_perturbator
    class ShoutPerturbator(Perturbator):
        description = "the prompt in capitals with an exclamation mark"

        def categories(self, intensity: str) -> list[str]:
            return ["style:shouting"]

        def apply(self, text: str, intensity: str, rng: random.Random) -> str:
            return text.upper() + "!"

    yield ShoutPerturbator
    unregister_perturbator("shout")


def test_a_registered_perturbator_works_in_python_and_on_the_command_line(shouting, tmp_path: Path, capsys) -> None:
    out = nbeval.perturb(_suite(), ["shout"], keep_originals=False)
    assert _prompts(out)[0] == PROMPTS[0].upper() + "!"
    assert out.test_cases[0].categories == ["faq", "perturbed_by:ShoutPerturbator:low", "style:shouting"]
    assert _prompts(nbeval.perturb(_suite(), [shouting], keep_originals=False)) == _prompts(out)
    _suite().save(tmp_path / "suite.json")
    assert (
        main(["perturb", str(tmp_path / "suite.json"), "-p", "ShoutPerturbator", "--out", str(tmp_path / "loud.json")])
        == 0
    )
    assert perturbed_count(_load_suite(tmp_path / "loud.json")) == 3
    assert main(["perturbators"]) == 0
    assert "shout" in capsys.readouterr().out


# -- the command line -------------------------------------------------------------------------


def test_cli_perturb_writes_a_suite_that_loads(tmp_path: Path, capsys) -> None:
    _suite().save(tmp_path / "suite.json")
    args = [
        "perturb",
        str(tmp_path / "suite.json"),
        "--perturbators",
        "typos,case",
        "--intensity",
        "medium",
        "--seed",
        "5",
        "--out",
        str(tmp_path / "out" / "suite2.json"),
    ]
    assert main(args) == 0
    assert "made 6 perturbed test case(s); 9 in all" in capsys.readouterr().out
    loaded = nbeval.load(tmp_path / "out" / "suite2.json")
    assert isinstance(loaded, TestSuite)
    want = nbeval.perturb(_suite(), "typos,case", intensity="medium", seed=5)
    assert loaded.to_json() == json.loads(json.dumps(want.to_json()))
    assert {c for tc in loaded.test_cases for c in tc.categories if c.startswith("perturbed_by")} == {
        "perturbed_by:TyposPerturbator:medium",
        "perturbed_by:CasePerturbator:medium",
    }
    assert main([*args[:-1], str(tmp_path / "again.json")]) == 0
    assert json.loads((tmp_path / "again.json").read_text()) == json.loads((tmp_path / "out/suite2.json").read_text())


def test_cli_perturb_seed_and_intensity_change_the_cases(tmp_path: Path) -> None:
    _suite().save(tmp_path / "suite.json")
    base = ["perturb", str(tmp_path / "suite.json"), "-p", "typos"]
    for name, extra in {
        "a": ["--seed", "1"],
        "b": ["--seed", "2"],
        "c": ["--seed", "1", "--intensity", "high"],
    }.items():
        assert main([*base, *extra, "--out", str(tmp_path / f"{name}.json")]) == 0
    a, b, c = (_load_suite(tmp_path / f"{n}.json") for n in "abc")
    assert _prompts(a) != _prompts(b) and _prompts(a) != _prompts(c)
    assert "perturbed_by:TyposPerturbator:high" in c.test_cases[-1].categories


def test_cli_perturb_no_originals(tmp_path: Path) -> None:
    _suite().save(tmp_path / "suite.json")
    assert (
        main(
            [
                "perturb",
                str(tmp_path / "suite.json"),
                "-p",
                "case",
                "--no-originals",
                "--out",
                str(tmp_path / "only.json"),
            ]
        )
        == 0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its links point at cases it does not hold
        only = _load_suite(tmp_path / "only.json")
    assert len(only.test_cases) == 3 and perturbed_count(only) == 3


def test_cli_perturb_errors_are_one_line(tmp_path: Path, capsys) -> None:
    _suite().save(tmp_path / "suite.json")
    assert main(["perturb", str(tmp_path / "suite.json"), "-p", "typo", "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nbeval: error: no perturbator 'typo'; did you mean 'typos'?") and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()
    assert main(["perturb", str(tmp_path / "suite.json"), "-p", "typos", "--out", str(tmp_path / "suite.json")]) == 2
    assert "would overwrite the input" in capsys.readouterr().err


def test_cli_perturbators_lists_ids_names_and_meaning(capsys) -> None:
    assert main(["perturbators"]) == 0
    text = capsys.readouterr().out
    assert "typos" in text and "TyposPerturbator" in text
    assert [line.split()[2:4] for line in text.splitlines() if line.split()[:1] == ["injection"]] == [
        ["changes", "meaning"]
    ]
    assert main(["perturbators", "--json"]) == 0
    listed = {p["id"]: p for p in json.loads(capsys.readouterr().out)}
    assert listed["word_order"]["changes_meaning"] is True and listed["case"]["changes_meaning"] is False
    assert listed["base64"]["name"] == "Base64Perturbator"
