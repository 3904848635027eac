"""ragas's agent metrics on a row's conversation: tool-call accuracy and F1, goal accuracy, topic adherence.

Every number is the value ragas 0.4's own ``ascore`` returns. The two tool-call metrics are rules
(no model); the two others ask the judge, through the RAGAS family's bridge like every ragas
evaluator (:mod:`nbeval.evaluators.ragas.base`): cached, batched, counted, a reply that never fits
ragas's schema a parse failure, never a 0. A row without a conversation (or without the expected
calls, the reference topics) is skipped with the reason, never scored 0. ``expected_tool_calls: []``
(no call expected) is scored as ragas scores it: tool-call accuracy 1 when no call was made and 0
when one was; tool-call F1 0 either way (ragas's F1 has no true positive to count).

:func:`ragas_messages` turns a row's ``messages`` into ragas's message objects, deciding two things
ragas's types cannot say:

* **system messages are left out.** ragas has no system message; read as a human message, a system
  prompt would become the user's goal or topics (the judge reads those from the Human lines). The
  rationale notes each one left out.
* **arguments that are not a JSON object** (broken JSON, a list: a model's mistake) cannot be
  ragas's ``ToolCall.args``, a dict. The call stays a call to its tool, with the arguments
  ``{BROKEN_ARGUMENTS: the text as written}``: it counts as calling that tool (the order of the
  tools called is right or wrong as made), and its arguments match no expected argument, never the
  ``{}`` of a call that was meant to have none. The rationale names each such call.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from nbeval.data.conversation import tool_call_arguments
from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.ragas.base import PARSE_ATTEMPTS, ScoreGen, SingleMetric, ragas_modules
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = [
    "BROKEN_ARGUMENTS",
    "AgentGoalAccuracyEvaluator",
    "ToolCallAccuracyEvaluator",
    "ToolCallF1Evaluator",
    "TopicAdherenceEvaluator",
    "ragas_messages",
    "reference_calls",
]

#: The one argument name of a call whose arguments are not a JSON object; its value is the text the
#: model wrote. No expected call has an argument of that name, so it matches none.
BROKEN_ARGUMENTS = "<arguments that are not a JSON object>"


def ragas_messages(messages: Sequence[Mapping[str, Any]], *, note_system: bool = True) -> tuple[list[Any], list[str]]:
    """Turn a row's ``messages`` (OpenAI chat format) into ragas's message objects.

    They are ragas's ``HumanMessage``, ``AIMessage`` and ``ToolMessage`` objects, returned with notes
    on what could not be said as it was (see the module doc); ``note_system=False`` leaves out the
    notes on system messages (where they change nothing).
    """
    from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

    out: list[Any] = []
    notes: list[str] = []
    for i, m in enumerate(messages, 1):
        text = m.get("content") or ""  # ragas's content is text: a message of tool calls only has ""
        role = m.get("role")
        if role == "system":
            if note_system:
                notes.append(f"message {i} (system) was left out: ragas has no system message")
        elif role == "user":
            out.append(HumanMessage(content=text))
        elif role == "tool":
            out.append(ToolMessage(content=text))
        else:
            calls = []
            for call in m.get("tool_calls", ()):
                name = call["function"]["name"]
                args, ok = tool_call_arguments(call)
                if not ok:
                    raw = call["function"].get("arguments")
                    args = {BROKEN_ARGUMENTS: raw}
                    notes.append(
                        f"message {i} calls {name} with arguments that are not a JSON object ({raw!r}): "
                        "they match no expected argument"
                    )
                calls.append(ToolCall(name=name, args=args))
            # None, not []: a message without calls prints no "Tools:" line in what the judge reads
            out.append(AIMessage(content=text, tool_calls=calls or None))
    return out, notes


def reference_calls(expected: Sequence[Mapping[str, Any]]) -> list[Any]:
    """A row's ``expected_tool_calls`` as ragas's ``ToolCall`` objects."""
    from ragas.messages import ToolCall

    return [ToolCall(name=c["name"], args=dict(c["arguments"])) for c in expected]


def _calls_made(messages: Sequence[Any]) -> list[Any]:
    """Every tool call of the assistant's messages, in order (what ragas reads)."""
    return [c for m in messages if getattr(m, "type", None) == "ai" for c in (m.tool_calls or ())]


