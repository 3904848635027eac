"""Rich display of datasets, suites, labs and plans: counts, fields, a preview, all escaped."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

import nbeval
from nbeval.extension import display
from tests.extension.conftest import Shell

SCRIPT = "<script>alert('x')</script>"


def _bundle(shell: Shell, obj: object) -> dict[str, str]:
    formatter = shell.ip.display_formatter
    assert formatter is not None
    data, _ = formatter.format(obj)
    return data


def test_a_dataset_shows_counts_fields_and_its_first_rows(shell: Shell) -> None:
    lab = nbeval.demo_lab()
    html = _bundle(shell, lab.dataset)["text/html"]
    assert "<b>LlmDataset</b>: 30 rows, 3 models, 10 test cases" in html
    assert "fields: key, model_key, input, corpus, context, categories" in html
    assert html.count("<tr>") == 1 + display.PREVIEW_ROWS
    assert "… and 25 more rows" in html
    assert lab.dataset.rows[0].key in html


def test_a_lab_shows_its_models(shell: Shell) -> None:
    data = _bundle(shell, nbeval.demo_lab())
    assert "models: gpt-4o-mini, llama-3-8b, tiny-rag" in data["text/html"]
    assert data["text/plain"].startswith("TestLab")
    assert len(data["text/plain"]) < 200  # not the dataclass repr of every row


def test_a_plan_shows_its_table_and_its_calls(shell: Shell) -> None:
    plan = nbeval.evaluate(nbeval.demo_lab(), ["exact_match", "answer_correctness"], dry_run=True, progress=False)
    data = _bundle(shell, plan)
    assert data["text/plain"] == str(plan)
    html = data["text/html"]
    assert "<th" in html and "answer_correctness" in html and "judge calls: 90" in html


def test_everything_shown_is_escaped(shell: Shell) -> None:
    rows = [{"key": SCRIPT, "input": SCRIPT, "actual_output": f"a{SCRIPT}", "expected_output": SCRIPT}]
    suite = nbeval.TestSuite.from_dict(
        {
            "name": SCRIPT,
            "tests": [
                {"test_cases": [{"prompt": SCRIPT, "expected_output": SCRIPT, "categories": [SCRIPT], SCRIPT: 1}]}
            ],
        }
    )
    lab = nbeval.TestLab.from_dict(
        {"name": SCRIPT, "dataset": {"inputs": rows}, "models": [{"key": "base", "llm_model_name": SCRIPT}]}
    )
    shown = [_bundle(shell, obj)["text/html"] for obj in (nbeval.LlmDataset.from_records(rows), suite, lab)]
    for html in shown:
        assert "<script" not in html
        assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html


def test_long_texts_are_cut(shell: Shell) -> None:
    html = _bundle(shell, nbeval.LlmDataset.from_records([{"input": "word " * 1000}]))["text/html"]
    assert "word " * 20 in html and "word " * 30 not in html and len(html) < 3000


def test_unloading_removes_the_formatters(shell: Shell) -> None:
    ds = nbeval.demo_lab().dataset
    assert "text/html" in _bundle(shell, ds)
    shell.ip.run_line_magic("unload_ext", "nbeval")
    try:
        assert "text/html" not in _bundle(shell, ds)
    finally:
        shell.ip.run_line_magic("load_ext", "nbeval")


def test_formatters_are_registered_by_name_before_the_classes_exist() -> None:
    ip = InteractiveShell.instance()
    assert ip.display_formatter is not None
    html = ip.display_formatter.formatters["text/html"]
    display.install(ip)
    try:
        assert html.lookup_by_type("nbeval.data.model.TestSuite") is display.suite_html
    finally:
        display.uninstall(ip)
