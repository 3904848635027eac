"""``%%nbeval_suite``: YAML or JSON test cases become a TestSuite; errors name the line."""

from __future__ import annotations

import json
import sys

import pytest

import nbeval
from nbeval.data.model import TestSuite
from nbeval.extension.suite_cell import parse_suite
from tests.extension.conftest import Shell

YAML = """\
- prompt: Which platform does the 8:15 to Lyon leave from?
  expected: Platform 4.
  condition: '"platform 4"'
  categories: timetable
- input: Can I bring my dog?
  expected_output: Yes, on a lead.
  categories: [pets, policy]
  key: dogs
- question: How many seats are there?
  answer: 42
"""

JSON = json.dumps(
    [
        {
            "prompt": "Which platform does the 8:15 to Lyon leave from?",
            "expected": "Platform 4.",
            "condition": '"platform 4"',
            "categories": "timetable",
        },
        {
            "input": "Can I bring my dog?",
            "expected_output": "Yes, on a lead.",
            "categories": ["pets", "policy"],
            "key": "dogs",
        },
        {"question": "How many seats are there?", "answer": 42},
    ],
    indent=2,
)


def _expected() -> TestSuite:
    return TestSuite.from_dict(
        {
            "name": "faq",
            "tests": [
                {
                    "test_cases": [
                        {
                            "prompt": "Which platform does the 8:15 to Lyon leave from?",
                            "expected_output": "Platform 4.",
                            "condition": '"platform 4"',
                            "categories": ["timetable"],
                        },
                        {
                            "prompt": "Can I bring my dog?",
                            "expected_output": "Yes, on a lead.",
                            "categories": ["pets", "policy"],
                            "key": "dogs",
                        },
                        {"prompt": "How many seats are there?", "expected_output": "42"},
                    ]
                }
            ],
        }
    )


@pytest.mark.parametrize("body", [YAML, JSON], ids=["yaml", "json"])
def test_a_cell_of_cases_becomes_a_suite(shell: Shell, body: str) -> None:
    ran = shell.cell(f"%%nbeval_suite faq\n{body}")
    assert ran.success, ran.stdout
    suite = shell.ns["faq"]
    assert isinstance(suite, TestSuite)
    assert suite.to_json() == _expected().to_json()
    html = ran.html()
    assert "TestSuite &#x27;faq&#x27;" in html and "1 test, 3 test cases" in html
    assert ran.text() == "TestSuite 'faq'(1 test, 3 test cases)"


def test_the_default_name_is_suite(shell: Shell) -> None:
    assert shell.cell("%%nbeval_suite\n- prompt: hello").success
    assert [c.prompt for c in shell.ns["_suite"].test_cases] == ["hello"]


def test_a_whole_suite_and_a_single_case_are_read_too(shell: Shell) -> None:
    whole = json.dumps(_expected().to_json())
    assert shell.cell(f"%%nbeval_suite s\n{whole}").success
    assert shell.ns["s"].to_json() == _expected().to_json()
    assert shell.cell("%%nbeval_suite one\nprompt: hi\nexpected: hello").success
    assert [(c.prompt, c.expected_output) for c in shell.ns["one"].test_cases] == [("hi", "hello")]


def test_a_completed_suite_runs(shell: Shell) -> None:
    assert shell.cell(f"%%nbeval_suite faq\n{YAML}").success
    pending = nbeval.collect(shell.ns["faq"], models={"bot": lambda prompt: "It leaves from platform 4."}, cache=False)
    lab = pending.complete(progress=False)
    shell.ns["lab"] = lab
    assert shell.cell("%nbeval run lab -e text_matching --no-progress").success
    assert shell.ns["_nbeval"].leaderboard("text_matching").iloc[0]["pass"] == 1.0


ERRORS = {
    # JSON syntax: the line of the error
    '[\n  {"prompt": "a"},\n  {"prompt": "b"\n]': "line 4: not valid JSON: Expecting ',' delimiter (column 1)",
    # YAML syntax
    "- prompt: a\n- prompt: [b\n- prompt: c": "line 3: not valid YAML: expected ',' or ']', but got ':'",
    # a case without a prompt: the line where that case starts
    "- prompt: a\n  expected: b\n- expected: c\n  condition: '\"c\"'": (
        "line 3 (test case 2), field 'prompt': a test case needs a text 'prompt'"
    ),
    '[\n  {"prompt": "a"},\n\n  {"expected": "c"}\n]': (
        "line 4 (test case 2), field 'prompt': a test case needs a text 'prompt'"
    ),
    "- prompt: a\n- prompt: b\n  condition: '\"x\" AND'": (
        "line 2 (test case 2), field 'condition': malformed condition"
    ),
    "- prompt: a\n  key: k\n- prompt: b\n  key: k": (
        "line 3 (test case 2), field 'key': duplicate key 'k' (also the test case at line 1); "
        "give each case its own key"
    ),
    "- prompt: a\n  input: b": (
        "line 1 (test case 1), field 'input': 'input' gives the prompt a second time; keep one of them"
    ),
    "- just text": "line 1 (test case 1): a test case is a mapping (prompt: ..., expected: ...), got str",
    "just text": "line 1: expected a list of test cases (mappings with a prompt), got str",
    "[]": "the cell holds no test case: add at least one with a prompt",
    "  \n": "the cell is empty: write the test cases below the magic, as a YAML or JSON list",
}


@pytest.mark.parametrize("body", list(ERRORS))
def test_errors_name_the_line(shell: Shell, body: str) -> None:
    ran = shell.cell(f"%%nbeval_suite bad\n{body}")
    assert not ran.success
    assert "bad" not in shell.ns
    assert ran.stdout.startswith("nbeval: error: " + ERRORS[body])
    assert "Traceback" not in ran.stdout and ran.stderr == ""


def test_without_pyyaml_json_still_works_and_yaml_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` now fails
    assert parse_suite(JSON, name="faq").to_json() == _expected().to_json()
    with pytest.raises(
        nbeval.DataError,
        match=r"^line 1: this cell is not JSON, and reading YAML needs PyYAML "
        r"\(pip install pyyaml\); or write the test cases as a JSON list$",
    ):
        parse_suite(YAML)
    with pytest.raises(nbeval.DataError, match=r"^line 1: not valid JSON"):
        parse_suite("[{prompt: a}]")  # YAML's flow style, unreadable without PyYAML
    assert [c.prompt for c in parse_suite('[{"prompt": "a"}]').test_cases] == ["a"]