def _no_conversation(ev: Evaluator, row: Row) -> str | None:
    if row.messages:
        return None
    return (
        f"no conversation: {ev.spec.id} reads the row's messages (tool calls included), and this row "
        "has none (give 'messages' in the OpenAI chat format)"
    )


def _call_text(call: Any) -> str:
    """A ragas ``ToolCall`` as ``name(arg=value, ...)``, values as JSON."""
    if list(call.args) == [BROKEN_ARGUMENTS]:
        return f"{call.name}(<not a JSON object: {call.args[BROKEN_ARGUMENTS]!r}>)"
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in call.args.items())
    return f"{call.name}({args})"


def _call_json(call: Any) -> dict[str, Any]:
    return {"name": call.name, "arguments": call.args}


def _run_without_model(ev: Evaluator, coro: Any) -> Any:
    """Run ragas's rule-based ``ascore`` coroutine through the bridge and return its result.

    A model call asked for is an error (these metrics make none).
    """
    bridge = ragas_modules(ev.spec.id)[1]
    steps = bridge.Session(judge=None, judge_params={}, embedder=None, attempts=1).drive(coro)
    # ragas warns on every row whose calls differ in number from the expected ones; the rationale
    # says so instead of a warning per row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            asked = next(steps)
        except StopIteration as stop:
            return stop.value
    steps.close()
    msg = f"ragas's {ev.spec.id} asked for a {type(asked).__name__}; this ragas version is not supported"
    raise EvaluatorError(msg)


class _ToolCallMetric(Evaluator):
    """Base of the two rule-based evaluators: a ragas metric on the calls made and the calls expected."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._metric = self.build()

    def build(self) -> Any:
        """The ragas metric object (built once per evaluator)."""
        raise NotImplementedError

    def explain(self, made: list[Any], expected: list[Any]) -> tuple[list[str], dict[str, Any]]:
        """The rationale's lines and the details for ``made`` and ``expected`` (ragas ``ToolCall`` objects)."""
        raise NotImplementedError

    def missing_input(self, row: Row) -> str | None:
        """Skip a row without a conversation, or with a required input missing."""
        return _no_conversation(self, row) or super().missing_input(row)

    def score(self, row: Row) -> Score:
        """Compare the calls made in the conversation with the expected ones, by ragas's metric.

        The rationale pairs or groups the calls (see ``explain``) after the notes on what ragas
        could not be told as it was; the details keep both lists of calls.
        """
        messages, notes = ragas_messages(row.messages, note_system=False)  # a system message makes no call
        expected = reference_calls(row.expected_tool_calls or ())  # None is skipped (missing_input)
        result = _run_without_model(self, self._metric.ascore(user_input=messages, reference_tool_calls=expected))
        made = _calls_made(messages)
        lines, details = self.explain(made, expected)
        details = {"made": [_call_json(c) for c in made], "expected": [_call_json(c) for c in expected], **details}
        rationale = "\n".join([*(f"note: {n}" for n in notes), *lines])
        return Score({self.spec.primary.name: float(result.value)}, rationale=rationale, details=details)


