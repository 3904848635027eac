"""Results: the long table of scores and everything derived from it, in rooms by concern.

The rooms, top to bottom (each imports only the ones below it; pyproject.toml's contract for
``nbeval.results`` holds them to it):

- :mod:`.runs`: results over time: the registry of the runs saved in a folder
  (:mod:`.runs.registry`) and the diff of two runs (:mod:`.runs.diff`, with its coverage and gate).
- :mod:`.live`: the result of a run still going, read while it grows.
- :mod:`.result`: :class:`EvaluationResult`, the table with its methods; each method asks the
  room that does the work.
- :mod:`.reporting`: what a result says to a person: the HTML report, the plain-text summaries,
  problems and insights, how numbers are written, and the CI gate.
- :mod:`.leaderboard`: one row per model, with intervals and arena ratings.
- :mod:`.statistics`: intervals, paired comparisons, agreement with people and among jurors, the
  arena fit, robustness to perturbation, which rows to label next.
- :mod:`.storage`: a result on disk: saving a folder whole or not at all, loading and checking it
  (:func:`load_result`), labels, and the limits on the text a result keeps; beside it the tables a
  folder holds (:mod:`.score_table`, :mod:`.aggregates`) and the run facts (:mod:`.run_facts`).
- At the bottom, :mod:`.outcome` (the engine's per-row record) and :mod:`.renderers` (where the
  notebook kit plugs in its charts; the core never imports the kit).

One import points up, on purpose: loading builds the :class:`EvaluationResult` it has read.
"""

from nbeval.results.result import SCORE_COLUMNS, EvaluationResult
from nbeval.results.storage.loading import load_result

__all__ = ["SCORE_COLUMNS", "EvaluationResult", "load_result"]
