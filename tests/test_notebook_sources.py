"""The percent-format reader of scripts/make_notebooks.py: the subset of jupytext's "percent"
format in which the tutorials' sources (notebooks/src/*.py) are written."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_notebooks_for_reader", ROOT / "scripts" / "make_notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _script()
Cell = MAKE.Cell

SOURCE = """\
# %% [markdown] id="intro"
# # A title
#
# Some *markdown*, with a `# %%` inside a sentence
#     and an indented line.

# %% id="load"
import json

data = json.loads('{"a": 1}')  # a comment
#not markdown, a code comment

# %% id="chart" tags=["chart", "nbval-check-output"]
# NBVAL_CHECK_OUTPUT
print(data)

# %% id="magic"
%%nbeval_suite faq
- prompt: "Hello?"

# %% [markdown] id="empty"

# %% id="unicode" tags=["×"]
"ünïcode"
"""

CELLS = [
    Cell(
        "markdown", "# A title\n\nSome *markdown*, with a `# %%` inside a sentence\n    and an indented line.", "intro"
    ),
    Cell("code", "import json\n\ndata = json.loads('{\"a\": 1}')  # a comment\n#not markdown, a code comment", "load"),
    Cell("code", "# NBVAL_CHECK_OUTPUT\nprint(data)", "chart", {"tags": ["chart", "nbval-check-output"]}),
    Cell("code", '%%nbeval_suite faq\n- prompt: "Hello?"', "magic"),
    Cell("markdown", "", "empty"),
    Cell("code", '"ünïcode"', "unicode", {"tags": ["×"]}),
]


def test_read_gives_the_cells_and_write_gives_the_source_back() -> None:
    assert MAKE.read_percent(SOURCE) == CELLS
    assert MAKE.write_percent(CELLS) == SOURCE
    assert MAKE.read_percent(MAKE.write_percent(CELLS)) == CELLS


def test_blank_lines_around_cells_and_metadata_spacing_are_not_significant() -> None:
    loose = '\n\n# %%   id="a"    tags=[ "x" ,"y" ]\n\n\nx = 1\n\n\n\n# %% [md] id="b"\n#\n# text\n#\n\n'
    assert MAKE.read_percent(loose) == [
        Cell("code", "x = 1", "a", {"tags": ["x", "y"]}),
        Cell("markdown", "\ntext\n", "b"),
    ]


def test_a_cell_without_metadata_has_no_id() -> None:
    assert MAKE.read_percent("# %%\n1\n# %% [markdown]\n# hi\n") == [Cell("code", "1"), Cell("markdown", "hi")]


def test_the_notebook_built_from_a_source_keeps_types_ids_sources_and_tags() -> None:
    nb = MAKE.build(MAKE.read_percent(SOURCE))
    got = [(c.cell_type, c.id, c.source, dict(c.metadata)) for c in nb.cells]
    assert got == [("markdown" if c.kind == "markdown" else "code", c.id, c.source, dict(c.metadata)) for c in CELLS]
    MAKE.nbformat.validate(nb)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x = 1\n# %%\n", ":1: text before the first cell marker"),
        ("# %% [raw]\nx\n", ":1: unknown cell type [raw]"),
        ("# %% A title\nx\n", ":1: expected key=value"),
        ("# %% id=c1\nx\n", ":1: the value of id is not JSON"),
        ('# %% id="a"tags=[]\nx\n', ":1: put a space after the value of id"),
        ('# %% id="a" id="b"\nx\n', ":1: id given twice"),
        ("# %% id=1\nx\n", ":1: id must be a string"),
        ('# %% [markdown] id="a"\n# fine\nnot a comment\n', ":3: a markdown line must start with '# '"),
        ('# %% id="a"\nx = 1\n#%%\n', ":3: write a cell marker as '# %%'"),
        ('# %% id="a"\nif x:\n    # %% indented\n    pass\n', ":3: write a cell marker as '# %%'"),
    ],
)
def test_what_is_outside_the_subset_is_an_error_with_its_line(text: str, message: str) -> None:
    with pytest.raises(MAKE.PercentFormatError) as info:
        MAKE.read_percent(text, "src.py")
    assert str(info.value).startswith("src.py:") and message in str(info.value)


def test_build_wants_an_id_on_every_cell_and_each_id_once() -> None:
    with pytest.raises(MAKE.PercentFormatError, match="cell 1 has no id"):
        MAKE.build(MAKE.read_percent('# %% id="a"\n1\n# %%\n2\n'), "src.py")
    with pytest.raises(MAKE.PercentFormatError, match="'a' is used twice"):
        MAKE.build(MAKE.read_percent('# %% id="a"\n1\n# %% id="a"\n2\n'), "src.py")
    with pytest.raises(MAKE.PercentFormatError, match="no cells"):
        MAKE.build(MAKE.read_percent("\n"), "src.py")


def test_write_refuses_what_it_could_not_read_back() -> None:
    with pytest.raises(ValueError, match="blank line"):
        MAKE.write_percent([Cell("code", "\nx = 1", "a")])
    with pytest.raises(ValueError, match="cell marker"):
        MAKE.write_percent([Cell("code", "x = 1\n# %% oops", "a")])
