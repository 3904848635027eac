"""Reading and writing datasets, suites and labs in every shape nbeval accepts.

Shapes read (detected from the content, not the file name):

* an LLM dataset: ``{"inputs": [row, ...]}`` or a bare list of rows (``input``, ``actual_output``...);
* a test lab: ``{"raw_dataset": ..., "dataset": ..., "models": [...]}``;
* a test suite ``{"name", "tests": [...]}``, a test ``{"documents", "test_cases"}``, a test case;
* agent-evaluation eval sets: ``request``, ``response``, ``expected_response``,
  ``retrieved_context[].content/.doc_uri``, ``expected_retrieved_context[].doc_uri``, ``guidelines``;
* DB-GPT evaluation records: ``query``, ``contexts``, ``prediction``, ``doc_name``;
* CSV and pandas DataFrames with the LLM dataset's columns (lists as JSON in the cell).

JSON is read leniently: trailing commas (as in some published examples) are accepted.
Every problem raises :class:`~nbeval.errors.DataError` naming the source, the row and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.model import (
    DEFAULT_MODEL_KEY,
    ROW_FIELDS,
    Chunk,
    LlmDataset,
    ModelInfo,
    Relationship,
    Row,
    Test,
    TestCase,
    TestLab,
    TestSuite,
)
from nbeval.errors import ConditionError, DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "load",
    "load_json",
    "read_csv",
    "read_dataset",
    "read_lab",
    "read_pandas",
    "read_suite",
    "rows_from_records",
    "write_csv",
    "write_json",
]

_TRAILING_COMMA = re.compile(r'("(?:[^"\\]|\\.)*")|,(\s*[\]}])', re.S)


def _strip_trailing_commas(text: str) -> str:
    # Strings are matched first and kept, so a comma inside a string is never touched.
    return _TRAILING_COMMA.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)


def load_json(source: Any) -> tuple[Any, str]:
    """Parse ``source`` (path, JSON text, or already-parsed object); return (data, source name)."""
    if isinstance(source, (dict, list)):
        return source, "<object>"
    if isinstance(source, os.PathLike) or (isinstance(source, str) and not source.lstrip().startswith(("{", "["))):
        path = Path(source)
        if not path.exists():
            raise DataError(f"file not found: {path}", source=str(path))
        text = path.read_text(encoding="utf-8")
        name = str(path)
        if path.suffix.lower() == ".jsonl":
            return _parse_jsonl(text, name), name
    else:
        text, name = str(source), "<json text>"
    try:
        return json.loads(text), name
    except json.JSONDecodeError:
        pass
    try:
        return json.loads(_strip_trailing_commas(text)), name
    except json.JSONDecodeError as exc:
        msg = f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise DataError(msg, source=name) from None


def _parse_jsonl(text: str, name: str) -> list[Any]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"not valid JSON: {exc.msg}", source=name, row=lineno) from None
    return out


def write_json(data: Any, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Shape detection


def _shape(data: Any) -> str:
    if isinstance(data, list):
        return "records"
    if not isinstance(data, dict):
        return "unknown"
    if "raw_dataset" in data or ("dataset" in data and "models" in data):
        return "lab"
    if "tests" in data:
        return "suite"
    if "test_cases" in data:
        return "test"
    if "inputs" in data:
        return "dataset"
    if "prompt" in data:
        return "test_case"
    if any(k in data for k in ("input", "request", "query")):
        return "record"
    return "unknown"


def load(source: Any) -> LlmDataset | TestLab | TestSuite:
    """Load any supported file or object: a dataset, a lab or a suite, as found."""
    if _is_dataframe(source):
        return read_pandas(source)
    if isinstance(source, (str, os.PathLike)) and str(source).lower().endswith(".csv"):
        return read_csv(source)
    data, name = load_json(source)
    shape = _shape(data)
    if shape == "lab":
        return _lab_from_json(data, name)
    if shape in ("suite", "test", "test_case"):
        return _suite_from_json(data, name)
    return _dataset_from_json(data, name)


def read_dataset(source: Any) -> LlmDataset:
    """A dataset from any shape: a lab gives its answered ``dataset``, a suite its unanswered rows."""
    loaded = load(source)
    if isinstance(loaded, TestLab):
        return loaded.dataset
    if isinstance(loaded, TestSuite):
        return loaded.to_dataset()
    return loaded


def read_lab(source: Any) -> TestLab:
    data, name = load_json(source)
    if _shape(data) != "lab":
        raise DataError("expected a test lab (an object with 'dataset' and 'models')", source=name)
    return _lab_from_json(data, name)


def read_suite(source: Any) -> TestSuite:
    data, name = load_json(source)
    if _shape(data) not in ("suite", "test", "test_case"):
        raise DataError("expected a test suite (an object with 'tests')", source=name)
    return _suite_from_json(data, name)


def _dataset_from_json(data: Any, name: str) -> LlmDataset:
    if isinstance(data, dict) and "inputs" in data:
        records = data["inputs"]
        if not isinstance(records, list):
            raise DataError("'inputs' must be a list of rows", source=name, field="inputs")
    elif isinstance(data, dict):
        records = [data]
    elif isinstance(data, list):
        records = data
    else:
        raise DataError("expected a JSON object or a list of rows", source=name)
    return LlmDataset(rows_from_records(records, source=name), source=name)


def _lab_from_json(data: dict[str, Any], name: str) -> TestLab:
    known = {"name", "description", "raw_dataset", "dataset", "models", "llm_model_names", "docs_cache"}
    models = []
    for i, m in enumerate(data.get("models") or [], 1):
        if not isinstance(m, dict) or "key" not in m:
            raise DataError("each model needs a 'key'", source=name, row=f"models[{i}]", field="key")
        mk = {"key", "name", "model_type", "llm_model_name", "connection", "collection_id", "documents"}
        models.append(ModelInfo(**{k: v for k, v in m.items() if k in mk},
                                extra={k: v for k, v in m.items() if k not in mk}))

    def part(key: str) -> LlmDataset:
        section = data.get(key) or {"inputs": []}
        records = section.get("inputs", []) if isinstance(section, dict) else section
        return LlmDataset(rows_from_records(records, source=f"{name} ({key})", allow_unanswered=True),
                          source=name)

    return TestLab(name=data.get("name", ""), description=data.get("description", ""),
                   raw_dataset=part("raw_dataset"), dataset=part("dataset"), models=models,
                   llm_model_names=list(data.get("llm_model_names") or []),
                   docs_cache=dict(data.get("docs_cache") or {}),
                   extra={k: v for k, v in data.items() if k not in known})


def _suite_from_json(data: dict[str, Any], name: str) -> TestSuite:
    if "prompt" in data:
        data = {"tests": [{"test_cases": [data]}]}
    elif "test_cases" in data:
        data = {"tests": [data]}
    tests, seen = [], {}
    for ti, t in enumerate(_as_list(data.get("tests"), name, "tests"), 1):
        cases = []
        for ci, c in enumerate(_as_list(t.get("test_cases"), name, f"tests[{ti}].test_cases"), 1):
            where = f"tests[{ti}].test_cases[{ci}]"
            case = _test_case(c, name, where)
            k = case.resolved_key
            if k in seen:
                raise DataError(f"duplicate key '{k}' (also at {seen[k]})", source=name, row=where, field="key")
            seen[k] = where
            cases.append(case)
        tests.append(Test(test_cases=cases, key=t.get("key"), documents=list(t.get("documents") or []),
                          extra={k: v for k, v in t.items() if k not in ("key", "documents", "test_cases")}))
    return TestSuite(name=data.get("name", ""), description=data.get("description", ""), tests=tests,
                     extra={k: v for k, v in data.items() if k not in ("name", "description", "tests")})


def _as_list(value: Any, source: str, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError("must be a list", source=source, field=field)
    return value


def _test_case(c: Any, source: str, where: str) -> TestCase:
    if not isinstance(c, dict):
        raise DataError("a test case must be a JSON object", source=source, row=where)
    known = {"key", "prompt", "categories", "relationships", "expected_output", "condition",
             "guidelines", "expected_context"}
    prompt = c.get("prompt")
    if not isinstance(prompt, str):
        raise DataError("a test case needs a text 'prompt'", source=source, row=where, field="prompt")
    kwargs = dict(
        prompt=prompt,
        key=_opt_str(c.get("key"), source, where, "key"),
        categories=_str_list(c.get("categories"), source, where, "categories"),
        relationships=_relationships(c.get("relationships"), source, where),
        expected_output=_opt_text(c.get("expected_output"), source, where, "expected_output"),
        condition=_condition(c.get("condition"), source, where, "condition"),
        guidelines=_guidelines(c.get("guidelines"), source, where),
        expected_context=_chunks(c.get("expected_context"), source, where, "expected_context"),
        extra={k: v for k, v in c.items() if k not in known},
    )
    return TestCase(**kwargs)


# ---------------------------------------------------------------------------------------------
# Rows from records of any known column style


def _normalize_agent_eval(rec: dict[str, Any]) -> dict[str, Any]:
    """The agent-evaluation column style (request/response/...) in LLM-dataset names."""
    out = {k: v for k, v in rec.items() if k not in (
        "request", "response", "expected_response", "retrieved_context", "expected_retrieved_context",
        "request_id")}
    req = rec.get("request")
    if isinstance(req, dict):  # a chat request: take the last user message as the prompt
        msgs = req.get("messages") or []
        users = [m.get("content") for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
        out["request_raw"] = req
        req = users[-1] if users else req.get("query")
    out["input"] = req
    if "response" in rec:
        out["actual_output"] = rec["response"]
    if "expected_response" in rec:
        out["expected_output"] = rec["expected_response"]
    if "retrieved_context" in rec:
        out["context"] = rec["retrieved_context"]
    if "expected_retrieved_context" in rec:
        out["expected_context"] = rec["expected_retrieved_context"]
    if rec.get("request_id") is not None:
        out["key"] = rec["request_id"]
    return out


def _normalize_dbgpt(rec: dict[str, Any]) -> dict[str, Any]:
    """DB-GPT evaluation records: query / contexts / prediction / doc_name."""
    out = {k: v for k, v in rec.items() if k not in ("query", "contexts", "prediction", "doc_name")}
    out["input"] = rec.get("query")
    pred, ctx = rec.get("prediction"), rec.get("contexts")
    if isinstance(pred, list):  # a retrieval record: prediction = retrieved chunks, contexts = truth
        out["context"] = pred
        expected = list(ctx or [])
    else:
        if pred is not None:
            out["actual_output"] = pred
        if ctx is not None:
            out["context"] = ctx
        expected = []
    if rec.get("doc_name"):
        expected.append({"doc_uri": rec["doc_name"]})
    if expected:
        out["expected_context"] = expected
    return out


def _normalize(rec: dict[str, Any]) -> dict[str, Any]:
    if "input" not in rec and "request" in rec:
        return _normalize_agent_eval(rec)
    if "input" not in rec and "query" in rec:
        return _normalize_dbgpt(rec)
    if "input" not in rec and "prompt" in rec:  # a test case given as a row
        rec = dict(rec)
        rec["input"] = rec.pop("prompt")
        if "condition" in rec:
            rec["output_condition"] = rec.pop("condition")
    return rec


def rows_from_records(records: Sequence[Any], *, source: str = "records",
                      allow_unanswered: bool = True) -> list[Row]:
    """Validated rows from dict records in any supported column style."""
    rows: list[Row] = []
    seen: dict[tuple[str, str], int] = {}
    for i, raw in enumerate(records, 1):
        if not isinstance(raw, dict):
            raise DataError(f"a row must be an object, got {type(raw).__name__}", source=source, row=i)
        row = _row(_normalize(raw), source, i)
        ident = (row.key, row.model_key)
        if ident in seen:
            msg = (f"duplicate key '{row.key}' for model '{row.model_key}' (also row {seen[ident]}); "
                   "give each test case its own key")
            raise DataError(msg, source=source, row=i, field="key")
        seen[ident] = i
        rows.append(row)
    return rows


def _row(rec: dict[str, Any], source: str, i: int) -> Row:
    known = set(ROW_FIELDS)
    if rec.get("input") is None:
        raise DataError("every row needs an 'input' (the prompt)", source=source, row=i, field="input")
    model_key = rec.get("model_key")
    model_key = DEFAULT_MODEL_KEY if model_key in (None, "") else model_key
    return Row(
        input=_opt_text(rec.get("input"), source, i, "input"),
        key=_opt_str(rec.get("key"), source, i, "key") or "",
        model_key=_opt_str(model_key, source, i, "model_key") or DEFAULT_MODEL_KEY,
        corpus=_str_list(rec.get("corpus"), source, i, "corpus"),
        context=_chunks(rec.get("context"), source, i, "context"),
        categories=_str_list(rec.get("categories"), source, i, "categories"),
        relationships=_relationships(rec.get("relationships"), source, i),
        expected_output=_opt_text(rec.get("expected_output"), source, i, "expected_output"),
        output_condition=_condition(rec.get("output_condition"), source, i, "output_condition"),
        actual_output=_opt_text(rec.get("actual_output"), source, i, "actual_output"),
        actual_duration=_opt_number(rec.get("actual_duration"), source, i, "actual_duration"),
        cost=_opt_number(rec.get("cost"), source, i, "cost"),
        expected_context=_chunks(rec.get("expected_context"), source, i, "expected_context"),
        guidelines=_guidelines(rec.get("guidelines"), source, i),
        error=_opt_str(rec.get("error"), source, i, "error"),
        extra={k: v for k, v in rec.items() if k not in known},
    )


# ---------------------------------------------------------------------------------------------
# Field validators: each names the source, row and field in its error.


def _is_null(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _opt_str(v: Any, source: str, row: Any, field: str) -> str | None:
    if _is_null(v):
        return None
    if isinstance(v, (int,)) and not isinstance(v, bool):
        return str(v)
    if not isinstance(v, str):
        raise DataError(f"must be text, got {type(v).__name__}", source=source, row=row, field=field)
    return v


def _opt_text(v: Any, source: str, row: Any, field: str) -> str | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and not _is_null(v):
        return str(v)  # labels such as 1 or 3.5 in a classification set
    return _opt_str(v, source, row, field)


def _opt_number(v: Any, source: str, row: Any, field: str) -> float | None:
    if _is_null(v) or v == "":
        return None
    if isinstance(v, bool):
        raise DataError("must be a number, got a boolean", source=source, row=row, field=field)
    try:
        return float(v)
    except (TypeError, ValueError):
        raise DataError(f"must be a number, got {v!r}", source=source, row=row, field=field) from None


def _str_list(v: Any, source: str, row: Any, field: str) -> list[str]:
    if _is_null(v):
        return []
    if isinstance(v, str):
        return [v]
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
        raise DataError("must be a list of strings", source=source, row=row, field=field)
    return list(v)


def _guidelines(v: Any, source: str, row: Any) -> list[str]:
    if isinstance(v, dict):  # named guideline groups: flatten, keeping the order
        out: list[str] = []
        for name, items in v.items():
            out.extend(_str_list(items, source, row, f"guidelines.{name}"))
        return out
    return _str_list(v, source, row, "guidelines")


def _chunks(v: Any, source: str, row: Any, field: str) -> list[Chunk]:
    if _is_null(v):
        return []
    if isinstance(v, (str, dict)):
        v = [v]
    if not isinstance(v, (list, tuple)):
        raise DataError("must be a list of chunks (text or {content, doc_uri})", source=source, row=row, field=field)
    out = []
    for j, c in enumerate(v):
        if isinstance(c, str):
            out.append(Chunk(content=c))
        elif isinstance(c, dict):
            content = c.get("content", c.get("text", c.get("page_content")))
            uri = c.get("doc_uri", c.get("uri", c.get("source")))
            if content is None and uri is None:
                raise DataError("a chunk needs 'content' or 'doc_uri'", source=source, row=row, field=f"{field}[{j}]")
            if (content is not None and not isinstance(content, str)) or (uri is not None and not isinstance(uri, str)):
                raise DataError("chunk 'content' and 'doc_uri' must be text", source=source, row=row, field=f"{field}[{j}]")
            out.append(Chunk(content=content, doc_uri=uri))
        else:
            raise DataError(f"a chunk must be text or an object, got {type(c).__name__}",
                            source=source, row=row, field=f"{field}[{j}]")
    return out


def _relationships(v: Any, source: str, row: Any) -> list[Relationship]:
    if _is_null(v):
        return []
    if not isinstance(v, list):
        raise DataError("must be a list", source=source, row=row, field="relationships")
    out = []
    for j, r in enumerate(v):
        if not isinstance(r, dict) or not isinstance(r.get("type"), str) or not isinstance(r.get("target"), str):
            raise DataError("a relationship needs text 'type' and 'target'", source=source, row=row,
                            field=f"relationships[{j}]")
        out.append(Relationship(type=r["type"], target=r["target"], target_type=r.get("target_type", "test_case")))
    return out


def _condition(v: Any, source: str, row: Any, field: str) -> str | None:
    text = _opt_str(v, source, row, field)
    if not text or not text.strip():
        return None
    from nbeval.data.conditions import parse_condition

    try:
        parse_condition(text)
    except ConditionError as exc:
        raise DataError(f"malformed condition: {exc}", source=source, row=row, field=field) from None
    return text


# ---------------------------------------------------------------------------------------------
# CSV and pandas

_LIST_FIELDS = ("corpus", "context", "categories", "relationships", "expected_context", "guidelines")


#: How an empty string is written to CSV, so it survives apart from a missing value (empty cell).
_EMPTY_STRING_CELL = '""'


def _cell_to_json(name: str, value: Any) -> Any:
    if value is None:
        return ""
    if value == "" and isinstance(value, str):
        return _EMPTY_STRING_CELL
    if isinstance(value, (list, dict)) or (name not in ROW_FIELDS and not isinstance(value, str)):
        return json.dumps(value, ensure_ascii=False)
    return value


def write_csv(dataset: LlmDataset, path: str | os.PathLike[str] | None = None) -> str:
    """Write rows as CSV; list fields and non-scalar extras are JSON in their cells."""
    records = dataset.to_records()
    columns = list(ROW_FIELDS) + sorted({k for r in records for k in r if k not in ROW_FIELDS})
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    for r in records:
        writer.writerow({k: _cell_to_json(k, r.get(k)) for k in columns})
    text = buf.getvalue()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def _parse_cell(name: str, value: Any, source: str, row: int, *, csv_text: bool = True) -> Any:
    if _is_null(value):
        return None
    if not csv_text and not isinstance(value, str):
        return value
    if not csv_text and (name not in _LIST_FIELDS or value == ""):
        return [] if name in _LIST_FIELDS else value
    if isinstance(value, str) and value == "":
        return [] if name in _LIST_FIELDS else None
    if value == _EMPTY_STRING_CELL:
        return ""
    if name in _LIST_FIELDS and isinstance(value, str):
        if value.lstrip().startswith(("[", "{")):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise DataError(f"list cell is not valid JSON: {exc.msg}", source=source, row=row, field=name) from None
        return [value]
    if name not in ROW_FIELDS and isinstance(value, str) and (value[:1] in '[{"' or value in ("true", "false", "null")
                                                            or re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", value)):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def read_csv(path: str | os.PathLike[str]) -> LlmDataset:
    """Rows from a CSV written by :func:`write_csv` or by hand (list cells as JSON or plain text)."""
    name = str(path)
    if not Path(path).exists():
        raise DataError(f"file not found: {path}", source=name)
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        records = []
        for i, raw in enumerate(reader, 1):
            records.append(_drop_empty_extras({k: _parse_cell(k, v, name, i) for k, v in raw.items() if k is not None}))
    for rec in records:
        for numeric in ("actual_duration", "cost"):
            if rec.get(numeric) in ("", None):
                rec[numeric] = None
    return LlmDataset(rows_from_records(records, source=name), source=name)


def _drop_empty_extras(rec: dict[str, Any]) -> dict[str, Any]:
    # A table gives every row every column; an extra field that is empty in a row was absent there.
    return {k: v for k, v in rec.items() if k in ROW_FIELDS or v is not None}


def _is_dataframe(obj: Any) -> bool:
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "to_dict")


def read_pandas(df: pd.DataFrame) -> LlmDataset:
    """Rows from a DataFrame with the LLM dataset's columns (or a supported column style)."""
    records = []
    for i, rec in enumerate(df.to_dict(orient="records"), 1):
        records.append(_drop_empty_extras({str(k): _parse_cell(str(k), _unbox(v), "DataFrame", i, csv_text=False)
                                           for k, v in rec.items()}))
    return LlmDataset(rows_from_records(records, source="DataFrame"), source="DataFrame")


def _unbox(v: Any) -> Any:
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return v.tolist()  # numpy arrays and scalars from pandas
    return v
