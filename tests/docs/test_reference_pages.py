"""The generated reference pages (docs/_ext/nbeval_reference.py) say what the code declares.

Each page is checked against nbeval read another way than the generator reads it: the evaluator
catalogue against each evaluator class's own ``spec`` (the page is made from the packaged index),
the command line against the parser ``nbeval`` itself runs, the formats page against a result
actually saved and the dataclasses' fields. Hostile text (``|``, ``<script>``, backticks) in a
declaration is shown as text, never as Markdown or HTML.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbeval_reference as ref
import pytest

import nbeval
from nbeval.cli import build_parser
from nbeval.commands import Command, MagicSpelling, all_commands, arg
from nbeval.data import fields, jsonio
from nbeval.errors import MissingDependency
from nbeval.evaluators.base import EvaluatorSpec, MetricSpec, Param
from nbeval.evaluators.registry import builtin_specs, get_class, get_spec
from nbeval.results import record
from nbeval.serve import dbgpt

markdown_it = pytest.importorskip("markdown_it")


@pytest.fixture(scope="module")
def evaluators_md() -> str:
    return ref.PAGES["evaluators.md"]()


@pytest.fixture(scope="module")
def cli_md() -> str:
    return ref.PAGES["cli.md"]()


@pytest.fixture(scope="module")
def formats_md() -> str:
    return ref.PAGES["formats.md"]()


# -- reading the pages back --------------------------------------------------------------------


def section(page: str, heading: str) -> str:
    """The text under the heading line ``heading`` up to the next heading of its level or above."""
    lines = page.splitlines()
    assert heading in lines, f"no heading {heading!r}"
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if re.match(r"#+ ", lines[i]) and len(lines[i]) - len(lines[i].lstrip("#")) <= level
        ),
        len(lines),
    )
    return "\n".join(lines[start + 1 : end])


def cells(line: str) -> list[str]:
    """The cells of a Markdown table row, unescaped, code spans as their text."""
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [re.sub(r"\\(.)", r"\1", re.sub(r"(?<!\\)`+", "", p)).strip() for p in parts]


def rows(part: str) -> Iterator[list[str]]:
    for line in part.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            yield cells(line)


def tables(part: str) -> list[str]:
    """The Markdown tables of ``part``, in order."""
    return re.findall(r"^\|.*?(?=\n[^|]|\Z)", part, re.M | re.S)


def row_for(part: str, first: str) -> list[str]:
    """The table row of ``part`` whose first cell is ``first``."""
    found = [r for r in rows(part) if r and r[0] == first]
    assert len(found) == 1, f"{len(found)} rows for {first!r}"
    return found[0]


def bound(text: str) -> float:
    text = text.strip()
    return math.inf if text == "∞" else -math.inf if text == "−∞" else float(text)


def threshold(text: str) -> float | None:
    return None if text == "—" else float(text)


def html(markdown: str) -> str:
    return str(markdown_it.MarkdownIt("commonmark").enable("table").render(markdown))


# -- the evaluator catalogue -------------------------------------------------------------------


def declared_spec(id: str) -> EvaluatorSpec:
    """The evaluator's spec as its class declares it (the page reads the index); a class whose
    module needs a package that is not installed is read from the catalogue."""
    try:
        return get_class(id).spec
    except MissingDependency:
        return get_spec(id)


def test_every_builtin_evaluator_has_its_section_with_its_declared_metrics_and_parameters(evaluators_md):
    ids = sorted(builtin_specs())
    assert len(ids) > 40
    headings = [line for line in evaluators_md.splitlines() if line.startswith("### ")]
    assert len(headings) == len(ids)
    for id in ids:
        spec = declared_spec(id)
        part = section(evaluators_md, f"### {ref.text(id)}")
        assert f"- **Inputs:** {ref.codes(spec.inputs)}" in part
        for m in spec.metrics:
            name = f"{m.name} (primary)" if m.name == spec.primary.name else m.name
            _, direction, span, default, description = row_for(part, name)
            assert direction == f"{m.direction} is better", (id, m.name)
            lo, hi = (bound(x) for x in span.strip("[]()").split(","))
            assert (lo, hi) == (m.lo, m.hi), (id, m.name)
            assert threshold(default) == m.threshold, (id, m.name)
            assert description == " ".join(m.description.split())
        for p in spec.params.declared:
            assert row_for(part, p.name)[1:3] == [p.type_name, repr(p.default)], (id, p.name)
        if not spec.params:
            assert "**Parameters**" not in part


def test_the_overview_names_each_evaluator_s_family_kind_inputs_and_primary_metric(evaluators_md):
    overview = section(evaluators_md, "## Overview")
    for id in builtin_specs():
        spec = declared_spec(id)
        found = [r for r in rows(overview) if r[0].startswith(f"{{ref}}{id} <")]
        assert len(found) == 1, id
        assert found[0][1:] == [spec.family, spec.kind, ", ".join(spec.inputs) or "—", spec.primary.name]


HOSTILE = "a | pipe, <script>alert(1)</script>, `tick` *star* [link](http://example.com) {ref}`x` $math$ & &amp;"


def hostile_spec() -> EvaluatorSpec:
    return EvaluatorSpec(
        id="hostile",
        family="custom",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("m", primary=True, description=HOSTILE),),
        params=(Param("p", str, "<b>|`", HOSTILE),),
        description=HOSTILE,
    )


def test_hostile_text_in_a_declaration_is_shown_as_text():
    page = ref.evaluators_page({"hostile": hostile_spec()})
    out = html(page)
    assert "<script>" not in out
    assert "<a href" not in out
    assert "<em>" not in out
    assert out.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 3  # the description, the parameter, the metric
    assert out.count("`tick`") == 3
    assert "{ref}`x`" in out
    # a | in the text splits no cell: every row of each table has its columns
    for table in re.findall(r"<table>.*?</table>", out, re.S):
        widths = {len(re.findall(r"<t[dh]>", tr)) for tr in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, table
    assert "<code>'&lt;b&gt;|`'</code>" in out  # the parameter's default, in a code span


@pytest.mark.parametrize(
    ("value", "shown"),
    [("- not a list", "<p>- not a list</p>"), ("1. not a list", "<p>1. not a list</p>"), ("# no", "<p># no</p>")],
)
def test_text_at_the_start_of_a_line_opens_no_block(value, shown):
    assert html(ref.text(value)).strip() == shown


def test_code_spans_hold_backticks_and_pipes():
    assert html(ref.code("a`b", in_table=False)).strip() == "<p><code>a`b</code></p>"
    assert html(ref.code("int | None", in_table=False)).strip() == "<p><code>int | None</code></p>"
    table = ref.table(["T"], [[ref.code("int | None")]])
    assert "<td><code>int | None</code></td>" in html(table)


# -- the command line ---------------------------------------------------------------------------


def leaf_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every parser of ``parser``'s tree that runs a command (has no subcommands of its own)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield parser
    for action in subs:
        for sub in action.choices.values():
            yield from leaf_parsers(sub)


def test_every_subcommand_and_every_option_of_the_parser_is_documented(cli_md):
    leaves = list(leaf_parsers(build_parser()))
    assert len(leaves) >= 10
    for parser in leaves:
        part = section(cli_md, f"## {ref.text(parser.prog)}")
        arguments = tables(part)[0]
        names = [r[0] for r in rows(arguments)]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if action.option_strings:
                first = ", ".join(action.option_strings) + (" (required)" if action.required else "")
            else:
                first = str(action.metavar or action.dest) + (" ..." if action.nargs in ("*", "+") else "")
            assert first in names, (parser.prog, first)
            row = row_for(arguments, first)
            shown = " ".join((action.help or "").split()).replace("`", "")  # words in backticks become code
            assert shown in row[3], (parser.prog, first)
            line = next(line for line in arguments.splitlines() if cells(line)[:1] == [first])
            for flag in re.findall(r"(?<![\w-])--[a-z][\w-]*", action.help or ""):
                assert f"`{flag}`" in line.split("|")[-2], (parser.prog, first, flag)  # flags in help are code
            default = action.default
            if action.option_strings and action.nargs != 0 and default not in (None, argparse.SUPPRESS):
                assert row[2] == repr(default), (parser.prog, first)
        assert f"```text\n{ref.usage(parser)}\n```" in part


def test_every_program_option_is_documented(cli_md):
    top = section(cli_md, "## nbeval")
    for action in build_parser()._actions:
        if action.option_strings and not isinstance(action, argparse._HelpAction):
            assert any(r[0] == ", ".join(action.option_strings) for r in rows(top)), action.option_strings


def test_each_command_s_magic_spelling_is_documented(cli_md):
    commands = all_commands()
    assert any(c.magic is not None for c in commands)
    for c in commands:
        if c.magic is None:
            continue
        if c.cli:
            part = section(cli_md, f"## nbeval {ref.text(c.name)}")
            assert f"**In a notebook:** `%nbeval {c.magic.name}`" in part
        else:
            part = section(cli_md, f"### %nbeval {ref.text(c.magic.name)}")
        assert f"%nbeval {c.magic.name}" in ref.usage(c.magic_parser())
        assert ref.usage(c.magic_parser()) in part
        for extra in c.magic.extra:
            assert any(r[0] == ", ".join(extra.flags) for r in rows(part)), (c.name, extra.flags)


class _Hostile(Command):
    name = "hostile"
    help = "help with | and <script>alert(1)</script> and `tick`"
    arguments = (arg("--flag", default="<b>|", help="a | b <script>x</script> `c`"),)
    magic = MagicSpelling("hostile", "summary | <script>y</script>", help={"flag": "<i>|</i>"})


def test_hostile_text_in_a_command_is_shown_as_text():
    commands = (_Hostile(),)
    out = html(ref.cli_page(build_parser(commands), commands))
    assert "<script>" not in out
    assert "<i>" not in out
    for table in re.findall(r"<table>.*?</table>", out, re.S):
        widths = {len(re.findall(r"<t[dh]>", tr)) for tr in re.findall(r"<tr>.*?</tr>", table, re.S)}
        assert len(widths) == 1, table
    assert "a | b &lt;script&gt;x&lt;/script&gt; <code>c</code>" in out


# -- formats ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [record.RunRecord, record.RunFacts, record.RunUsage, record.EvaluatorEntry])
def test_every_field_of_the_run_record_is_documented(formats_md, cls):
    part = section(formats_md, f"#### {cls.__name__}")
    documented = [r[0] for r in rows(part)][1:]  # the header row first
    assert documented == [f.name for f in dataclasses.fields(cls)]
    for f in dataclasses.fields(cls):
        assert row_for(part, f.name)[2], (cls.__name__, f.name)  # each has its description


def test_the_format_version_and_the_json_keys_of_meta_are_documented(formats_md):
    assert f"The current format version is **{record.FORMAT_VERSION}**" in formats_md
    for key in (*record.RUN_FACT_KEYS, *record.USAGE_KEYS):
        assert f"`{key}`" in formats_md, key
    for f in dataclasses.fields(record.JudgeFact):
        assert row_for(section(formats_md, "#### JudgeFact"), f.name)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("saved")
    data = [{"key": "q1", "input": "2+2?", "expected_output": "4", "actual_output": "4"}]
    result = nbeval.evaluate(data, ["exact_match"], progress=False, cache=False)
    assert isinstance(result, nbeval.EvaluationResult)
    result.save(folder / "run", label="docs")
    return folder / "run"


def test_every_file_and_key_of_a_saved_result_is_documented(formats_md, saved):
    part = section(formats_md, "## Saved results")
    files = sorted(p.name for p in saved.iterdir() if not p.name.startswith("."))
    assert "result.json" in files
    for name in files:
        assert f"| `{name}` |" in part, name
    info = json.loads((saved / "result.json").read_text(encoding="utf-8"))
    documented = [r[0] for r in rows(section(formats_md, "### result.json"))]
    for key in info:
        assert key in documented, key
    for key in info["save"]["files"]:
        assert f"`{key}`" in part, key
    record_fields = {f.name for f in dataclasses.fields(record.RunRecord)}
    for key in info["meta"]:
        assert key in record_fields, key
    facts = [r[0] for r in rows(section(formats_md, "#### RunFacts"))]
    for key in info["meta"]["run"]:
        assert key in facts, key


def test_every_shape_the_readers_recognise_is_documented(formats_md):
    part = section(formats_md, "## Suites and datasets")
    shapes = [s for s in typing.get_args(jsonio.Shape) if s != "unknown"]
    assert "suite" in shapes
    for shape in shapes:
        row = row_for(part, shape)
        assert row[2] == ("yes" if shape in jsonio.SUITE_SHAPES else "—"), shape
        example = section(formats_md, f"#### {shape}")
        body = re.search(r"```json\n(.*)\n```", example, re.S)
        assert body is not None, shape
        assert jsonio.json_shape(json.loads(body.group(1))) == shape
    documented = [r[0] for r in rows(section(formats_md, "### Row fields"))]
    for name in fields.ROW_FIELDS:
        assert name in documented, name


def test_the_dbgpt_request_and_answer_are_documented(formats_md):
    part = section(formats_md, "## The service's DB-GPT endpoint")
    assert dbgpt.__name__  # the module the page reads
    from nbeval.serve.app import DBGPT_PATH

    assert f"POST {DBGPT_PATH}" in part
    for model in (dbgpt.DbgptRequest, dbgpt.DbgptContext, dbgpt.DbgptItem):
        table = section(part, f"#### {model.__name__}")
        documented = [r[0] for r in rows(table)][1:]
        assert documented == list(model.model_fields), model.__name__
    for key in dbgpt.envelope():
        assert f"`{key}`" in part
    for name in dbgpt.METRICS:
        assert row_for(part, name)
    answers = re.findall(r"```json\n(.*?)\n```", section(part, "### Example"), re.S)
    request, answer = (json.loads(a) for a in answers)
    dbgpt.DbgptRequest.model_validate(request)
    assert answer["success"] is True
    assert answer["data"][0][0]["score"] == 1.0


# -- the extension ------------------------------------------------------------------------------


class _App:
    def __init__(self, srcdir: Path) -> None:
        self.srcdir = srcdir
        self.handlers: dict[str, Any] = {}
        self.transforms: list[Any] = []

    def connect(self, event: str, handler: Any) -> None:
        self.handlers[event] = handler

    def add_transform(self, transform: Any) -> None:
        self.transforms.append(transform)


def test_the_extension_writes_the_pages_when_the_builder_starts(tmp_path):
    app = _App(tmp_path)
    meta = ref.setup(app)
    assert meta["parallel_read_safe"] is True
    app.handlers["builder-inited"](app)
    written = sorted(p.name for p in (tmp_path / "reference").iterdir())
    assert written == sorted(ref.PAGES)
    for name in written:
        assert (tmp_path / "reference" / name).read_text(encoding="utf-8").splitlines()[0] == ref.GENERATED_MARK


def test_an_unchanged_page_is_not_written_again(tmp_path, monkeypatch):
    monkeypatch.setattr(ref, "PAGES", {"a.md": lambda: f"{ref.GENERATED_MARK}\n# A\n"})
    assert ref.write_pages(tmp_path) == [tmp_path / "a.md"]
    assert ref.write_pages(tmp_path) == []
    (tmp_path / "a.md").write_text("edited by hand\n", encoding="utf-8")
    assert ref.write_pages(tmp_path) == [tmp_path / "a.md"]


def test_every_cross_reference_has_its_target(evaluators_md, cli_md, formats_md):
    pages = evaluators_md + cli_md + formats_md
    targets = set(re.findall(r"^\(([a-z0-9-]+)\)=$", pages, re.M))
    refs = set(re.findall(r"\{ref\}`[^`]*<([^<>`]+)>`", pages))
    assert refs
    assert refs <= targets
    assert len(re.findall(r"^\(([a-z0-9-]+)\)=$", pages, re.M)) == len(targets)  # each label once


def test_flags_and_environment_variables_in_help_are_code():
    shown = ref.help_text("repeat it (--judge a --judge b, -e x) or set NBEVAL_JUDGE_MODEL; re-run a comma-list")
    assert shown == "repeat it (`--judge` a `--judge` b, `-e` x) or set `NBEVAL_JUDGE_MODEL`; re-run a comma-list"
    assert ref.help_text("run `nbeval complete` first, <b>") == "run `nbeval complete` first, \\<b\\>"


def test_the_pages_build_without_a_warning_and_keep_their_quotes_and_dashes(tmp_path):
    pytest.importorskip("myst_parser")
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['myst_parser', 'nbeval_reference']\nnitpicky = True\n")
    index = '# Docs\n\nA "quoted" word -- and a dash.\n\n```{toctree}\n:glob:\n\nreference/*\nzz_after\n```\n'
    (src / "index.md").write_text(index, encoding="utf-8")
    (src / "zz_after.md").write_text('# After\n\nA "quoted" word, read after the generated pages.\n', encoding="utf-8")
    warnings = io.StringIO()
    app = Sphinx(
        str(src), str(src), str(tmp_path / "out"), str(tmp_path / "doctrees"), "html", status=None, warning=warnings
    )
    app.build()
    assert warnings.getvalue() == ""
    out = tmp_path / "out"
    evaluators = (out / "reference" / "evaluators.html").read_text(encoding="utf-8")
    assert "unit=&quot;chunk&quot;" in evaluators or 'unit="chunk"' in evaluators
    assert "“chunk”" not in evaluators
    formats = (out / "reference" / "formats.html").read_text(encoding="utf-8")
    assert "DB-GPT metric name -&gt; (nbeval" in formats  # not an en dash
    for page in ("index.html", "zz_after.html"):  # the pages read before and after them keep Sphinx's quotes
        assert "“quoted”" in (out / page).read_text(encoding="utf-8"), page
