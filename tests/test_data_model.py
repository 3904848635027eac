"""The data model: the seeds' JSON shapes load as they are, round trips lose nothing, and bad input
fails early with the file, row and field named."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import nbeval
from nbeval.data.jsonio import load_json
from nbeval.data.model import Chunk, LlmDataset, Row, TestCase, TestLab, TestSuite, derive_key
from nbeval.errors import DataError

SEEDS = Path(__file__).parent / "golden" / "seeds"


# -- the seeds' shapes, verbatim -------------------------------------------------------------


def test_seed_suite_with_trailing_commas_loads() -> None:
    text = (SEEDS / "suite.json").read_text()
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # the published example is not strict JSON...
    suite = TestSuite.from_json(str(SEEDS / "suite.json"))  # ...and loads all the same
    assert suite.name == "Test Suite Example"
    assert [len(t.test_cases) for t in suite.tests] == [1, 2]
    assert suite.tests[0].documents == ["https://public-data.s3.amazonaws.com/Coca-Cola-FEMSA-Results-1Q23-vf-2.pdf"]
    case = suite.tests[1].test_cases[0]
    assert case.key == "3db6878b-1511-4b58-b42f-985ca9699d1d"
    assert case.condition == '"Luiz Carlos Trabuco Cappi"'


def test_seed_test_and_test_case_load() -> None:
    suite = TestSuite.from_json(str(SEEDS / "test.json"))
    cases = suite.test_cases
    assert [c.key for c in cases] == ["9c3a7df3-67df-4819-babb-20636611f077", "6709c0e1-de57-4b5b-b826-2060bf935574"]
    assert cases[0].condition == "regexp(^A.*)"  # the seed's unquoted regexp form is accepted
    assert cases[1].relationships[0].type == "perturbation_source"
    assert cases[1].relationships[0].target == cases[0].key
    single = TestSuite.from_json(str(SEEDS / "test_case.json"))
    assert single.test_cases[0].expected_output == "Brazil revenue was 15,969 million."
    assert "perturbed" in single.test_cases[0].categories


def test_seed_lab_loads_with_models_and_both_datasets() -> None:
    lab = TestLab.from_json(str(SEEDS / "lab.json"))
    assert lab.name == "TestLab"
    assert len(lab.raw_dataset) == 2 and len(lab.dataset) == 2
    assert [m.llm_model_name for m in lab.models] == lab.llm_model_names
    row = lab.dataset[1]
    assert row.model_key == "14ac0946-6547-48d1-b19a-41bc90d34849"
    assert (
        len(row.context) == 5
        and row.context[0].content is not None
        and row.context[0].content.startswith("But it is not enough")
    )
    assert row.actual_duration == pytest.approx(19.800140142440796)
    assert lab.models[0].extra["collection_name"] == "RAG collection (docs: ['sr1107a1.pdf'])"  # unknown kept
    assert lab.docs_cache == {
        "https://www.federalreserve.gov/supervisionreg/srletters/sr1107a1.pdf": "/tmp/pytest-of-me/sr1107a1.pdf"
    }
    # same prompt answered by two models would share a key; here the prompts differ
    assert lab.dataset[0].key != lab.dataset[1].key


def test_seed_dataset_loads() -> None:
    ds = LlmDataset.from_json(str(SEEDS / "dataset.json"))
    assert len(ds) == 1
    assert ds[0].output_condition is None  # "" means no condition
    assert ds[0].corpus == ["https://www.wikipedia.org/"]
    assert ds[0].cost is None  # absent in the seed: unknown, not 0


def test_agent_eval_columns_load() -> None:
    ds = LlmDataset.from_json(str(SEEDS / "agent_eval.json"))
    first, second = ds.rows
    assert first.input is not None and first.input.startswith("What is the difference between reduceByKey")
    assert first.actual_output is not None and first.actual_output.startswith("reduceByKey aggregates")
    assert first.expected_output is not None and first.expected_output.startswith("reduceByKey combines")
    assert first.context == [
        Chunk("reduceByKey merges the values for each key using an associative reduce function.", "doc1.txt"),
        Chunk("groupByKey groups the values for each key into a single sequence.", "doc2.txt"),
    ]
    assert first.expected_context == [Chunk(None, "doc1.txt"), Chunk(None, "doc3.txt")]
    assert first.guidelines == ["The response must be in English", "The response must be clear, coherent, and concise"]
    assert second.input == "What is Spark?"  # the last user message of a chat request
    assert second.guidelines == ["The response must be in English", "No slang"]


def test_dbgpt_records_load() -> None:
    ds = LlmDataset.from_json(str(SEEDS / "dbgpt_records.json"))
    answer, retrieval = ds.rows
    assert answer.input == "what awel talked about"
    assert answer.actual_output is not None and answer.actual_output.startswith("AWEL is a workflow")
    assert len(answer.context) == 2
    assert answer.expected_context == [Chunk(None, "awel.md")]
    assert answer.extra["score"] == 4.0 and answer.extra["metric_name"] == "AnswerRelevancyMetric"
    # a retrieval record: prediction is the retrieved list, contexts the ground truth
    assert retrieval.context_texts == ["AWEL is divided into three levels.", "Stand-alone environment"]
    assert retrieval.expected_context[0] == Chunk("AWEL is divided into three levels.")
    assert retrieval.expected_context[-1] == Chunk(None, "awel.md")


# -- keys -------------------------------------------------------------------------------------


def test_derived_key_is_shared_across_models_and_stable() -> None:
    recs = [
        {"input": "Q?", "expected_output": "A", "actual_output": x, "model_key": m, "context": [x]}
        for m, x in (("m1", "a"), ("m2", "b"))
    ]
    ds = LlmDataset.from_records(recs)
    assert ds[0].key == ds[1].key  # the answer and retrieved context do not take part
    assert ds[0].key == derive_key("Q?", "A")
    assert ds[0].key != derive_key("Q?", "B")
    assert ds[0].key.startswith("tc-")


def test_duplicate_key_for_same_model_is_an_error_naming_both_rows() -> None:
    recs = [
        {"key": "k", "input": "a", "model_key": "m"},
        {"key": "x", "input": "b", "model_key": "m"},
        {"key": "k", "input": "c", "model_key": "m"},
    ]
    with pytest.raises(DataError) as info:
        LlmDataset.from_records(recs, source="mine.json")
    assert info.value.row == 3 and info.value.field == "key"
    assert "mine.json" in str(info.value) and "row 1" in str(info.value)


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"actual_output": "x"}, "input"),
        ({"input": "q", "categories": [1, 2]}, "categories"),
        ({"input": "q", "context": [3]}, "context[0]"),
        ({"input": "q", "context": [{"title": "no content"}]}, "context[0]"),
        ({"input": "q", "actual_duration": "slow"}, "actual_duration"),
        ({"input": "q", "output_condition": '"a" AND'}, "output_condition"),
        ({"input": "q", "relationships": [{"type": "perturbation_source"}]}, "relationships[0]"),
        ({"input": ["not", "text"]}, "input"),
    ],
)
def test_bad_rows_name_file_row_and_field(tmp_path: Path, record: dict, field: str) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"inputs": [{"input": "fine"}, record]}))
    with pytest.raises(DataError) as info:
        LlmDataset.from_json(str(path))
    err = info.value
    assert (err.source, err.row, err.field) == (str(path), 2, field)
    assert str(path) in str(err) and "row 2" in str(err) and field in str(err)


def test_malformed_condition_in_suite_fails_at_load_with_position(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"name": "s", "tests": [{"test_cases": [{"prompt": "p", "condition": '("a" OR "b"'}]}]}))
    with pytest.raises(DataError) as info:
        TestSuite.from_json(str(path))
    assert info.value.row == "tests[1].test_cases[1]" and info.value.field == "condition"
    assert "position" in str(info.value)


def test_malformed_condition_on_test_case_object() -> None:
    with pytest.raises(nbeval.ConditionError):
        TestCase(prompt="p", condition="NOT")


def test_invalid_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"inputs": [\n {"input": "a"\n]}')
    with pytest.raises(DataError, match=r"broken.json.*line 3"):
        LlmDataset.from_json(str(path))


def test_missing_file() -> None:
    with pytest.raises(DataError, match="file not found"):
        nbeval.load("no/such/file.json")


# -- round trips --------------------------------------------------------------------------------


def _rich_dataset() -> LlmDataset:
    return LlmDataset.from_records(
        [
            {
                "key": "k1",
                "input": 'Q, with "quotes"\nand lines',
                "expected_output": "A",
                "actual_output": "",
                "context": ["plain chunk", {"content": "chunk, with comma", "doc_uri": "d.pdf"}],
                "expected_context": [{"doc_uri": "d.pdf"}],
                "categories": ["qa", "perturbed"],
                "relationships": [{"type": "perturbation_source", "target": "k0", "target_type": "test_case"}],
                "output_condition": '"A" AND NOT regexp("\\\\d+")',
                "guidelines": ["Be brief"],
                "actual_duration": 1.25,
                "cost": 0.1 + 0.2,
                "model_key": "m1",
                "custom_field": {"nested": [1, 2]},
                "note": "kept",
            },
            {"key": "k2", "input": "Q2", "actual_output": None, "model_key": "m1", "error": "timeout", "score": 3},
        ]
    )


def test_json_round_trip_is_lossless(tmp_path: Path) -> None:
    ds = _rich_dataset()
    ds.to_json(str(tmp_path / "d.json"))
    back = LlmDataset.from_json(str(tmp_path / "d.json"))
    assert back.to_records() == ds.to_records()


def test_csv_round_trip_is_lossless(tmp_path: Path) -> None:
    ds = _rich_dataset()
    ds.to_csv(str(tmp_path / "d.csv"))
    back = LlmDataset.from_csv(str(tmp_path / "d.csv"))
    assert back.to_records() == ds.to_records()
    assert back[0].actual_output == "" and back[1].actual_output is None  # empty answer != no answer
    assert back[0].cost == 0.1 + 0.2  # full float precision
    assert back[0].context[1] == Chunk("chunk, with comma", "d.pdf")


def test_pandas_round_trip_is_lossless() -> None:
    ds = _rich_dataset()
    df = ds.to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df.columns[:3]) == ["key", "model_key", "input"]
    assert LlmDataset.from_pandas(df).to_records() == ds.to_records()


def test_lab_and_suite_round_trip(tmp_path: Path) -> None:
    lab = TestLab.from_json(str(SEEDS / "lab.json"))
    lab.to_json(str(tmp_path / "lab.json"))
    again = TestLab.from_json(str(tmp_path / "lab.json"))
    assert again.to_json() == lab.to_json()
    suite = TestSuite.from_json(str(SEEDS / "suite.json"))
    suite.save(str(tmp_path / "suite.json"))
    assert TestSuite.from_json(str(tmp_path / "suite.json")).to_json() == suite.to_json()


def test_suite_to_dataset_and_building_in_code() -> None:
    suite = TestSuite(name="s")
    suite.add_test_case(TestCase(prompt="P1", expected_output="E1", condition='"E"'))
    suite.add_test_case(TestCase(prompt="P2"))
    ds = suite.to_dataset()
    assert [r.input for r in ds] == ["P1", "P2"]
    assert ds[0].output_condition == '"E"' and ds[0].actual_output is None
    assert ds[0].key == suite.test_cases[0].resolved_key


def test_row_condition_is_parsed_once_and_cached() -> None:
    row = Row(input="q", output_condition='"x" OR "y"')
    assert row.condition is row.condition
    assert row.condition is not None and row.condition.evaluate("y")


# -- parsed JSON in, objects out (no file involved) -------------------------------------------


def test_from_dict_reads_parsed_json_and_names_the_source() -> None:
    suite = TestSuite.from_dict({"prompt": "P", "key": "k"}, source="mine.json")  # one test case is a suite
    assert [c.key for c in suite.test_cases] == ["k"]
    with pytest.raises(DataError) as info:
        TestSuite.from_dict({"inputs": []}, source="mine.json")
    assert info.value.source == "mine.json" and "expected a test suite" in str(info.value)
    lab = TestLab.from_dict(load_json(str(SEEDS / "lab.json"))[0], source="lab.json")  # lenient JSON
    assert len(lab.dataset) == 2 and lab.models[0].key
    with pytest.raises(DataError, match="each model needs a 'key'") as info:
        TestLab.from_dict({"dataset": {"inputs": []}, "models": [{"name": "x"}]}, source="lab.json")
    assert (info.value.row, info.value.field) == ("models[1]", "key")
    ds = LlmDataset.from_dict({"inputs": [{"input": "q", "model_key": "m"}]}, source="d.json")
    assert ds.source == "d.json" and ds[0].model_key == "m"
    assert LlmDataset.from_dict([{"query": "q", "prediction": "a"}])[0].actual_output == "a"
    with pytest.raises(DataError) as info:
        LlmDataset.from_dict({"inputs": [{"input": "q", "cost": "free"}]}, source="d.json")
    assert (info.value.source, info.value.row, info.value.field) == ("d.json", 1, "cost")
    case = TestCase.from_dict({"prompt": "p", "guidelines": {"tone": ["calm"]}, "x": 1})
    assert case.guidelines == ["calm"] and case.extra == {"x": 1}
    assert Row.from_record({"request": "hi", "response": "yo"}).actual_output == "yo"


def test_dataset_from_json_reads_every_source_load_reads(tmp_path: Path) -> None:
    ds = _rich_dataset()
    ds.to_csv(str(tmp_path / "d.csv"))
    assert LlmDataset.from_json(str(tmp_path / "d.csv")).to_records() == ds.to_records()
    assert LlmDataset.from_json(ds.to_pandas()).to_records() == ds.to_records()
    assert [r.input for r in LlmDataset.from_json(str(SEEDS / "suite.json"))] == [
        c.prompt for c in TestSuite.from_json(str(SEEDS / "suite.json")).test_cases
    ]
    assert (
        LlmDataset.from_json(str(SEEDS / "lab.json")).to_records()
        == TestLab.from_json(str(SEEDS / "lab.json")).dataset.to_records()
    )
    for source in (str(tmp_path / "d.csv"), str(SEEDS / "suite.json"), str(SEEDS / "lab.json")):
        loaded = nbeval.load(source)
        expected = (
            loaded
            if isinstance(loaded, LlmDataset)
            else (loaded.dataset if isinstance(loaded, TestLab) else loaded.to_dataset())
        )
        assert LlmDataset.from_json(source).to_records() == expected.to_records()
