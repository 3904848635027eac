"""Results: the long table of scores and everything derived from it.

:mod:`.result` (``EvaluationResult``), :mod:`.loading` (``load_result``), :mod:`.leaderboard`,
:mod:`.insights` (problems, insights), :mod:`.report` (the HTML report), :mod:`.outcome` (the
engine's per-row record) and :mod:`.renderers` (where the notebook kit plugs in its charts).
"""

from nbeval.results.result import SCORE_COLUMNS, EvaluationResult
from nbeval.results.storage.loading import load_result

__all__ = ["SCORE_COLUMNS", "EvaluationResult", "load_result"]
