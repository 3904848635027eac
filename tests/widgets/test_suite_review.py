"""The SuiteBuilder's review mode for generated cases (issue 33), driven through its Python API
and its buttons, headlessly: accept, edit, reject, restore, counts per kind, the rejected cases
kept aside and exported, the drafts never dropped, every text escaped."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("ipywidgets")

from nbeval.data.model import Chunk, Test, TestCase, TestSuite
from nbeval.widgets import SuiteBuilder
from nbeval.widgets.suite_fields import REJECTED
from nbeval.widgets.suite_review import SuiteReview, rejected_html, review_card_html

SCRIPT = "<script>alert('x')</script>"


def _generated(
    prompt: str, answer: str, chunks: list[tuple[str, str]], kind: str, persona: str | None = None
) -> TestCase:
    """A case as nbeval.generation makes it."""
    return TestCase(
        prompt=prompt,
        expected_output=answer,
        expected_context=[Chunk(content, uri) for content, uri in chunks],
        categories=[f"generated:{kind}"] + ([f"persona:{persona}"] if persona else []),
        extra={
            "generation": {
                "kind": kind,
                "persona": persona,
                "chunk_ids": [f"c{i}" for i in range(len(chunks))],
                "status": "pending",
            }
        },
    )


def _suite() -> TestSuite:
    cases = [
        _generated(
            "How many days of paid leave do I get?",
            "25 working days.",
            [("Full-time employees get 25 working days of paid leave.", "handbook.pdf")],
            "single_hop",
            "new hire",
        ),
        TestCase(prompt="What is the office address?", key="address", expected_output="1 Main St"),
        _generated(
            "Can part-time staff carry leave over?",
            "Yes, up to 5 days, pro rata.",
            [
                ("Up to five days may be carried over.", "handbook.pdf"),
                (f"Part-time staff {SCRIPT} accrue pro rata.", "pt.md"),
            ],
            "multi_hop",
        ),
        _generated(
            "Who approves remote work?",
            "The line manager.",
            [("Managers approve remote work.", "remote.md")],
            "single_hop",
        ),
    ]
    return TestSuite(name="handbook", tests=[Test(test_cases=cases)], extra={"generation_report": {"made": 3}})


@pytest.fixture
def b() -> SuiteBuilder:
    return SuiteBuilder(_suite(), review=True)


def _statuses(b: SuiteBuilder) -> list[str | None]:
    return [c["extra"].get("generation", {}).get("status") for c in b.cases]


def test_review_opens_on_the_first_pending_case_with_its_source_chunk_beside_it(b) -> None:
    r = b.reviewer
    assert isinstance(r, SuiteReview) and b.review() is r  # one reviewer per builder
    assert r.current is b.cases[0] and b.index == 0
    assert "Generated case 1 of 3" in r.header.value and "persona: new hire" in r.header.value
    assert "How many days of paid leave" in r.text.value and "25 working days." in r.text.value
    assert "Full-time employees get 25 working days" in r.chunks.value and "handbook.pdf · c0" in r.chunks.value
    assert r.counts() == {
        "single_hop": {"pending": 2, "accepted": 0, "rejected": 0},
        "multi_hop": {"pending": 1, "accepted": 0, "rejected": 0},
    }
    assert "single-hop" in r.counts_view.value and "multi-hop" in r.counts_view.value
    assert SuiteBuilder(_suite()).reviewer is None  # review mode is asked for


def test_accept_edit_and_reject_record_the_decision_and_move_on(b) -> None:
    r = b.reviewer
    r.accept()
    assert _statuses(b)[0] == "accepted" and b.index == 2  # the hand-written case is skipped
    assert "accepted; 2 pending" in r.message.value

    r.edit(expected_output="Yes: up to 5 days, pro rata.")
    edited = b.cases[2]
    assert edited["expected_output"] == "Yes: up to 5 days, pro rata."
    assert edited["extra"]["generation"]["status"] == "accepted"
    assert edited["extra"]["generation"]["edited"] is True
    assert edited["extra"]["generation"]["original"] == {"expected_output": "Yes, up to 5 days, pro rata."}
    assert b.index == 3

    r.reject("already covered by the policy page")
    assert [c["prompt"] for c in b.cases] == [
        "How many days of paid leave do I get?",
        "What is the office address?",
        "Can part-time staff carry leave over?",
    ]
    assert "every case is reviewed" in r.message.value
    assert r.counts() == {
        "single_hop": {"pending": 0, "accepted": 1, "rejected": 1},
        "multi_hop": {"pending": 0, "accepted": 1, "rejected": 0},
    }
    (entry,) = r.rejected
    assert entry["case"]["prompt"] == "Who approves remote work?"
    assert entry["case"]["generation"]["status"] == "rejected"
    assert entry["case"]["generation"]["reason"] == "already covered by the policy page"
    assert entry["case"]["expected_context"] == [{"content": "Managers approve remote work.", "doc_uri": "remote.md"}]
    assert "already covered by the policy page" in r.rejected_view.value


def test_rejected_cases_are_exported_saved_and_loaded_with_the_suite_and_can_be_restored(b, tmp_path) -> None:
    r = b.reviewer
    r.next()
    r.reject("vague")
    assert len(b.cases) == 3
    exported = json.loads(b.export_json())
    assert [e["case"]["prompt"] for e in exported[REJECTED]] == ["Can part-time staff carry leave over?"]
    assert exported["generation_report"] == {"made": 3}
    path = tmp_path / "reviewed.json"
    b.save(path)

    other = SuiteBuilder()
    assert other.load(str(path))
    r2 = other.review()
    assert r2.counts()["multi_hop"] == {"pending": 0, "accepted": 0, "rejected": 1}
    r2.restore(0)
    assert [c["prompt"] for c in other.cases][2] == "Can part-time staff carry leave over?"  # back where it was
    back = other.cases[2]
    assert back["extra"]["generation"]["status"] == "pending" and "reason" not in back["extra"]["generation"]
    assert back["key"] is None  # its key is derived from its content, as before
    assert back["expected_context"][1] == {"content": f"Part-time staff {SCRIPT} accrue pro rata.", "doc_uri": "pt.md"}
    assert r2.current is back and REJECTED not in other.value.extra and r2.rejected == []
    assert r2.counts()["multi_hop"] == {"pending": 1, "accepted": 0, "rejected": 0}
    assert other.value.test_cases[2] == _suite().test_cases[2]  # nothing lost on the way


def test_restore_by_key_and_a_wrong_restore_says_so(b) -> None:
    r = b.reviewer
    r.reject()
    key = TestCase.from_dict(r.rejected[0]["case"]).resolved_key
    r.restore("no-such-key")
    assert "no rejected case" in r.message.value and len(r.rejected) == 1
    r.restore(key)
    assert r.rejected == [] and len(b.cases) == 4 and b.cases[0]["prompt"] == "How many days of paid leave do I get?"


def test_reviewed_suite_keeps_accepted_and_hand_written_cases_only(b) -> None:
    r = b.reviewer
    r.accept()
    r.reject("wrong")
    suite = r.reviewed_suite()
    assert [c.prompt for c in suite.test_cases] == [
        "How many days of paid leave do I get?",
        "What is the office address?",
    ]
    assert REJECTED not in suite.extra and suite.extra["generation_report"] == {"made": 3}
    assert b.reviewed_suite().test_cases == suite.test_cases
    assert len(b.value.test_cases) == 3  # the builder keeps the pending case; only the export of the review drops it


def test_the_buttons_do_what_the_methods_do_and_are_reachable_by_tab(b) -> None:
    r = b.reviewer
    for widget in (r.accept_button, r.edit_button, r.reason, r.reject_button, r.previous_button, r.next_button):
        assert widget.tabbable is not False  # a native button or text box: Tab reaches it, Enter presses it
    assert "Tab" in r.accept_button.tooltip
    r.next_button.click()
    assert b.index == 2
    r.previous_button.click()
    assert b.index == 0 and r.previous_button.disabled
    r.edit_button.click()
    assert r.editor.layout.display is None and r.actions.layout.display == "none"
    assert r.prompt_box.value == "How many days of paid leave do I get?"
    r.prompt_box.value = "How many days of paid leave does a full-time employee get?"
    r.save_button.click()
    assert b.cases[0]["prompt"] == "How many days of paid leave does a full-time employee get?"
    assert b.cases[0]["extra"]["generation"]["original"] == {"prompt": "How many days of paid leave do I get?"}
    assert r.editor.layout.display == "none" and r.actions.layout.display is None
    assert b.index == 2 and b.prompt.value == "Can part-time staff carry leave over?"  # the form follows the review
    r.reason.value = "too easy"
    r.reject_button.click()
    assert r.rejected[0]["case"]["generation"]["reason"] == "too easy" and r.reason.value == ""
    r.accept_button.click()
    assert _statuses(b) == ["accepted", None, "accepted"]
    r.restore_index.value = 1
    r.restore_button.click()
    assert r.rejected == [] and len(b.cases) == 4


def test_the_hand_written_case_is_not_reviewed(b) -> None:
    r = b.reviewer
    b.cases_list.value = 1  # picked in the builder's list
    assert "written by hand" in r.header.value and r.accept_button.disabled
    r.accept()
    assert "nothing to review" in r.message.value and _statuses(b)[1] is None
    nothing = SuiteBuilder(TestSuite(tests=[Test(test_cases=[TestCase(prompt="Hi")])]), review=True).reviewer
    assert nothing is not None and "No generated case to review" in nothing.header.value and nothing.counts() == {}


def test_review_actions_never_drop_the_builder_s_drafts(b) -> None:
    r = b.reviewer
    b.cases_list.value = 1
    b.condition.value = '"Main St" AND <b>'  # a draft that does not parse
    b.cases_list.value = 0
    b.expected_output.value = "25 working days a year."  # an edit in the form, not saved
    assert b.error
    r.accept()
    r.edit(prompt="Can part-time staff carry unused leave over?")
    r.reject("duplicate")
    r.restore()
    r.next()
    assert b.cases[1]["condition"] == '"Main St" AND <b>'
    assert b.cases[0]["expected_output"] == "25 working days a year."
    assert b.cases[0]["extra"]["generation"]["status"] == "accepted"
    assert b.cases[2]["prompt"] == "Can part-time staff carry unused leave over?"
    assert len(b.cases) == 4 and b.unsaved
    with pytest.raises(ValueError, match="the condition does not parse"):
        r.reviewed_suite()
    b.cases_list.value = 1
    assert b.condition.value == '"Main St" AND <b>'  # still in the form


def test_rejecting_a_case_whose_condition_does_not_parse_refuses_and_keeps_it(b) -> None:
    r = b.reviewer
    b.condition.value = '"25" AND ('
    r.reject("bad")
    assert "condition" in r.message.value and len(b.cases) == 4 and r.rejected == []
    assert b.cases[0]["condition"] == '"25" AND ('


def test_every_text_is_escaped(b) -> None:
    r = b.reviewer
    r.next()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in r.chunks.value and SCRIPT not in r.chunks.value
    case = {**b.cases[2], "prompt": SCRIPT, "expected_output": "<b>bold</b>"}
    html = review_card_html(case, 1, 1)
    assert SCRIPT not in html and "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    r.edit(prompt=f"Part-time {SCRIPT}?")
    b.cases_list.value = 2
    r.reject(f"<img src=x onerror=alert(1)> {SCRIPT}")
    shown = r.rejected_view.value
    assert "<img" not in shown and SCRIPT not in shown and "&lt;img src=x onerror=alert(1)&gt;" in shown
    assert SCRIPT not in rejected_html(r.rejected)
    assert SCRIPT not in r.counts_view.value + r.header.value + r.message.value
