"""Embedding evaluators of a text's structure: step alignment and summary completeness.

They are a procedure's steps aligned with the context's (``step_alignment``, see :mod:`.steps`)
and the spread of a summary over its source (``summarization_completeness``, see
:mod:`.geometry`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from nbeval.data.text import split_sentences
from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Embed, EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.embedding.base import EmbeddingEvaluator, chunk_texts
from nbeval.evaluators.embedding.geometry import completeness
from nbeval.evaluators.embedding.steps import align_steps, steps_of
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from collections.abc import Generator

    from nbeval.data.model import Row

__all__ = ["StepAlignment", "SummarizationCompleteness"]


@register
class StepAlignment(EmbeddingEvaluator):
    """Edit operations between the context's procedure and the answer's (see :mod:`.steps`)."""

    spec = EvaluatorSpec(
        id="step_alignment",
        family="embedding",
        kind="score",
        inputs=("context", "actual_output"),
        resources=("embedder",),
        description=(
            "Checks a procedure in the answer against the one in the retrieved context. Numbered, "
            "bulleted and first/then/finally steps are extracted from both; the answer's steps are "
            "aligned with the context's by dynamic programming, two steps matching when their similarity "
            "is at least `cutoff` (default 0.5, set for all-MiniLM-L6-v2, where reworded steps mostly "
            "score 0.5-0.95 and unrelated ones 0.1-0.4; raise it for models whose similarities run "
            "higher); the row counts the edits needed to turn the answer's sequence into the context's. "
            "The alignment itself is the rationale. The four counts keep the contract's threshold of "
            "0.75: on a whole count a row passes only with none, and a model's mean passes with fewer "
            "than 3 edits in 4 rows."
        ),
        params=(
            Param(
                "cutoff", float, 0.5, "the least similarity (-1 to 1) at which an answer step matches a context step"
            ),
        ),
        metrics=(
            MetricSpec(
                "edits",
                "lower",
                lo=0.0,
                hi=math.inf,
                threshold=0.75,
                primary=True,
                description="insertions + deletions + mismatches",
            ),
            MetricSpec(
                "insertions",
                "lower",
                lo=0.0,
                hi=math.inf,
                threshold=0.75,
                description="context steps missing from the answer",
            ),
            MetricSpec(
                "deletions", "lower", lo=0.0, hi=math.inf, threshold=0.75, description="answer steps not in the context"
            ),
            MetricSpec(
                "mismatches",
                "lower",
                lo=0.0,
                hi=math.inf,
                threshold=0.75,
                description="aligned step pairs below the cut-off (substitutions)",
            ),
            MetricSpec("context_steps", lo=0.0, hi=math.inf, description="steps found in the retrieved context"),
            MetricSpec("answer_steps", lo=0.0, hi=math.inf, description="steps found in the answer"),
        ),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        cutoff = self.params.get("cutoff")
        if isinstance(cutoff, bool) or not isinstance(cutoff, (int, float)) or not -1.0 <= cutoff <= 1.0:
            msg = f"step_alignment: cutoff must be a similarity between -1 and 1, got {cutoff!r}"
            raise EvaluatorError(msg)
        self.cutoff = float(cutoff)

    def score(self, row: Row) -> Generator[Embed, Any, Score]:
        """Align the answer's enumerated steps with the retrieved context's and count the edits.

        A context without enumerated steps leaves the edit counts without a value.
        """
        # Tuples (the cached ones) while the scorer waits for its vectors, never lists: a waiting
        # scorer's lists are tracked by the garbage collector and promoted with it (see
        # ``evaluators._sentences_of``); the details get lists once the vectors are in.
        ctx = steps_of("\n\n".join(chunk_texts(row.context)))
        act = steps_of(row.actual_output or "")
        counts = {"context_steps": float(len(ctx)), "answer_steps": float(len(act))}
        if not ctx:
            none = dict.fromkeys(("edits", "insertions", "deletions", "mismatches"))
            return Score(
                {**none, **counts},
                rationale="no enumerated steps found in the retrieved context; nothing to align with",
            )
        sim = np.zeros((len(ctx), 0))
        if act:
            v = yield self.embed(ctx + act)
            sim = v[: len(ctx)] @ v[len(ctx) :].T
        al = align_steps(sim, self.cutoff)
        values: dict[str, float | None] = {
            "edits": float(al.edits),
            "insertions": float(al.insertions),
            "deletions": float(al.deletions),
            "mismatches": float(al.mismatches),
            **counts,
        }
        ctx_list, act_list = list(ctx), list(act)
        details = {"context_steps": ctx_list, "answer_steps": act_list, "alignment": al.to_dict()}
        return Score(values, rationale=al.describe(ctx_list, act_list), details=details)


@register
class SummarizationCompleteness(EmbeddingEvaluator):
    """Geometric completeness of the answer as a summary of the input (see :mod:`.geometry`)."""

    spec = EvaluatorSpec(
        id="summarization_completeness",
        family="embedding",
        kind="score",
        inputs=("input", "actual_output"),
        resources=("embedder",),
        description=(
            "Geometric completeness of a summary (the answer) of a source text (the input): source and "
            "summary sentences are embedded, projected to 2-D with UMAP when the source has at least "
            "`min_sentences_for_umap` sentences, summary sentences snap to nearby source sentences or are "
            "dropped as ungrounded, and the score is the ratio of the spread (a three-segment path "
            "length) of the summary's points to that of the source's. A one-sentence summary spans no "
            "distance and scores 0."
        ),
        params=(
            Param(
                "min_sentences_for_umap",
                int,
                10,
                "distinct source sentences needed before the points are reduced with UMAP (at least 3)",
            ),
        ),
        metrics=(
            MetricSpec(
                "completeness",
                threshold=0.75,
                primary=True,
                description=("spread of the grounded summary sentences over the spread of the source sentences"),
            ),
        ),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        n = self.params.get("min_sentences_for_umap")
        if isinstance(n, bool) or not isinstance(n, int) or n < 3:
            msg = f"summarization_completeness: min_sentences_for_umap must be an integer >= 3, got {n!r}"
            raise EvaluatorError(msg)
        self.min_points = n

    def score(self, row: Row) -> Generator[Embed, Any, Score]:
        """Score the spread of the grounded summary sentences over the spread of the source's.

        A source text without sentences has no value.
        """
        # tuples while waiting for the vectors, as above
        src, summ = tuple(split_sentences(row.input)), tuple(split_sentences(row.actual_output))
        if not src:
            return Score({"completeness": None}, rationale="the source text has no sentences")
        v = yield self.embed(src + summ)
        res = completeness(v[: len(src)], v[len(src) :], min_points=self.min_points)
        kept = sum(s is not None for s in res.snapped)
        how = "UMAP 2-D" if res.reduced else "embedding space"
        return Score(
            {"completeness": res.value},
            rationale=f"{kept} of {len(summ)} summary sentence(s) grounded in the {len(src)}-sentence source; "
            f"spread {res.summary_distance:.3f} of {res.source_distance:.3f} ({how})",
            details=res.to_dict(),
        )
