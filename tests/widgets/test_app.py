"""The tabbed workflow: the four forms wired together."""

from __future__ import annotations

import nbeval.widgets
from nbeval.widgets.workflow import TAB_TITLES


def test_pick_run_explore(wrecords):
    app = nbeval.widgets.app(wrecords)
    assert app.titles == TAB_TITLES and len(app.children) == 4
    app.picker.select("w_overlap", "w_mentions")
    assert [e.id for e in app.run_panel.evaluators] == ["w_overlap", "w_mentions"]
    app.run_panel.run_button.click()
    result = app.run_panel.wait(30)
    assert result is not None and result.evaluators == ["w_overlap", "w_mentions"]
    assert app.explorer.result is result and app.selected_index == 3
    assert app.explorer.key == "capital"
    panel = app.run_panel
    assert panel.chart.spec["title"]["text"] == "w_overlap: overlap"
    panel.board_evaluator.value = "w_mentions"  # the live leaderboard follows the choice
    assert panel.chart.spec["title"]["text"] == "w_mentions: pass"


def test_without_data_the_suite_being_built_is_what_runs():
    app = nbeval.widgets.app(evaluators=["w_overlap"])
    builder = app.suite_builder
    builder.add_button.click()
    builder.prompt.value = "q"
    builder.expected_output.value = "a"
    assert app.run_panel.data is builder.value
    # judged as the suite will be once answered (issue 26): choosable now, answered on Run
    assert app.picker.rows["w_overlap"].reason.value == ""
    app.run_panel.evaluators = ["exact_match"]
    app.run_panel.run()  # no model named to answer the suite: refused, with how to get answers
    assert app.run_panel.result is None and not app.run_panel.running and app.run_panel.run_button.disabled
    assert "a suite holds questions, not answers" in app.run_panel.message.value
