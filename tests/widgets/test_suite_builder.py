"""SuiteBuilder, driven headlessly: set values, click buttons, read the produced suite."""

from __future__ import annotations

import datetime
import json

import pytest

from nbeval.data.model import Chunk, Test, TestCase, TestSuite
from nbeval.widgets.suite_builder import SuiteBuilder


@pytest.fixture
def suite() -> TestSuite:
    cases = [
        TestCase(
            prompt="What is the capital of France?",
            key="capital",
            expected_output="Paris",
            condition='"Paris"',
            categories=["geo"],
            expected_context=[Chunk("Paris is the capital of France.", doc_uri="fr.md")],
        ),
        TestCase(prompt="What is 2+2?", expected_output="4"),
    ]
    return TestSuite(name="quiz", tests=[Test(test_cases=cases, key="t1", documents=["fr.md"])])


def test_build_a_case_from_scratch():
    b = SuiteBuilder()
    assert b.value.test_cases == [] and b.prompt.disabled
    b.add_button.click()
    assert b.index == 0 and not b.prompt.disabled
    b.prompt.value = "Name a <b>primary</b> colour."
    b.expected_output.value = "Red"
    b.condition.value = '"Red" OR "Blue" OR "Yellow"'
    b.categories.value = "colours, easy ,"
    b.guidelines.value = "Answer in one word\n\n  Be polite  "
    b.expected_context.value = "Red is primary.\n\n\nBlue is primary too."
    (case,) = b.value.test_cases
    assert case.prompt == "Name a <b>primary</b> colour."
    assert case.expected_output == "Red"
    assert case.condition == '"Red" OR "Blue" OR "Yellow"'
    assert case.categories == ["colours", "easy"]
    assert case.guidelines == ["Answer in one word", "Be polite"]
    assert case.expected_context == [Chunk("Red is primary."), Chunk("Blue is primary too.")]
    assert b.cases_list.options[0][0] == "1. Name a <b>primary</b> colour."
    assert b.error == ""


def test_fields_are_disabled_with_a_hint_until_a_case_exists():
    b = SuiteBuilder()
    fields = [b.key_field, b.prompt, b.expected_output, b.condition, b.categories, b.guidelines, b.expected_context]
    assert all(f.disabled for f in fields) and b.perturb_button.disabled and b.delete_button.disabled
    assert "Add a case to start" in b.editor_hint.value
    b.add_button.click()
    assert not any(f.disabled for f in fields) and not b.perturb_button.disabled
    assert b.editor_hint.value == ""
    b.delete_button.click()
    assert all(f.disabled for f in fields) and "Add a case to start" in b.editor_hint.value


def test_condition_is_parsed_as_you_type_and_the_error_is_pointed_at():
    b = SuiteBuilder()
    b.add_button.click()
    b.prompt.value = "Capital of France?"
    b.condition.value = '"Paris"'
    assert b.condition_error == "" and "✓" in b.condition_status.value
    b.condition.value = '"Paris" AND AND "x"'
    assert b.condition_position == 12  # the second AND starts at character 12
    assert "found AND" in b.condition_error
    html = b.condition_status.value
    assert "at character 13" in html
    assert '&quot;Paris&quot; AND <span style="background:#f8c9cf;border-bottom:2px solid #b3261e">A</span>ND' in html
    # while it does not parse, the suite keeps the last valid condition and says what is wrong
    assert b.value.test_cases[0].condition == '"Paris"'
    assert b.error.startswith("case 1: the condition does not parse")
    b.condition.value = '"Paris" AND NOT "Lyon"'
    assert b.error == "" and b.condition_position == -1
    assert b.value.test_cases[0].condition == '"Paris" AND NOT "Lyon"'


def test_condition_markup_is_escaped_in_the_feedback():
    b = SuiteBuilder()
    b.add_button.click()
    b.condition.value = '"<img src=x onerror=alert(1)>" AND'
    assert "<img" not in b.condition_status.value
    assert "&lt;img src=x onerror=alert(1)&gt;" in b.condition_status.value


