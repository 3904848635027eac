"""Head to head: a judge compares two models' answers to the same test case.

``pairwise`` is case-level (:class:`~nbeval.evaluators.case.CaseEvaluator`): for each test case it
asks the judge about every pair of models (or every model against ``baseline=``), showing the
question and, where the row has them, the expected answer, the retrieved context and the
guidelines, then the two answers labelled A and B. With ``swap=True`` (the default) every pair is
asked in both orders, so a judge that favours whichever answer comes first is caught: the two
orders of a pair disagree (the pair is *inconsistent*), and the ratings of
:mod:`nbeval.results.statistics.arena` estimate that first-slot preference and remove it. Every question of a
case is sent at once (:class:`~nbeval.request_kinds.Gather`), batched with the rest of the run.

A reply is read by :func:`parse_pairwise`: a JSON object ``{"winner": "A" | "B" | "tie", ...}``
(which decides, whatever else the reply says), else a line ``Winner: A`` or MT-Bench's ``[[A]]`` /
``[[B]]`` / ``[[C]]`` (tie) outside quoted text. A reply that names no winner, or two different
ones, is a parse failure: that verdict is unrated and its raw reply kept, never counted as a win.
Verdict markers inside the answers are neutralised before the judge sees them
(:mod:`nbeval.evaluators.judges.pairwise_parse`), so an answer cannot cast its own verdict.

A verdict's judge is the judge the evaluator was configured with (its name, as a jury names its
jurors), or ``None`` for the run's judge, which the result names (``result.meta["run"]``): never
the model name a reply gives, which a server may vary from reply to reply.

Each model's row gets ``win_rate``: the share of its verdicts in the case that it won, a tie
counting half, over the verdicts that could be read. The row's details hold every verdict it took
part in (``first``, ``second``, ``winner`` as ``A``/``B``/``tie``/``None``, the judge and its
rationale) and, per opponent, whether the two orders agreed; ``result.arena()``,
``result.head_to_head()`` and ``result.position_bias()`` read them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.case import CaseEvaluator
from nbeval.evaluators.judges.core import JudgeEvaluator, JudgePrompt, row_values, usage_details
from nbeval.evaluators.judges.pairwise_parse import neutralise_markers, parse_pairwise
from nbeval.evaluators.jury import juror_name
from nbeval.evaluators.registry import register
from nbeval.request_kinds import Chat, Gather

if TYPE_CHECKING:
    from nbeval.chat.structured import VerdictSchema
    from nbeval.data.model import Row

__all__ = ["DEFAULT_CRITERIA", "PAIRWISE_PROMPT", "Pairwise", "Verdict", "parse_pairwise"]

#: What "better" means unless ``criteria=`` says otherwise.
DEFAULT_CRITERIA = (
    "The better answer is the one that serves the person who asked: it answers the question that was "
    "asked, is correct (consistent with the reference answer and the context when they are given), "
    "complete for what was asked, follows the guidelines when there are any, and is clear. Do not "
    "prefer an answer because it is longer, because of its position (A or B), or for its tone alone. "
    "Call it a tie when neither answer is better on balance."
)

_INSTRUCTION = (
    "You compare two answers to the same question and decide which one is better.\n\n"
    "What better means: {criteria}\n\n"
    "The two answers are labelled A and B in an arbitrary order."
)

#: The default prompt of ``pairwise``: the question, the reference answer, context and guidelines
#: where the row has them, answers A and B, and a JSON reply naming the winner (or a tie), judged
#: by :data:`DEFAULT_CRITERIA`.
PAIRWISE_PROMPT = JudgePrompt(
    instruction=_INSTRUCTION.format(criteria=DEFAULT_CRITERIA),
    inputs=(
        ("input", "question"),
        ("expected_output", "reference_answer"),
        ("context", "context"),
        ("guidelines", "guidelines"),
        ("answer_a", "answer_a"),
        ("answer_b", "answer_b"),
    ),
    output_format=(
        "Reply with one JSON object and nothing else: "
        '{"rationale": "<a few sentences comparing the answers>", "winner": "A" | "B" | "tie"}.'
    ),
)

#: Inputs shown only when the row has them (the question and both answers are always shown).
_OPTIONAL_INPUTS = frozenset({"expected_output", "context", "guidelines"})
#: Longest rationale kept per verdict in a row's details (the whole reply stays in the rationale).
_MAX_VERDICT_RATIONALE = 1_000


@dataclass(frozen=True)
class Verdict:
    """One single-order comparison: ``first`` was shown as A, ``second`` as B."""

    first: str
    second: str
    winner: str | None
    """``"A"``, ``"B"``, ``"tie"``, or None when the reply could not be read or the call failed."""
    rationale: str
    error: str | None
    judge: str | None
    """The configured judge's name; None for the run's judge (the result names it)."""

    def points(self, model_key: str) -> float | None:
        """What this verdict gives ``model_key``: 1 for a win, 0.5 for a tie, 0 for a loss."""
        if self.winner is None:
            return None
        if self.winner == "tie":
            return 0.5
        won = self.first if self.winner == "A" else self.second
        return 1.0 if won == model_key else 0.0

    def as_details(self) -> dict[str, Any]:
        """Give this verdict as a row's details keep it, in plain JSON-ready values.

        Its rationale is cut to ``_MAX_VERDICT_RATIONALE`` characters.
        """
        text = self.rationale
        if len(text) > _MAX_VERDICT_RATIONALE:
            text = text[: _MAX_VERDICT_RATIONALE - 1] + "…"
        return {
            "first": self.first,
            "second": self.second,
            "winner": self.winner,
            "judge": self.judge,
            "rationale": text,
            "error": self.error,
        }


def _agree(one: Verdict, other: Verdict) -> bool | None:
    """Whether two orders of one pair name the same model (or both a tie); None if either is unrated."""
    if one.winner is None or other.winner is None:
        return None
    return one.points(one.first) == other.points(one.first)


def _shown_order(case_key: str, a: str, b: str) -> bool:
    """With ``swap=False``, tell whether ``a`` is shown first, by a fixed coin toss per case and pair.

    The toss is of the pair as a set, so the dataset's row order does not matter; no model is always
    first and a rerun asks the same question (and hits the cache).
    """
    low, high = sorted((a, b))
    digest = hashlib.blake2b(f"{case_key}\0{low}\0{high}".encode(), digest_size=1).digest()
    return (digest[0] % 2 == 0) == (a == low)


@register
class Pairwise(JudgeEvaluator, CaseEvaluator):
    """A judge compares every pair of models' answers to each test case, in both orders."""

    spec = EvaluatorSpec(
        id="pairwise",
        family="judge",
        kind="score",
        inputs=("input", "actual_output"),
        optional_inputs=("expected_output", "context", "guidelines"),
        resources=("judge",),
        description=(
            "Head to head: for each test case a judge compares the answers of every pair of models (or of "
            "every model and a baseline), labelled A and B, and names the better one or a tie. Each pair "
            "is asked in both orders, so a preference for the first answer shows and is removed by "
            "result.arena(), which fits ratings with intervals. Each row's win_rate is the share of its "
            "comparisons in the case it won, a tie counting half."
        ),
        params=(
            Param("criteria", str, None, "what makes one answer better than the other (replaces the default)"),
            Param("baseline", str, None, "a model key: compare every other model with it instead of all pairs"),
            Param("swap", bool, True, "ask every pair in both orders (A/B and B/A)"),
        ),
        metrics=(
            MetricSpec(
                "win_rate",
                primary=True,
                # a share of comparisons is relative: one model's rise is another's fall, so no
                # threshold (no pass/fail, threshold problems or flips from a rival's change)
                threshold=None,
                description="share of this case's comparisons the model won (a tie counts half)",
            ),
        ),
    )

    default_prompt = PAIRWISE_PROMPT

    def reply_shape(self) -> VerdictSchema | None:
        """``"rationale"``, then ``"winner"``: ``"A"``, ``"B"`` or ``"tie"`` (its prompt's keys)."""
        from nbeval.chat.structured import choice_verdict

        return choice_verdict("winner", ("A", "B", "tie"), reason_key="rationale")

    def __init__(self, **params: Any) -> None:
        criteria = params.get("criteria")
        if criteria is not None and (not isinstance(criteria, str) or not criteria.strip()):
            msg = "evaluator 'pairwise': criteria must be a non-empty string saying what makes an answer better"
            raise EvaluatorError(msg)
        if criteria is not None and params.get("prompt") is not None:
            msg = "evaluator 'pairwise': give criteria= (what better means) or prompt= (the whole prompt), not both"
            raise EvaluatorError(msg)
        super().__init__(**params)
        if criteria is not None:
            self.prompt = self.prompt.replace(instruction=_INSTRUCTION.format(criteria=criteria.strip()))
        baseline = self.params.get("baseline")
        if baseline is not None and not isinstance(baseline, str):
            msg = f"evaluator 'pairwise': baseline must be a model key (a string), got {type(baseline).__name__}"
            raise EvaluatorError(msg)

    def pairs(self, rows: Sequence[Row]) -> list[tuple[Row, Row]]:
        """List the pairs of a case's rows to compare.

        They are every pair in case order, or each row with the baseline's (the baseline first).
        """
        baseline = self.params.get("baseline")
        if baseline is None:
            return [(a, b) for i, a in enumerate(rows) for b in rows[i + 1 :]]
        base = next((r for r in rows if r.model_key == baseline), None)
        if base is None:
            return []
        return [(base, r) for r in rows if r is not base]

    def _prompt_for(self, values: Mapping[str, str]) -> JudgePrompt:
        """The prompt without the optional blocks this case has nothing for."""
        if self.prompt.template is not None:
            return self.prompt
        shown = tuple((f, t) for f, t in self.prompt.inputs if f not in _OPTIONAL_INPUTS or values.get(f))
        return self.prompt if shown == self.prompt.inputs else self.prompt.replace(inputs=shown)

    def score_case(self, rows: list[Row]) -> Generator[Any, Any, dict[str, Score]]:
        """Ask the judge about every pair of the case's answers, all in one round, and score each model's win rate.

        A case with one answer, or without the baseline's, gives no value.
        """
        if len(rows) < 2:
            return {
                r.model_key: _unpaired(r, "only one model answered this case: there is nothing to compare")
                for r in rows
            }
        pairs = self.pairs(rows)
        if not pairs:
            why = f"the baseline model '{self.params['baseline']}' has no answer for this case"
            return {r.model_key: Score({"win_rate": None}, error=why) for r in rows}
        case = row_values(rows[0])
        asked: list[tuple[Row, Row]] = []  # (shown as A, shown as B), one per question
        for a, b in pairs:
            if self.params.get("swap", True):
                asked += [(a, b), (b, a)]
            else:
                asked.append((a, b) if _shown_order(rows[0].key, a.model_key, b.model_key) else (b, a))
        chats = []
        for first, second in asked:
            # an answer's own verdict markers are rewritten, so a judge that quotes it casts no vote
            values = {
                **case,
                "answer_a": neutralise_markers(first.actual_output or ""),
                "answer_b": neutralise_markers(second.actual_output or ""),
            }
            prompt = self._prompt_for(values)
            chats.append(
                Chat(
                    messages=tuple(prompt.messages(values)),
                    params=dict(self.judge_params),
                    model=self.settings.judge,
                    verdict=self.reply_shape(),
                )
            )
        replies = yield Gather(tuple(chats))
        verdicts = [
            self._verdict(first.model_key, second.model_key, reply)
            for (first, second), reply in zip(asked, replies, strict=True)
        ]
        filed_on = {frozenset((a.model_key, b.model_key)): a.model_key for a, b in pairs}
        own: dict[str, list[Any]] = {r.model_key: [] for r in rows}
        for (first, second), reply in zip(asked, replies, strict=True):
            own[filed_on[frozenset((first.model_key, second.model_key))]].append(reply)
        return {r.model_key: _row_score(r.model_key, verdicts, own[r.model_key]) for r in rows}

    def _verdict(self, first: str, second: str, reply: Any) -> Verdict:
        judge = self._judge_name()
        if isinstance(reply, BaseException):
            text = str(reply) or type(reply).__name__
            return Verdict(first, second, None, "", f"the judge call failed: {text}", judge)
        parsed = parse_pairwise(getattr(reply, "text", None))
        return Verdict(first, second, parsed.value, parsed.rationale, parsed.error, judge)

    def _judge_name(self) -> str | None:
        """The configured judge's name, or None for the run's judge.

        Never the reply's model name: a server may name each reply differently (snapshots, request ids), which would
        split one judge into many one-verdict judges whose slot terms explain every verdict away.
        """
        judge = self.settings.judge
        return None if judge is None else juror_name(judge)


