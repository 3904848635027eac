"""Issue 43, point 13: head-to-head verdicts edited after saving do not load.

A result of ``pairwise`` over three models and two cases is saved (the judge is the loopback fake
server, preferring the longer answer); one verdict in ``scores.parquet`` is then changed the way a
person editing the file would, and loading must name the file, the row and ``details``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.errors import DataError
from nbeval.results.storage.columnar import read_scores_parquet, write_scores_parquet
from tests.judges.test_pairwise import ANSWERS, longer_wins, records
from tests.support.fake_openai import FakeOpenAIServer

Edit = Callable[[list[dict[str, Any]], str], None]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with FakeOpenAIServer() as server:
        server.reply = longer_wins
        judge = {"model": "judge-model", "base_url": server.url, "api_key": "sk-judge-test-key-123456"}
        res = nbeval.evaluate(records(ANSWERS), ["pairwise"], judge=judge, progress=False, cache=False)
    return Path(res.save(tmp_path_factory.mktemp("pairwise") / "run"))


def _tampered(saved: Path, tmp_path: Path, key: str, model: str, edit: Edit) -> tuple[Path, int]:
    """A copy of ``saved`` whose row (``key``, ``model``) has its verdicts changed by ``edit``;
    returns the folder and that row's number (its position, from 1)."""
    import shutil

    folder = tmp_path / "edited"
    shutil.copytree(saved, folder)
    path = folder / "scores.parquet"
    scores = read_scores_parquet(path)
    where = scores.index[(scores.key == key) & (scores.model_key == model)][0]
    details = json.loads(scores.at[where, "details"])
    edit(details["verdicts"], model)
    scores["details"] = scores["details"].astype(object)
    scores.at[where, "details"] = json.dumps(details)
    write_scores_parquet(path, scores)
    return folder, int(scores.index.get_loc(where)) + 1


def _rename_first(verdicts: list[dict[str, Any]], model: str) -> None:
    v = next(v for v in verdicts if v["first"] != model)
    v["first"] = "m9"


def _flip_one_row(verdicts: list[dict[str, Any]], model: str) -> None:
    v = next(v for v in verdicts if v["winner"] in ("A", "B"))
    v["winner"] = "B" if v["winner"] == "A" else "A"


def _bad_winner(verdicts: list[dict[str, Any]], model: str) -> None:
    verdicts[0]["winner"] = "A+"


def _not_the_rows_model(verdicts: list[dict[str, Any]], model: str) -> None:
    others = sorted({"m1", "m2", "m3"} - {model})
    verdicts.append({**verdicts[0], "first": others[0], "second": others[1]})


def _added_on_one_row(verdicts: list[dict[str, Any]], model: str) -> None:
    v = next(v for v in verdicts if v["first"] == model)
    verdicts.append({**v, "judge": "another-judge", "winner": "A"})


def _twice(verdicts: list[dict[str, Any]], model: str) -> None:
    verdicts.append(dict(verdicts[0]))


def _against_itself(verdicts: list[dict[str, Any]], model: str) -> None:
    verdicts[0]["first"] = verdicts[0]["second"] = model


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_rename_first, "names model 'm9', which has no row"),
        (_flip_one_row, "names winner"),
        (_bad_winner, "winner must be A, B, tie or null"),
        (_not_the_rows_model, "which is neither"),
        (_added_on_one_row, "is not on the row of"),
        (_twice, "filed twice"),
        (_against_itself, "with itself"),
    ],
)
def test_an_edited_verdict_does_not_load(saved: Path, tmp_path: Path, edit: Edit, says: str) -> None:
    folder, row = _tampered(saved, tmp_path, "c1", "m1", edit)
    with pytest.raises(DataError) as caught:
        nbeval.load_result(folder)
    error = caught.value
    assert says in str(error)
    assert error.field == "details" and Path(str(error.source)).name == "scores.parquet"
    # the flipped verdict is reported on whichever of its two rows is read first
    assert error.row == row or edit in (_flip_one_row, _added_on_one_row)


def test_the_untouched_result_loads_and_rates_the_same(saved: Path) -> None:
    again = nbeval.load_result(saved)
    # by hand: m3 wins 6 of its 8 verdicts, m1 4 (all of c2), m2 2 (against m1 in c1)
    assert again.arena(n_boot=0).model_key.tolist() == ["m3", "m1", "m2"]