@register
class ToolCallAccuracyEvaluator(_ToolCallMetric):
    """``tool_call_accuracy``: how well the tool calls made match the expected ones, call by call.

    No judge is asked: this is ragas's rule-based metric.
    """

    spec = EvaluatorSpec(
        id="tool_call_accuracy",
        family="agents",
        kind="score",
        inputs=("messages", "expected_tool_calls"),
        description=(
            "Compares the tool calls the assistant made in the conversation with the expected ones (no "
            "judge). When the tools called are the expected ones (in the expected order, or in any order "
            "with strict_order=False, both lists then sorted by tool and arguments), each expected call is "
            "paired with the made call in its place and scores the share of its arguments given with an "
            "equal value (as text); the score is their mean. Otherwise (a call missing, an extra call, "
            "another tool, or with strict_order another order) the score is 0. Arguments that are not a "
            "JSON object match none. The rationale pairs the calls and names the arguments that differ."
        ),
        params=(
            Param(
                "strict_order",
                bool,
                True,
                "whether the tools must be called in the expected order (False: any order)",
            ),
        ),
        metrics=(
            MetricSpec(
                "tool_call_accuracy",
                threshold=0.75,
                primary=True,
                description="mean share of expected arguments matched per call; 0 unless the expected tools are called",
            ),
        ),
    )

    def build(self) -> Any:
        """Build ragas's ``ToolCallAccuracy``, with the ``strict_order`` given (True or False, else an error)."""
        strict = self.params.get("strict_order")
        if not isinstance(strict, bool):
            msg = f"evaluator '{self.spec.id}': strict_order must be True or False, got {strict!r}"
            raise EvaluatorError(msg)
        return ragas_modules(self.spec.id)[0].ToolCallAccuracy(strict_order=strict)

    def explain(self, made: list[Any], expected: list[Any]) -> tuple[list[str], dict[str, Any]]:
        """Pair the calls made with the expected ones, as ragas compares them, and name the arguments that differ.

        The details say whether the tools called were the expected ones (``aligned``) and, per
        pair, the share of expected arguments matched (``argument_match``; ``None`` for another tool).
        """
        from ragas.metrics.collections.tool_call_accuracy.util import exact_match_args, sorted_key_for_tool_call

        strict = self._metric.strict_order
        lines = [
            f"{len(made)} call(s) made, {len(expected)} expected; "
            + ("the order counts" if strict else "the order does not count (both sorted by tool and arguments)")
        ]
        if not made or not expected:
            if not made and not expected:
                lines.append("no call was made and none was expected")
            else:
                lines.append("no call was made" if not made else "calls were made where none was expected")
            return lines, {"aligned": not made and not expected, "argument_match": []}
        if not strict:  # as ragas compares them
            made, expected = sorted(made, key=sorted_key_for_tool_call), sorted(expected, key=sorted_key_for_tool_call)
        names, wanted = [c.name for c in made], [c.name for c in expected]
        aligned = names == wanted if strict else sorted(names) == sorted(wanted)
        verdict = "the expected ones" if aligned else "not the expected ones: the score is 0 whatever the arguments"
        lines.append(f"tools called: {', '.join(names)}; expected: {', '.join(wanted)}: {verdict}")
        matches: list[float | None] = []
        for ref, pred in zip(expected, made, strict=False):  # the unpaired ones follow
            if ref.name != pred.name:
                matches.append(None)
                lines.append(f"  ✗ expected {_call_text(ref)}, made {_call_text(pred)}: another tool")
                continue
            share = exact_match_args(pred.args, ref.args)
            matches.append(share)
            lines.append(f"  {'✓' if share == 1 else '✗'} {_call_text(ref)}: {_argument_verdict(ref.args, pred.args)}")
        lines.extend(f"  ✗ expected {_call_text(c)}: not made" for c in expected[len(made) :])
        lines.extend(f"  ✗ made {_call_text(c)}: not expected" for c in made[len(expected) :])
        return lines, {"aligned": aligned, "argument_match": matches}


def _argument_verdict(ref: Mapping[str, Any], pred: Mapping[str, Any]) -> str:
    """Which of the expected arguments ``pred`` gives with an equal value (compared as text, as ragas does)."""
    if ref and list(pred) == [BROKEN_ARGUMENTS]:
        return f"the arguments made are not a JSON object: none of the {len(ref)} expected matches"
    if not ref:
        return "no arguments expected and none given" if not pred else "no arguments expected, but some given"
    wrong = [
        f"{k} missing"
        if k not in pred
        else f"{k}: {json.dumps(pred[k], default=str)} for {json.dumps(ref[k], default=str)}"
        for k in ref
        if k not in pred or str(pred[k]) != str(ref[k])
    ]
    text = f"{len(ref) - len(wrong)} of {len(ref)} argument(s) match"
    extra = [k for k in pred if k not in ref]
    if wrong:
        text += " (" + "; ".join(wrong) + ")"
    if extra:
        text += f"; not expected, not counted: {', '.join(extra)}"
    return text