def _unpaired(row: Row, why: str) -> Score:
    return Score({"win_rate": None}, rationale=why, label="unpaired", details={"verdicts": [], "pairs": []})


def _row_score(model_key: str, verdicts: Sequence[Verdict], own_replies: Sequence[Any]) -> Score:
    """Score one model in a case by its win rate over the readable verdicts it took part in.

    Every such verdict goes in the details, with the judge usage of the pairs filed on its row (each
    call is filed on one row of its pair, so the rows' usage adds up to the run's).
    """
    mine = [v for v in verdicts if model_key in (v.first, v.second)]
    points = [p for p in (v.points(model_key) for v in mine) if p is not None]
    pairs = []
    for opponent in dict.fromkeys(v.second if v.first == model_key else v.first for v in mine):
        orders = [v for v in mine if opponent in (v.first, v.second)]
        agreed = _agree(orders[0], orders[1]) if len(orders) == 2 else None
        pairs.append({"opponent": opponent, "consistent": agreed})
    lines = []
    for v in mine:
        opponent, slot = (v.second, "A") if v.first == model_key else (v.first, "B")
        outcome = {1.0: "won", 0.5: "tie", 0.0: "lost", None: "unrated"}[v.points(model_key)]
        why = v.error if v.winner is None else v.rationale
        lines.append(f"vs {opponent} (shown as {slot}): {outcome}. {why}".rstrip())
    flips = [p["opponent"] for p in pairs if p["consistent"] is False]
    if flips:
        lines.append(f"inconsistent: the two orders disagree against {', '.join(map(str, flips))}")
    replies = [r for r in own_replies if not isinstance(r, BaseException)]
    details = {"verdicts": [v.as_details() for v in mine], "pairs": pairs, "judge": usage_details(replies)}
    if not points:
        errors = sorted({v.error for v in mine if v.error})
        failed_calls = all(v.error and v.error.startswith("the judge call failed") for v in mine)
        label = None if failed_calls else "parse_failure"
        return Score(
            {"win_rate": None},
            rationale="\n".join(lines),
            label=label,
            error="; ".join(errors) or "no verdict could be read",
            details=details,
        )
    rate = sum(points) / len(points)
    label = "ahead" if rate > 0.5 else "behind" if rate < 0.5 else "even"
    return Score({"win_rate": rate}, rationale="\n".join(lines), label=label, details=details)
