"""``nw.app()`` with no data leads somewhere: Run says how to get answers, stays disabled while
nothing can run (and refuses without a traceback when called anyway), and with a model named in
the Run tab it collects the answers of the suite being built, then evaluates them."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import pytest

import nbeval.widgets as nw

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_ENV = ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def _no_served_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


def _texts(widget: Any) -> list[str]:
    """Every text a person can see in ``widget`` and below: HTML/labels, Output streams, errors."""
    out: list[str] = []
    if isinstance(widget, w.Output):
        for o in widget.outputs:
            out.append(str(o.get("text", "")) + "".join(o.get("traceback", [])) + str(o.get("data", "")))
    elif isinstance(widget, (w.HTML, w.Label)):
        out.append(widget.value)
    for child in getattr(widget, "children", ()):
        out.extend(_texts(child))
    return out


def _assert_no_traceback(widget: Any) -> None:
    for text in _texts(widget):
        assert "Traceback" not in text and 'File "' not in text and '.py", line' not in text, text


def _add_cases(app: nw.NbevalApp) -> None:
    app.suite_builder.add_case(prompt="What is the capital of France?", expected_output="Paris is the capital.")
    app.suite_builder.add_case(prompt="What is the capital of Spain?", expected_output="Madrid is the capital.")


def careful_bot(prompt: str) -> str:
    return "Paris is the capital." if "France" in prompt else "Madrid is the capital."


def test_without_data_run_is_disabled_says_how_to_get_answers_and_shows_no_traceback():
    app = nw.app(cache=False)
    panel = app.run_panel
    assert panel.run_button.disabled
    message = panel.message.value
    assert "nbeval.collect(suite, models=[fn])" in message and ".complete()" in message
    assert "Model" in message and "test cases" in message and "evaluators" in message
    assert panel.answers_box.layout.display != "none"  # the Model field is shown for a suite
    panel.run()  # called anyway (from code): it refuses, saying why, and starts nothing
    panel.run_button.click()
    assert panel.result is None and not panel.running and panel._thread is None
    assert "nbeval.collect(suite, models=[fn])" in panel.message.value
    assert panel.output.outputs == ()
    _assert_no_traceback(app)


def test_evaluators_are_choosable_before_answers_exist_but_run_waits_for_a_model():
    app = nw.app(cache=False)
    _add_cases(app)
    # the picker judges the suite as it will be once answered: answer-reading evaluators are usable
    assert app.picker.rows["rouge"].reason.value == ""
    assert "no context" in app.picker.rows["context_precision"].reason.value  # not promised before answers
    app.picker.select("rouge", "exact_match")
    assert sorted(e.id for e in app.run_panel.evaluators) == ["exact_match", "rouge"]
    assert app.run_panel.run_button.disabled  # still no model to answer
    assert "nbeval.collect(suite, models=[fn])" in app.run_panel.message.value
    assert "test cases" not in app.run_panel.message.value  # that part is done
    _assert_no_traceback(app)


def test_a_function_named_in_the_model_field_is_collected_then_evaluated():
    def careless_bot(prompt: str) -> str:
        return "Paris." if "France" in prompt else "Lisbon is the capital."

    namespace = {
        "__name__": __name__,
        "careful_bot": careful_bot,
        "careless_bot": careless_bot,
        "answer": 42,
        "imported": w.interact,
    }  # functions defined elsewhere are not suggested
    app = nw.app(cache=False, evaluators=["exact_match"])
    panel = app.run_panel
    panel._namespace = namespace  # the notebook's namespace, as a kernel would hold it
    _add_cases(app)
    panel.refresh_models()
    assert list(panel.model_field.options) == ["careful_bot", "careless_bot"]  # functions only
    panel.model_field.value = "careful_bot, careless_bot"
    assert not panel.run_button.disabled
    assert "careful_bot: a Python function" in panel.answers_note.value
    panel.run_button.click()
    result = panel.wait(60)
    assert result is not None and sorted(result.model_keys) == ["careful_bot", "careless_bot"]
    passed = result.scores.set_index(["model_key", "metric"])
    assert passed.loc[("careful_bot", "score"), "value"].tolist() == [1.0, 1.0]
    assert passed.loc[("careless_bot", "score"), "value"].tolist() == [0.0, 0.0]
    assert panel.lab is not None and len(panel.lab.dataset.rows) == 4
    assert app.picker.dataset is panel.lab  # the picker now judges the real answers
    assert app.explorer.result is result and app.selected_index == 3
    assert f"{len(result.scores)} scores" in panel.message.value and "4 of 4 evaluations" in panel.message.value
    _assert_no_traceback(app)
    # a changed suite drops the answers: the next Run collects them again
    app.suite_builder.add_case(prompt="What is the capital of Italy?", expected_output="Rome is the capital.")
    assert panel.lab is None and not panel.run_button.disabled


def test_models_given_to_app_and_a_failing_model_leave_row_errors_not_tracebacks():
    def broken(prompt: str) -> str:
        raise RuntimeError("the index is down")

    app = nw.app(models=[careful_bot, broken], cache=False, max_attempts=1, evaluators=["exact_match"])
    _add_cases(app)
    assert app.run_panel.model_field.value == "careful_bot, broken"
    app.run_panel.run_button.click()
    result = app.run_panel.wait(60)
    assert result is not None
    errors = app.run_panel.lab.dataset.to_pandas().set_index("model_key")["error"]
    assert "the index is down" in errors.loc["broken"].iloc[0]
    _assert_no_traceback(app)


def test_an_unknown_name_with_no_endpoint_is_refused_with_the_functions_there_are():
    app = nw.app(cache=False, evaluators=["exact_match"])
    app.run_panel._namespace = {"__name__": __name__, "careful_bot": careful_bot, "x": 1}
    _add_cases(app)
    app.run_panel.model_field.value = "carefull_bot"  # a typo
    assert app.run_panel.run_button.disabled
    assert "a name in Model cannot answer" in app.run_panel.message.value
    assert (
        "no function &#x27;carefull_bot&#x27; in this notebook (there are: careful_bot)"
        in app.run_panel.answers_note.value
    )
    app.run_panel.model_field.value = "x"
    assert "x is a int" in app.run_panel.answers_note.value and app.run_panel.run_button.disabled
    # with an endpoint, a name that is no function is a served model (nothing is contacted yet)
    app.run_panel.model_field.value = "llama3"
    app.run_panel.endpoint.value = "http://127.0.0.1:9/v1"
    assert not app.run_panel.run_button.disabled
    assert "llama3: a served model at http://127.0.0.1:9/v1" in app.run_panel.answers_note.value
    _assert_no_traceback(app)
