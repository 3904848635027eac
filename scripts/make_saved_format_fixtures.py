"""Writes tests/results/saved_formats/: result folders saved by earlier nbeval commits, one per format.

For each commit it makes a scratch git worktree, runs this same file in ``--child`` mode with that
worktree first on ``PYTHONPATH`` (so ``import nbeval`` is the old code, checked by its ``__file__``),
evaluates a tiny dataset (3 test cases x 2 models, one non-ASCII answer, one row without
``expected_output``) with ``exact_match``, ``rouge`` and the ``correctness`` judge on a
Python-function judge, and saves it with that version's own ``result.save``: once per
``scores_format`` the version knows (Parquet and JSONL), with human labels where it has
``set_labels`` and a run label where ``save`` takes ``label=``. Next to each folder's files it writes
``expected.json``: the old code's in-memory result (scores, aggregates, dataset rows, labels, meta)
and the ``meta`` its ``result.json`` holds, read with plain ``json`` in the old process, so that
tests/results/test_saved_formats.py compares today's reading with what the old code had, not with
today's own idea of it. The worktrees are removed at the end.

    .venv/bin/python scripts/make_saved_format_fixtures.py            # the default commits
    .venv/bin/python scripts/make_saved_format_fixtures.py 6253e6b 32b5fad --out /tmp/formats
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "results" / "saved_formats"

#: The commits saved by default, oldest first. c114b9f, the first format's first commit, has no
#: evaluator modules yet (its catalogue names nbeval.evaluators.lexical, which it lacks), so the
#: first format is saved by 6253e6b, the same day's first commit with deterministic and judge evaluators.
COMMITS = ("6253e6b", "903b218", "1d9f469", "fabc2f4", "32b5fad")

#: The dataset every commit evaluates: 3 test cases x 2 models; q2 is not ASCII, q3 has no expected output.
ROWS: list[dict[str, str]] = [
    {
        "key": "q1",
        "model_key": "m1",
        "input": "Capital of France?",
        "actual_output": "Paris",
        "expected_output": "Paris",
    },
    {
        "key": "q2",
        "model_key": "m1",
        "input": "Größte Stadt der Schweiz?",
        "actual_output": "Zürich ist groß — ja",
        "expected_output": "Zürich ist groß",
    },
    {"key": "q3", "model_key": "m1", "input": "Say hi", "actual_output": "hello there"},
    {
        "key": "q1",
        "model_key": "m2",
        "input": "Capital of France?",
        "actual_output": "paris",
        "expected_output": "Paris",
    },
    {
        "key": "q2",
        "model_key": "m2",
        "input": "Größte Stadt der Schweiz?",
        "actual_output": "Zürich ist groß",
        "expected_output": "Zürich ist groß",
    },
    {"key": "q3", "model_key": "m2", "input": "Say hi", "actual_output": "hi"},
]
EVALUATORS = ["exact_match", "rouge", "correctness"]
#: Human labels of the judge's verdicts, saved where the version has ``set_labels``.
LABELS = [
    {"key": "q1", "model_key": "m1", "evaluator": "correctness", "label": "pass"},
    {"key": "q2", "model_key": "m1", "evaluator": "correctness", "label": "fail"},
]
DATASET_FIELDS = ("key", "model_key", "input", "actual_output", "expected_output")


def judge(prompt: str) -> str:
    """The judge: a plain function, so no model and no network (it fails the answer with an extra 'ja')."""
    if "— ja" in prompt:
        return "Verdict: no\nRationale: the answer adds words the expected answer does not have."
    return "Verdict: yes\nRationale: the answer means the same as the expected answer."


def plain(value: Any) -> Any:
    """``value`` as JSON: numpy scalars as Python, NaN and missing as ``None``."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def table(frame: Any) -> list[dict[str, Any]]:
    """A DataFrame's rows as JSON objects."""
    cols = [str(c) for c in frame.columns]
    return [dict(zip(cols, (plain(v) for v in rec), strict=True)) for rec in frame.itertuples(index=False, name=None)]


