"""Reading the body of a ``%%nbeval_suite`` cell: test cases in YAML or JSON, errors by line.

    %%nbeval_suite faq
    - prompt: Which platform does the 8:15 to Lyon leave from?
      expected: Platform 4.
      condition: '"platform 4"'
      categories: [timetable]
    - input: Can I bring my dog?
      expected_output: Yes, on a lead.

A cell is a list of test cases (or one case, or a whole suite ``{"name", "tests": [...]}``). A case
may name its prompt ``input`` or ``question``, its expected answer ``expected``,
``expected_answer`` or ``answer``, its condition ``output_condition``, and give ``categories`` as one
text; every other field is a test case's own (``key``, ``guidelines``, ``expected_context``, ...).
JSON is read with the standard library; YAML needs PyYAML (``pip install pyyaml``), which nbeval
does not require.
"""

from __future__ import annotations

import json
from typing import Any

from nbeval.data.model import Test, TestCase, TestSuite
from nbeval.errors import DataError

__all__ = ["ALIASES", "parse_suite"]

#: Other names a cell may give a test case's fields.
ALIASES = {
    "input": "prompt", "question": "prompt",
    "expected": "expected_output", "expected_answer": "expected_output", "answer": "expected_output",
    "output_condition": "condition",
    "category": "categories",
}
_TEXT_FIELDS = ("prompt", "expected_output", "condition")


def parse_suite(text: str, *, name: str = "") -> TestSuite:
    """The test suite written in ``text`` (YAML or JSON), named ``name`` unless it names itself.
    A problem raises :class:`~nbeval.errors.DataError` naming the line."""
    if not text.strip():
        msg = "the cell is empty: write the test cases below the magic, as a YAML or JSON list"
        raise DataError(msg)
    data, lines = _load(text)
    if isinstance(data, dict) and ("tests" in data or "test_cases" in data):
        suite = TestSuite.from_dict(data, source="the cell")
        suite.name = suite.name or name
        return suite
    if isinstance(data, dict):
        data, lines = [data], lines[:1] or [_first_line(text)]
    if not isinstance(data, list):
        line = lines[0] if lines else _first_line(text)
        msg = f"expected a list of test cases (mappings with a prompt), got {type(data).__name__}"
        raise DataError(msg, source=f"line {line}")
    if not data:
        msg = "the cell holds no test case: add at least one with a prompt"
        raise DataError(msg)
    cases: list[TestCase] = []
    seen: dict[str, int] = {}
    for i, (item, line) in enumerate(zip(data, lines, strict=True), 1):
        where = f"line {line} (test case {i})"
        case = _case(item, where)
        key = case.resolved_key
        if key in seen:
            msg = f"duplicate key '{key}' (also the test case at line {seen[key]}); give each case its own key"
            raise DataError(msg, source=where, field="key")
        seen[key] = line
        cases.append(case)
    return TestSuite(name=name, tests=[Test(test_cases=cases)])


def _first_line(text: str) -> int:
    """The 1-based number of the first line of ``text`` that is not blank."""
    return next((i for i, line in enumerate(text.splitlines(), 1) if line.strip()), 1)


def _case(item: Any, where: str) -> TestCase:
    if not isinstance(item, dict):
        msg = f"a test case is a mapping (prompt: ..., expected: ...), got {type(item).__name__}"
        raise DataError(msg, source=where)
    record: dict[str, Any] = {}
    for key, value in item.items():
        field = ALIASES.get(str(key), str(key))
        if field in record:
            msg = f"'{key}' gives the {field} a second time; keep one of them"
            raise DataError(msg, source=where, field=str(key))
        if field in _TEXT_FIELDS and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # `expected: 42` in YAML is a number
        if field == "categories" and isinstance(value, str):
            value = [value]
        record[field] = value
    try:
        return TestCase.from_dict(record, source=where, where="")
    except DataError as exc:
        raise DataError(exc.reason, source=where, field=exc.field) from None


def _load(text: str) -> tuple[Any, list[int]]:
    """The parsed cell and, when it is a list, the line each item starts on (1-based)."""
    if text.lstrip()[:1] in ("[", "{"):
        try:
            return _load_json(text)
        except DataError:
            try:  # YAML's flow style starts with a bracket as well
                return _load_yaml(text)
            except (DataError, ImportError):
                pass
            raise
    try:
        return _load_yaml(text)
    except ImportError:
        msg = ("this cell is not JSON, and reading YAML needs PyYAML (pip install pyyaml); "
               "or write the test cases as a JSON list")
        raise DataError(msg, source="line 1") from None


def _load_json(text: str) -> tuple[Any, list[int]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"not valid JSON: {exc.msg} (column {exc.colno})"
        raise DataError(msg, source=f"line {exc.lineno}") from None
    lines: list[int] = []
    if isinstance(data, list):
        decoder = json.JSONDecoder()
        pos = text.index("[") + 1
        for _ in data:
            while text[pos] in " \t\r\n,":
                pos += 1
            lines.append(text.count("\n", 0, pos) + 1)
            _, pos = decoder.raw_decode(text, pos)
    return data, lines


def _load_yaml(text: str) -> tuple[Any, list[int]]:
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        msg = f"not valid YAML: {problem}"
        raise DataError(msg, source=f"line {mark.line + 1}" if mark is not None else None) from None
    lines = [item.start_mark.line + 1 for item in node.value] if isinstance(node, yaml.SequenceNode) else []
    if isinstance(node, yaml.MappingNode):
        lines = [node.start_mark.line + 1]
    return data, lines
