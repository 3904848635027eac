"""Reading the body of a ``%%nbeval_suite`` cell: test cases in YAML or JSON, errors by line.

::

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

A cell is bounded before anything is built from it: lists and mappings may nest at most
:data:`MAX_DEPTH` levels (deeper, Python's recursion ends the cell, or a later cell that shows
it), and YAML aliases (``*name``, repeating what ``&name`` marked) may add at most
:data:`MAX_ALIAS_NODES` values in all, so a few lines cannot stand for billions of values (the
"billion laughs"); an alias inside the value it names (a value containing itself) is refused.
A few aliases, e.g. guidelines shared by several test cases, read as usual.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from nbeval.data.model import Test, TestCase, TestSuite
from nbeval.errors import DataError

if TYPE_CHECKING:
    import yaml

__all__ = ["ALIASES", "MAX_ALIAS_NODES", "MAX_DEPTH", "parse_suite"]

#: Other names a cell may give a test case's fields.
ALIASES = {
    "input": "prompt",
    "question": "prompt",
    "expected": "expected_output",
    "expected_answer": "expected_output",
    "answer": "expected_output",
    "output_condition": "condition",
    "category": "categories",
}
_TEXT_FIELDS = ("prompt", "expected_output", "condition")
#: How deep lists and mappings may nest in a cell (the list of cases and a case are two levels).
MAX_DEPTH = 100
#: How many values YAML aliases may add to a cell in all, counting each value an alias repeats.
MAX_ALIAS_NODES = 10_000


def parse_suite(text: str, *, name: str = "") -> TestSuite:
    """The test suite written in ``text`` (YAML or JSON), named ``name`` unless it names itself.

    A problem raises :class:`~nbeval.errors.DataError` naming the line.
    """
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
        msg = (
            "this cell is not JSON, and reading YAML needs PyYAML (pip install pyyaml); "
            "or write the test cases as a JSON list"
        )
        raise DataError(msg, source="line 1") from None


#: A JSON string (skipped whole) or a bracket: what :func:`_json_too_deep` looks at.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def _json_too_deep(text: str) -> int | None:
    """The offset where ``text`` (JSON) opens a list or object deeper than :data:`MAX_DEPTH`, else ``None``.

    Strings are skipped, so a bracket inside one does not count; no recursion, so any depth is safe.
    """
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return m.start()
        elif ch in "]}":
            depth -= 1
    return None


def _too_deep(line: int) -> DataError:
    msg = f"nested deeper than {MAX_DEPTH} levels (lists and mappings within one another); flatten the cell"
    return DataError(msg, source=f"line {line}")


def _load_json(text: str) -> tuple[Any, list[int]]:
    deep = _json_too_deep(text)
    if deep is not None:
        raise _too_deep(text.count("\n", 0, deep) + 1)
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


def _cell_loader(text: str) -> yaml.SafeLoader:
    """PyYAML's safe loader on ``text``, bounded as the module says.

    Composing a node deeper than :data:`MAX_DEPTH`, an alias inside the value it names, or aliases
    adding more than :data:`MAX_ALIAS_NODES` values raises :class:`DataError` naming the line.
    """
    import yaml

    # PyYAML ships no type stubs (types-PyYAML is not a dependency), so SafeLoader is Any here.
    class CellLoader(yaml.SafeLoader):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.depth = 0
            self.open_anchors: set[str] = set()
            self.sizes: dict[int, int] = {}  # id(node) -> values in it, aliases expanded
            self.added = 0  # values the aliases so far repeat

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 1
                if event.anchor in self.open_anchors:
                    msg = (
                        f"the alias *{event.anchor} is inside the value &{event.anchor} names: a value "
                        "cannot contain itself"
                    )
                    raise DataError(msg, source=f"line {line}")
                node = super().compose_node(parent, index)
                self.added += self.sizes.get(id(node), 1)
                if self.added > MAX_ALIAS_NODES:
                    msg = (
                        f"the YAML aliases (*name) of this cell repeat more than {MAX_ALIAS_NODES:,} values; "
                        "write the values out, or repeat fewer"
                    )
                    raise DataError(msg, source=f"line {line}")
                return node
            nested = isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent))
            if nested:
                self.depth += 1
                if self.depth > MAX_DEPTH:
                    raise _too_deep(event.start_mark.line + 1)
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                self.open_anchors.add(anchor)
            try:
                node = super().compose_node(parent, index)
            finally:
                self.depth -= nested
                self.open_anchors.discard(anchor)
            if isinstance(node, yaml.SequenceNode):
                size = 1 + sum(self.sizes.get(id(n), 1) for n in node.value)
            elif isinstance(node, yaml.MappingNode):
                size = 1 + sum(self.sizes.get(id(k), 1) + self.sizes.get(id(v), 1) for k, v in node.value)
            else:
                size = 1
            self.sizes[id(node)] = size
            return node

    return CellLoader(text)


def _load_yaml(text: str) -> tuple[Any, list[int]]:
    import yaml

    loader = _cell_loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        msg = f"not valid YAML: {problem}"
        raise DataError(msg, source=f"line {mark.line + 1}" if mark is not None else None) from None
    except RecursionError:  # the bounds above should prevent it; a cell must still never end in one
        msg = f"nested too deeply to read (lists and mappings within one another); keep it under {MAX_DEPTH} levels"
        raise DataError(msg) from None
    finally:
        loader.dispose()
    lines = [item.start_mark.line + 1 for item in node.value] if isinstance(node, yaml.SequenceNode) else []
    if isinstance(node, yaml.MappingNode):
        lines = [node.start_mark.line + 1]
    return data, lines