def test_loading_a_suite_fills_the_form(suite):
    b = SuiteBuilder(suite)
    assert b.name.value == "quiz"
    assert [label for label, _ in b.cases_list.options] == ["1. What is the capital of France?", "2. What is 2+2?"]
    assert b.key_field.value == "capital" and b.condition.value == '"Paris"'
    assert b.expected_context.value == "Paris is the capital of France."
    b.cases_list.value = 1
    assert b.index == 1 and b.prompt.value == "What is 2+2?" and b.key_field.value == ""
    assert b.value == suite


def test_edit_keeps_an_unchanged_chunks_document(suite):
    b = SuiteBuilder(suite)
    b.expected_context.value = "Paris is the capital of France.\n\nLyon is not."
    assert b.value.test_cases[0].expected_context == [
        Chunk("Paris is the capital of France.", doc_uri="fr.md"),
        Chunk("Lyon is not."),
    ]


def test_duplicate_gives_the_copy_its_own_key_and_delete_removes(suite):
    b = SuiteBuilder(suite)
    b.duplicate_button.click()
    assert b.index == 1 and len(b.value.test_cases) == 3
    assert b.key_field.value == "capital-copy"
    b.cases_list.value = 0
    b.duplicate_button.click()
    assert b.value.test_cases[1].key == "capital-copy2"
    again = TestSuite.from_json(b.export_json())  # distinct keys: the export reads back
    assert [tc.resolved_key for tc in again.test_cases][:3] == ["capital", "capital-copy2", "capital-copy"]
    b.cases_list.value = 3
    b.duplicate_button.click()  # a case without a key: the copy is keyed from the content
    assert b.value.test_cases[4].key == b.value.test_cases[3].resolved_key + "-copy"
    b.delete_button.click()
    b.delete_button.click()
    assert [tc.prompt for tc in b.value.test_cases] == ["What is the capital of France?"] * 3
    assert b.index == 2


def test_same_key_twice_is_reported_and_blocks_export(suite):
    b = SuiteBuilder(suite)
    b.cases_list.value = 1
    b.key_field.value = "capital"
    assert "cases 1 and 2 have the same key 'capital'" in b.error
    with pytest.raises(ValueError, match="cannot be exported"):
        b.to_json()
    b.export_button.click()
    assert "same key" in b.message.value and "same key" in b.output.outputs[-1]["text"]


def test_export_import_round_trip_through_a_file(suite, tmp_path):
    b = SuiteBuilder(suite)
    path = tmp_path / "suite.json"
    b.path.value = str(path)
    b.save_button.click()
    assert TestSuite.from_json(str(path)) == TestSuite.from_json(json.dumps(suite.to_json()))
    fresh = SuiteBuilder()
    fresh.path.value = str(path)
    fresh.load_button.click()
    assert fresh.value.to_json() == suite.to_json()
    assert fresh.value.tests[0].documents == ["fr.md"]
    fresh.export_button.click()
    assert json.loads(fresh.json_text.value) == suite.to_json()


def test_upload_imports_a_suite(suite):
    b = SuiteBuilder()
    content = json.dumps(suite.to_json()).encode()
    b.upload.value = (
        {
            "name": "s.json",
            "type": "application/json",
            "size": len(content),
            "content": memoryview(content),
            "last_modified": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
        },
    )
    assert [tc.prompt for tc in b.value.test_cases] == [tc.prompt for tc in suite.test_cases]


def test_bad_file_shows_the_error_and_keeps_the_suite(suite, tmp_path):
    b = SuiteBuilder(suite)
    bad = tmp_path / "bad.json"
    bad.write_text('{"tests": [{"test_cases": [{"prompt": 3}]}]}')
    b.path.value = str(bad)
    b.load_button.click()
    assert "prompt" in b.message.value
    assert b.output.outputs and b.output.outputs[-1]["name"] == "stderr"
    assert b.value == suite
