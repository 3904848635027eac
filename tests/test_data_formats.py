"""Formats as other tools publish them (issue 27): H2O Eval Studio suites that say what an answer
must contain as ``constraints`` (and give a bare ``NaN`` as an expected output), and agent
evaluation sets that name their guidelines (MLflow 3's mapping)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import nbeval
from nbeval.data.conditions import Text, parse_condition
from nbeval.data.fields import DataWarning
from nbeval.data.model import LlmDataset, Row, TestCase, TestLab, TestSuite
from nbeval.errors import DataError

# The shape of the suites published in h2oai/h2o-evals (catalog/*/JSON_files/token_presence_*.json,
# multi_choice_*.json, question_type_*.json): "constraints" instead of "condition", a regular
# expression written "REGEXP:...", [""] for "no constraint", and NaN for a missing expected output.
EVAL_STUDIO_SUITE = r"""{
    "tests": [
        {
            "key": "521afa23",
            "documents": ["https://example.com/h2o-evals/Banking_Act.pdf"],
            "test_cases": [
                {
                    "key": "a09e7a82",
                    "prompt": "Respond to the following question.\n\nQuestion: What is the short title of the Act?\n",
                    "categories": ["simple-questions"],
                    "constraints": ["Banking Act", "No. 30 of 1988", "January 1", "1989"],
                    "expected_output": "It is \"Banking Act, No. 30 of 1988\", in force from January 1, 1989."
                },
                {
                    "key": "0aa06fcc",
                    "prompt": "Respond with a single letter.\nA. Yes\nB. No\nC. Only with approval\n",
                    "categories": ["question-answering"],
                    "constraints": ["REGEXP:.*(C|C\\.).*"],
                    "expected_output": NaN
                },
                {
                    "key": "ca78c394",
                    "prompt": "Who decides the limit?\n",
                    "categories": ["simple-questions"],
                    "constraints": ["Monetary", "Board", "say \"yes\" \\ no"],
                    "expected_output": NaN
                },
                {
                    "key": "5b7d2f70",
                    "prompt": "What happens when a licensed bank becomes insolvent?\n",
                    "categories": ["simple-questions"],
                    "condition": "\"vest\" OR \"vests\"",
                    "constraints": ["Monetary Board", ""],
                    "expected_output": "The Monetary Board may vest the business in a new bank."
                }
            ]
        }
    ]
}"""

ANSWERS = {  # (passes, fails) per test case: the first answer satisfies every constraint
    "a09e7a82": (
        "It is the Banking Act, No. 30 of 1988, in force from January 1, 1989.",
        "It is the Banking Act, in force from January 1, 1989.",
    ),
    "0aa06fcc": ("C.", "B"),
    "ca78c394": ('The Monetary Board; they say "yes" \\ no.', "The Monetary Board."),
    "5b7d2f70": ("The Monetary Board may vest it in a new bank.", "The Board may vest it in a new bank."),
}


@pytest.fixture
def suite_file(tmp_path: Path) -> Path:
    path = tmp_path / "token_presence_suite.json"
    path.write_text(EVAL_STUDIO_SUITE, encoding="utf-8")
    return path


def _load(path: Path) -> TestSuite:
    with pytest.warns(DataWarning, match="NaN"):
        return TestSuite.from_json(str(path))


def test_constraints_are_checked_by_text_matching_on_every_case(suite_file: Path) -> None:
    suite = _load(suite_file)
    rows = []
    for case in suite.test_cases:
        assert case.key is not None
        good, bad = ANSWERS[case.key]
        for model, answer in (("good", good), ("bad", bad)):
            rows.append(Row.from_test_case(case, model_key=model).with_answer(actual_output=answer))
    result = nbeval.evaluate(LlmDataset(rows), ["text_matching"], progress=False)
    s = result.scores[result.scores["metric"] == "pass"]
    assert not s["skipped"].any(), s.loc[s["skipped"], "skip_reason"].tolist()  # none skipped
    passed = {(k, m): v for k, m, v in zip(s["key"].astype(str), s["model_key"].astype(str), s["value"], strict=True)}
    assert passed == {**{(k, "good"): 1.0 for k in ANSWERS}, **{(k, "bad"): 0.0 for k in ANSWERS}}


def test_condition_and_constraints_combine_with_and(suite_file: Path) -> None:
    cases = {c.key: c for c in _load(suite_file).test_cases}
    assert cases["a09e7a82"].output_condition == '"Banking Act" AND "No. 30 of 1988" AND "January 1" AND "1989"'
    assert cases["0aa06fcc"].output_condition == r'regexp(".*(C|C\.).*")'
    # quotes and backslashes in a token are escaped for the condition language and read back as given
    condition = cases["ca78c394"].output_condition
    assert condition is not None
    tokens = [leaf.value if isinstance(leaf, Text) else leaf for leaf in parse_condition(condition).leaves()]
    assert tokens == ["Monetary", "Board", 'say "yes" \\ no']
    # both given: (condition) AND constraints; the blank constraint is no constraint
    assert cases["5b7d2f70"].output_condition == '("vest" OR "vests") AND "Monetary Board"'
    assert cases["5b7d2f70"].condition == '"vest" OR "vests"'  # the condition itself is as given
    assert cases["5b7d2f70"].constraints == ["Monetary Board"]


def test_constraints_are_written_back_unchanged(suite_file: Path, tmp_path: Path) -> None:
    original = {c["key"]: c for c in json.loads(EVAL_STUDIO_SUITE.replace("NaN", "null"))["tests"][0]["test_cases"]}
    suite = _load(suite_file)
    suite.save(tmp_path / "out.json")
    saved = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["tests"][0]["test_cases"]
    assert {c["key"]: c["constraints"] for c in saved} == {k: c["constraints"] for k, c in original.items()}
    assert {c["key"]: c["condition"] for c in saved} == {k: c.get("condition") for k, c in original.items()}
    again = TestSuite.from_json(str(tmp_path / "out.json"))
    assert [c.output_condition for c in again.test_cases] == [c.output_condition for c in suite.test_cases]


def test_nan_expected_output_loads_as_missing_with_one_warning_per_file(suite_file: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        suite = TestSuite.from_json(str(suite_file))
    nan_warnings = [w for w in caught if issubclass(w.category, DataWarning) and "NaN" in str(w.message)]
    assert len(nan_warnings) == 1
    message = str(nan_warnings[0].message)
    assert str(suite_file) in message and "2 test cases" in message
    assert [c.expected_output for c in suite.test_cases] == [
        suite.test_cases[0].expected_output,
        None,
        None,
        suite.test_cases[3].expected_output,
    ]


def test_nan_expected_output_in_rows_and_labs_is_reported_too(tmp_path: Path) -> None:
    rows = tmp_path / "rows.json"
    rows.write_text(
        '[{"input": "q1", "expected_output": NaN}, {"input": "q2", "expected_output": "a"}]', encoding="utf-8"
    )
    with pytest.warns(DataWarning, match=r"rows\.json: 1 row gives NaN as the expected output"):
        ds = LlmDataset.from_json(str(rows))
    assert ds[0].expected_output is None
    lab = tmp_path / "lab.json"
    lab.write_text(
        '{"dataset": {"inputs": [{"input": "q", "expected_output": NaN, "model_key": "m"}]}, "models": [{"key": "m"}]}',
        encoding="utf-8",
    )
    with pytest.warns(DataWarning, match="1 row gives NaN"):
        TestLab.from_json(str(lab))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file without NaN says nothing
        LlmDataset.from_json('[{"input": "q", "expected_output": null}]')


def test_constraints_in_rows_fold_into_the_condition_once(tmp_path: Path) -> None:
    # test cases given as a list of rows (the "prompt"/"condition" style) carry constraints too
    ds = LlmDataset.from_json(
        [{"key": "k", "prompt": "q", "condition": '"x" OR "y"', "constraints": ["a", "b"], "actual_output": "x a b"}]
    )
    assert ds[0].output_condition == '("x" OR "y") AND "a" AND "b"'
    path = tmp_path / "rows.json"
    ds.to_json(path)
    back = LlmDataset.from_json(str(path))  # read back: the constraints are not added a second time
    assert back[0].output_condition == ds[0].output_condition and back[0].extra["constraints"] == ["a", "b"]
    csv = tmp_path / "rows.csv"
    ds.to_csv(csv)
    assert LlmDataset.from_csv(csv)[0].output_condition == ds[0].output_condition


def test_a_bad_constraint_fails_at_load_naming_the_case() -> None:
    bad = {"tests": [{"test_cases": [{"key": "k1", "prompt": "q", "constraints": ["ok", "REGEXP:(unclosed"]}]}]}
    with pytest.raises(DataError) as err:
        TestSuite.from_dict(bad, source="suite.json")
    assert (err.value.source, err.value.row, err.value.field) == (
        "suite.json",
        "tests[1].test_cases[1]",
        "constraints[1]",
    )
    with pytest.raises(DataError, match="list of strings"):
        TestSuite.from_dict({"tests": [{"test_cases": [{"prompt": "q", "constraints": [1, 2]}]}]})


def test_a_keyless_case_keys_on_its_constraints() -> None:
    a = TestCase("q", extra={"constraints": ["a"]})
    b = TestCase("q", extra={"constraints": ["b"]})
    assert a.resolved_key != b.resolved_key
    assert Row.from_test_case(a).key == a.resolved_key


# -- named guidelines --------------------------------------------------------------------------


NAMED = {"tone": ["Be polite.", "No slang."], "facts": ["Cite the policy number."]}


def test_named_guidelines_keep_their_names_and_round_trip(tmp_path: Path) -> None:
    ds = LlmDataset.from_json([{"request": "q", "response": "a", "guidelines": NAMED}])
    row = ds[0]
    assert row.named_guidelines == NAMED
    assert row.guidelines == ["Be polite.", "No slang.", "Cite the policy number."]  # every one, in order
    assert row.to_json()["guidelines"] == NAMED
    for write, read in ((ds.to_json, LlmDataset.from_json), (ds.to_csv, LlmDataset.from_csv)):
        path = tmp_path / f"rows.{'json' if write == ds.to_json else 'csv'}"
        write(path)
        assert read(str(path) if read is LlmDataset.from_json else path)[0].named_guidelines == NAMED
    back = LlmDataset.from_pandas(ds.to_pandas())
    assert back[0].named_guidelines == NAMED
    case = TestSuite.from_dict({"tests": [{"test_cases": [{"prompt": "q", "guidelines": NAMED}]}]}).test_cases[0]
    assert case.named_guidelines == NAMED and case.to_json()["guidelines"] == NAMED
    assert Row.from_test_case(case).named_guidelines == NAMED
    plain = LlmDataset.from_json([{"input": "q", "guidelines": ["One rule."]}])[0]
    assert plain.named_guidelines == {} and plain.to_json()["guidelines"] == ["One rule."]
    with pytest.raises(DataError, match="name"):
        LlmDataset.from_json([{"input": "q", "guidelines": {"": ["x"]}}])