@register
class ToolCallF1Evaluator(_ToolCallMetric):
    """``tool_call_f1``: the F1 of the tool calls made against the expected ones, taken as sets.

    No judge is asked: this is ragas's rule-based metric.
    """

    spec = EvaluatorSpec(
        id="tool_call_f1",
        family="agents",
        kind="score",
        inputs=("messages", "expected_tool_calls"),
        description=(
            "Compares the tool calls the assistant made in the conversation with the expected ones as two "
            "sets (no judge; order does not count, a call repeated counts once): a made call matches an "
            "expected one with the same tool and exactly the same arguments. The score is the F1 of the "
            "matched share of the made calls (precision) and of the expected calls (recall), rounded to 4 "
            "places as ragas does. Arguments that are not a JSON object match none. The rationale lists the "
            "matched, unexpected and missed calls."
        ),
        metrics=(
            MetricSpec(
                "tool_call_f1",
                threshold=0.75,
                primary=True,
                description="F1 of the made calls against the expected ones (same tool, same arguments)",
            ),
        ),
    )

    def build(self) -> Any:
        """Build ragas's ``ToolCallF1``."""
        return ragas_modules(self.spec.id)[0].ToolCallF1()

    def explain(self, made: list[Any], expected: list[Any]) -> tuple[list[str], dict[str, Any]]:
        """Group the distinct calls into matched, unexpected and missed ones, as ragas's sets count them.

        The details give how many calls are in each group (``matched``, ``unexpected``, ``missed``).
        """
        from ragas.metrics.collections.tool_call_f1.util import tool_call_to_hashable

        # the first call of each distinct (tool, arguments), as ragas's sets keep them
        made_set = {tool_call_to_hashable(c): c for c in reversed(made)}
        expected_set = {tool_call_to_hashable(c): c for c in reversed(expected)}
        groups = {
            "made and expected": [c for k, c in expected_set.items() if k in made_set],
            "made, not expected": [c for k, c in made_set.items() if k not in expected_set],
            "expected, not made": [c for k, c in expected_set.items() if k not in made_set],
        }
        lines = [f"{len(made_set)} distinct call(s) made, {len(expected_set)} expected"]
        if not expected_set:  # ragas's F1 of no expected call: 0, right or wrong (as ragas scores it)
            lines.append(
                "none expected: with no expected call there is nothing to match, and ragas's F1 is 0 whether "
                "or not a call was made (tool_call_accuracy scores a row without calls 1)"
            )
        for title, calls in groups.items():
            lines.append(f"{'✓' if title == 'made and expected' else '✗'} {title}: {len(calls)}")
            lines.extend(f"    - {_call_text(c)}" for c in reversed(calls))
        tp, fp, fn = (len(c) for c in groups.values())
        return lines, {"matched": tp, "unexpected": fp, "missed": fn}


class _ConversationJudge(SingleMetric):
    """Base of the judge-backed two: ragas reads the conversation; system messages are left out."""

    def missing_input(self, row: Row) -> str | None:
        """Skip a row without a conversation, or with a required input missing."""
        return _no_conversation(self, row) or super().missing_input(row)

    def conversation(self, row: Row, notes: list[str]) -> list[Any]:
        """Give the row's conversation as ragas's messages, adding to ``notes`` what was left out or changed."""
        messages, more = ragas_messages(row.messages)
        notes.extend(more)
        return messages


