"""SuiteBuilder keeps the user's drafts (issue 26): no action replaces the cases being edited
with the last valid suite. Driven headlessly: set values, click buttons, read the cases."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("ipywidgets")

from nbeval.data.model import Test, TestCase, TestSuite
from nbeval.widgets import SuiteBuilder

BAD = '"4" AND <b>'  # does not parse; the error quotes the '<'


@pytest.fixture
def b() -> SuiteBuilder:
    cases = [
        TestCase(
            prompt="Which platform does the 8:15 to Lyon leave from?",
            key="platform",
            expected_output="Platform 4.",
            condition='"platform 4"',
        ),
        TestCase(prompt="Can I take my dog on the train?", key="dog", expected_output="Yes, on a lead."),
        TestCase(prompt="How much is a single ticket to Paris?", key="price", expected_output="45 euros."),
    ]
    builder = SuiteBuilder(TestSuite(name="trains", tests=[Test(test_cases=cases)]))
    builder.perturbators.value = ("case",)
    return builder


def _draft(b: SuiteBuilder) -> None:
    """Add a new case and edit another, then give case 3 a condition that does not parse."""
    b.cases_list.value = 2
    b.add_button.click()  # case 4, after case 3
    b.prompt.value = "Is there a bar on the TGV?"
    b.cases_list.value = 0
    b.expected_output.value = "Platform 4, in the hall."
    b.cases_list.value = 2
    b.condition.value = BAD
    b.cases_list.value = 3
    b.expected_output.value = "Yes, in car 4."  # an edit made after the condition broke


def _assert_drafts_kept(b: SuiteBuilder, condition: str = BAD) -> None:
    assert b.cases[0]["expected_output"] == "Platform 4, in the hall."
    assert b.cases[1]["prompt"] == "Can I take my dog on the train?"
    assert b.cases[2]["condition"] == condition
    assert b.cases[3]["prompt"] == "Is there a bar on the TGV?"
    assert b.cases[3]["expected_output"] == "Yes, in car 4."


def test_perturb_refuses_naming_the_case_and_keeps_every_draft_then_perturbs_once_fixed(b):
    _draft(b)
    b.perturb_button.click()
    assert len(b.cases) == 4
    _assert_drafts_kept(b)
    assert b.index == 3 and b.prompt.value == "Is there a bar on the TGV?"  # the form still shows the draft
    msg = b.message.value
    assert "case 3: the condition does not parse" in msg and "then Perturb" in msg
    assert "&#x27;&lt;&#x27;" in msg and "'<'" not in msg  # user text is escaped
    assert "added" not in msg

    b.cases_list.value = 2
    assert b.condition.value == BAD  # the unparsable text is still in the form
    b.condition.value = '"45 euros"'
    b.perturb_button.click()
    assert "added 4 perturbed cases" in b.message.value
    assert len(b.cases) == 8 and len(b.value.test_cases) == 8
    _assert_drafts_kept(b, condition='"45 euros"')
    assert b.index == 2 and b.condition.value == '"45 euros"'  # the selected case stays selected
    perturbed = b.value.test_cases[4:]
    assert all(any(r.type == "perturbation_source" for r in tc.relationships) for tc in perturbed)
    assert [tc.expected_output for tc in perturbed] == [
        "Platform 4, in the hall.",
        "Yes, on a lead.",
        "45 euros.",
        "Yes, in car 4.",
    ]
    assert b.error == ""


def test_perturb_refuses_while_two_cases_share_a_key(b):
    b.cases_list.value = 1
    b.key_field.value = "platform"
    b.perturb_button.click()
    assert "cases 1 and 2 have the same key" in b.message.value and "then Perturb" in b.message.value
    assert len(b.cases) == 3 and b.cases[1]["key"] == "platform"


def test_perturb_keeps_a_draft_exactly_as_typed(b):
    b.condition.value = '  "platform 4"  '  # parses; the spaces are the user's
    b.key_field.value = ""
    b.perturb_button.click()
    assert "added 3 perturbed cases" in b.message.value
    assert b.cases[0]["condition"] == '  "platform 4"  ' and b.condition.value == '  "platform 4"  '


def test_add_duplicate_delete_and_moving_around_keep_the_drafts(b):
    _draft(b)
    b.add_button.click()
    b.duplicate_button.click()
    b.delete_button.click()
    b.delete_button.click()
    b.name.value = "trains v2"
    assert len(b.cases) == 4
    _assert_drafts_kept(b)
    b.cases_list.value = 2
    assert b.condition.value == BAD and b.condition_position == 8


def test_save_and_export_refuse_and_keep_the_drafts(b, tmp_path):
    _draft(b)
    path = tmp_path / "suite.json"
    b.path.value = str(path)
    b.save_button.click()
    assert not path.exists() and "case 3: the condition does not parse" in b.message.value
    b.export_button.click()
    assert "cannot be exported" in b.message.value
    _assert_drafts_kept(b)


def test_load_refuses_once_while_there_are_unsaved_drafts(b, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps(TestSuite(name="other", tests=[Test(test_cases=[TestCase(prompt="Hi")])]).to_json()))
    _draft(b)
    b.path.value = str(other)
    b.load_button.click()
    assert "not loaded" in b.message.value and "4 cases being edited" in b.message.value
    _assert_drafts_kept(b)
    b.load_button.click()  # again, nothing edited in between: the user means it
    assert b.name.value == "other" and [c["prompt"] for c in b.cases] == ["Hi"]
    assert not b.unsaved
    b.prompt.value = "Hello"
    assert b.unsaved


def test_an_edit_after_the_warning_asks_again(b, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps(TestSuite(name="other", tests=[Test(test_cases=[TestCase(prompt="Hi")])]).to_json()))
    b.prompt.value = "Which platform for Lyon?"
    b.path.value = str(other)
    b.load_button.click()
    b.prompt.value = "Which platform for Lyon, please?"
    b.load_button.click()
    assert "not loaded" in b.message.value and b.cases[0]["prompt"] == "Which platform for Lyon, please?"


def test_import_refuses_while_there_are_unsaved_drafts_and_saving_clears_them(b, tmp_path):
    import datetime

    content = json.dumps(TestSuite(name="other", tests=[Test(test_cases=[TestCase(prompt="Hi")])]).to_json())
    upload = (
        {
            "name": "s.json",
            "type": "application/json",
            "size": len(content),
            "content": memoryview(content.encode()),
            "last_modified": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
        },
    )
    _draft(b)
    b.upload.value = upload
    assert "not loaded" in b.message.value and b.upload.value == ()
    _assert_drafts_kept(b)
    b.cases_list.value = 2
    b.condition.value = ""
    b.path.value = str(tmp_path / "mine.json")
    b.save_button.click()
    assert "saved 4 test cases" in b.message.value and not b.unsaved
    b.upload.value = upload  # saved: nothing to lose
    assert [c["prompt"] for c in b.cases] == ["Hi"]