def child(worktree: Path, out: Path, commit: str) -> None:
    """Run inside the old commit's process: evaluate, save each variant under ``out``, write expected.json."""
    import nbeval

    where = Path(nbeval.__file__).resolve()
    if not where.is_relative_to(worktree.resolve()):
        raise SystemExit(f"nbeval imported from {where}, not from the worktree {worktree}")
    evaluate: Any = nbeval.evaluate  # an old commit's, whose signature today's types do not know
    wanted = {"progress": False, "judge": judge, "cache": False}
    accepted = inspect.signature(evaluate).parameters
    result = evaluate(ROWS, EVALUATORS, **{k: v for k, v in wanted.items() if k in accepted})
    labelled = hasattr(result, "set_labels")
    if labelled:
        result.set_labels(LABELS)
    save_params = inspect.signature(result.save).parameters
    formats = ["parquet", "jsonl"] if "scores_format" in save_params else [None]
    for fmt in formats:
        kwargs: dict[str, Any] = {} if fmt is None else {"scores_format": fmt}
        if "label" in save_params:
            kwargs["label"] = f"fixture {commit}"
        tmp = out / f".saving-{fmt or 'jsonl'}"
        result.save(tmp, **kwargs)
        saved = json.loads((tmp / "result.json").read_text(encoding="utf-8"))
        version = saved["meta"].get("format_version", 1)
        folder = out / f"v{version}_{commit}_{fmt or 'jsonl'}"
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
        call = ", ".join(["folder", *(f"{k}={v!r}" for k, v in kwargs.items())])
        expected = {
            "commit": commit,
            "nbeval_version": nbeval.__version__,
            "save_call": f"result.save({call})",
            "variant": fmt or "jsonl",
            "files": sorted(p.name for p in folder.iterdir()),
            "meta_saved": saved["meta"],
            "meta_in_memory": plain(result.meta),
            "model_labels": plain(getattr(result, "model_labels", {})),
            "score_columns": [str(c) for c in result.scores.columns],
            "scores": table(result.scores),
            "aggregates": table(result.aggregates[["model_key", "evaluator", "metric", "value", "n", "N"]]),
            "dataset": [{f: plain(getattr(row, f, None)) for f in DATASET_FIELDS} for row in result.dataset],
            "labels": table(result.labels) if labelled else None,
        }
        text = json.dumps(expected, ensure_ascii=False, sort_keys=True) + "\n"
        (folder / "expected.json").write_text(text, encoding="utf-8")
        print(f"{commit}: wrote {folder.name} ({sum(p.stat().st_size for p in folder.iterdir()):,} bytes)")


def git(*args: str) -> str:
    """Run git on this repository and return its output."""
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def make(commits: Sequence[str], out: Path) -> None:
    """Save each commit's folders into ``out`` (earlier folders of the same commits replaced)."""
    out.mkdir(parents=True, exist_ok=True)
    for commit in commits:
        short = git("rev-parse", "--short=7", commit)
        for old in out.glob(f"v*_{short}_*"):
            shutil.rmtree(old)
        worktree = Path(tempfile.gettempdir()) / f"old-{short}"
        git("worktree", "add", "-q", "--detach", str(worktree), short)
        try:
            env = dict(os.environ, PYTHONPATH=str(worktree), HF_HUB_OFFLINE="1")
            argv = [sys.executable, str(Path(__file__).resolve()), "--child", str(worktree), str(out), short]
            subprocess.run(argv, cwd=worktree, env=env, check=True, timeout=600)
        finally:
            git("worktree", "remove", "--force", str(worktree))
            git("worktree", "prune")


def main(argv: list[str]) -> int:
    """Parse the arguments and write the folders (``--child`` is this script's own inner step)."""
    if argv[:1] == ["--child"]:
        child(Path(argv[1]), Path(argv[2]), argv[3])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("commits", nargs="*", default=list(COMMITS), help="commits to save with (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write into (default: %(default)s)")
    args = parser.parse_args(argv)
    make(args.commits, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