@register
class AgentGoalAccuracyEvaluator(_ConversationJudge):
    """``agent_goal_accuracy``: whether the conversation reached the user's goal, as a judge decides.

    This is ragas's metric.
    """

    spec = EvaluatorSpec(
        id="agent_goal_accuracy",
        family="agents",
        kind="score",
        inputs=("messages",),
        optional_inputs=("expected_output",),
        resources=("judge",),
        description=(
            "The judge reads the conversation and states the user's goal and the end state it reached, "
            "then decides whether the end state reaches the desired outcome: the row's expected_output "
            "when it has one, else the goal it stated. The row scores 1 or 0 and the model's value is "
            "the share of rows that reached their goal. The rationale gives the goal, the end state and "
            "the verdict with the judge's reason."
        ),
        params=(PARSE_ATTEMPTS,),
        metrics=(
            MetricSpec(
                "agent_goal_accuracy",
                threshold=0.5,
                primary=True,
                description="share of conversations whose end state reaches the desired outcome (per row 1 or 0)",
            ),
        ),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        metrics, bridge = ragas_modules(self.spec.id)
        self._without_reference = bridge.render_schemas_once(metrics.AgentGoalAccuracyWithoutReference(llm=self._llm))

    def build(self) -> Any:
        """Build ragas's ``AgentGoalAccuracyWithReference``, for the rows that have an expected output."""
        return ragas_modules(self.spec.id)[0].AgentGoalAccuracyWithReference(llm=self._llm)

    def metrics(self) -> list[Any]:
        """Give both ragas metrics this evaluator runs: with a reference and without one."""
        return [self._metric, self._without_reference]

    def score(self, row: Row) -> ScoreGen:
        """Ask whether the conversation reached its goal.

        The desired outcome is the row's expected_output when it has one, else the goal the judge states.
        """
        name = self.spec.primary.name
        notes: list[str] = []
        inputs: dict[str, Any] = {"user_input": self.conversation(row, notes)}
        if row.expected_output:
            metric = self._metric
            inputs["reference"] = row.expected_output
            notes.append("the desired outcome is the row's expected_output")
        else:
            metric = self._without_reference
            notes.append("the row has no expected_output: the desired outcome is the goal the judge states")
        session = self.session()
        value, why, parse_failed = yield from self.run_metric(session, name, metric, inputs)
        return self.finish(session, {name: value}, [why] if why else [], parse_failed, notes)


@register
class TopicAdherenceEvaluator(_ConversationJudge):
    """``topic_adherence``: whether the assistant answers the topics it should and refuses the others.

    A judge decides, by ragas's metric.
    """

    spec = EvaluatorSpec(
        id="topic_adherence",
        family="agents",
        kind="score",
        inputs=("messages", "reference_topics"),
        resources=("judge",),
        description=(
            "The judge lists the topics of the user's messages, decides for each whether the assistant "
            "answered or refused it, and whether it falls within the row's reference_topics. An answered "
            "topic within them is a true positive, an answered one outside a false positive, a refused one "
            "within a false negative; the score is their precision, recall or F1 (mode). A conversation in "
            "which the judge finds no topic has no value. ragas adds 1e-10 to each denominator, so a perfect "
            "score reads a hair under 1. The rationale lists each topic with both verdicts."
        ),
        params=(
            Param(
                "mode",
                Literal["precision", "recall", "f1"],
                "f1",
                "precision (answered topics within the reference ones), recall (reference topics answered "
                "rather than refused) or their F1",
            ),
            PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec(
                "topic_adherence",
                threshold=0.75,
                primary=True,
                description="precision, recall or F1 of the answered topics against the reference topics",
            ),
        ),
    )

    def build(self) -> Any:
        """Build ragas's ``TopicAdherence`` in the ``mode`` given (precision, recall or f1, else an error)."""
        mode = self.params.get("mode")
        if mode not in ("precision", "recall", "f1"):
            msg = f"evaluator '{self.spec.id}': mode must be 'precision', 'recall' or 'f1', got {mode!r}"
            raise EvaluatorError(msg)
        return ragas_modules(self.spec.id)[0].TopicAdherence(llm=self._llm, mode=mode)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        """Give ragas the row's conversation and its reference topics."""
        return {"user_input": self.conversation(row, notes), "reference_topics": list(row.reference_topics)}

    def score(self, row: Row) -> ScoreGen:
        """Score as ragas does, then add to the rationale each topic with the judge's two verdicts on it."""
        score = yield from super().score(row)
        table = _topic_table((score.details or {}).get("ragas", []))
        if table:
            score.rationale = f"{score.rationale}\n{table}" if score.rationale else table
        return score


def _topic_table(steps: Sequence[Mapping[str, Any]]) -> str | None:
    """Each topic with the judge's two verdicts on it, as ragas counts them; ``None`` unless every step was answered."""
    outputs: dict[str, list[Any]] = {}
    for step in steps:
        if step.get("output") is None:
            return None
        outputs.setdefault(str(step.get("step")), []).append(step["output"])
    topics = [str(t) for t in (outputs.get("TopicExtractionOutput") or [{}])[0].get("topics", [])]
    refused = [bool(o.get("refused_to_answer")) for o in outputs.get("TopicRefusedOutput", [])]
    classified = (outputs.get("TopicClassificationOutput") or [{}])[0].get("classifications")
    if not topics or len(refused) != len(topics) or classified is None:
        return None
    # ragas reads a missing classification as "outside" and ignores extra ones
    within = [str(c).lower() in ("true", "1", "yes") for c in classified][: len(topics)]
    within += [False] * (len(topics) - len(within))
    lines = ["[each topic: answered or refused; within the reference topics or not]"]
    for i, (topic, no, inside) in enumerate(zip(topics, refused, within, strict=True), 1):
        lines.append(f"  {i}. {topic}: {'refused' if no else 'answered'}, {'within' if inside else 'outside'}")
    tp = sum(not no and inside for no, inside in zip(refused, within, strict=True))
    fp = sum(not no and not inside for no, inside in zip(refused, within, strict=True))
    fn = sum(no and inside for no, inside in zip(refused, within, strict=True))
    lines.append(f"  answered within: {tp}; answered outside: {fp}; refused within: {fn}")
    return "\n".join(lines)
