"""The flipped rows of a run diff, both runs side by side, escaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbeval
import nbeval.widgets as nw
from nbeval.widgets.flip_view import flip_html


def _records(wrong: set[int]) -> list[dict[str, Any]]:
    return [
        {
            "key": f"c{i}",
            "model_key": "m",
            "input": f"question {i}",
            "expected_output": f"a{i}",
            "actual_output": f"<script>b{i}</script>" if i in wrong else f"a{i}",
        }
        for i in range(6)
    ]


def _diff(tmp_path: Path) -> Any:
    before = nbeval.evaluate(_records(set()), ["exact_match", "rouge"], progress=False)
    after = nbeval.evaluate(_records({1, 4}), ["exact_match", "rouge"], progress=False)
    return nbeval.diff(before.save(tmp_path / "before"), after.save(tmp_path / "after"))


def test_a_flipped_row_shows_both_answers_and_both_verdicts(tmp_path: Path) -> None:
    d = _diff(tmp_path)
    assert sorted(set(d.flips["key"])) == ["c1", "c4"]
    html = flip_html(d, "c1", "m")
    assert "question 1" in html and "a1" in html  # the case, and the earlier answer
    assert "&lt;script&gt;b1&lt;/script&gt;" in html and "<script>" not in html  # the later one, escaped
    body = html[html.index("<tbody>") :]
    # the answer first, then the flipped evaluators, marked, before the others
    assert body.index("answer") < body.index("(flipped)")
    flipped = [e for e in ("exact_match", "rouge") if f"{e} (flipped)" in body]
    assert flipped and all(body.index(f"{e} (flipped)") < body.index("</tbody>") for e in flipped)


def test_the_flip_explorer_lists_every_flipped_row(tmp_path: Path) -> None:
    explorer = nw.FlipExplorer(_diff(tmp_path))
    assert [v for _, v in explorer.picker.options] == [("c1", "m"), ("c4", "m")]
    assert "question 1" in explorer.view.value
    explorer.picker.value = ("c4", "m")
    assert "question 4" in explorer.view.value and "&lt;script&gt;b4" in explorer.view.value
    explorer.select("c0", "m")  # a row that did not flip shows all the same
    assert "question 0" in explorer.view.value and "(flipped)" not in explorer.view.value


def test_a_verdict_that_is_not_known_shows_without_a_tint() -> None:
    import pandas as pd

    from nbeval.widgets.flip_view import _verdict

    unrated = pd.Series(
        {
            "skipped": False,
            "passed": pd.NA,
            "value": float("nan"),
            "rationale": None,
            "error": "the judge's reply could not be read",
        }
    )
    html = _verdict(unrated, 100)
    assert "could not be read" in html and "background" not in html
