"""``trajectory_judge``: a judge grades everything an agent did for a request, step by step.

The judge sees the row's conversation as numbered messages (the request, each tool call with its
arguments, each tool result, the final answer) and says yes or no:

* with guidelines on the row (``guidelines``, as the guideline judges take them), the guidelines are
  the criteria: the trajectory passes when every step and the answer follow every one of them;
* without, it judges soundness: fitting tool calls with arguments taken from what was said and
  found, results read correctly and nothing made up, no needless repeats or skipped steps, and a
  final answer that follows from the results and answers the request.

The row's ``expected_tool_calls``, when it has them, are shown as a reference: one good way to do
the task, not the only one (``[]`` is shown as "no tool call is expected"). A no must name the
first message that went wrong (``details["failed_step"]``, its number in the conversation;
``None`` on a yes), and the rationale starts with it; a no without a step that is in the
conversation is a parse failure (no value, the raw reply kept), as is a reply without a verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nbeval.data.conversation import NO_CALL_EXPECTED, tool_calls_made
from nbeval.evaluators.agents.prompts import AGENT_PROMPTS
from nbeval.evaluators.agents.turns import transcript, unread_score
from nbeval.evaluators.base import EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.judges.core import JudgeEvaluator, JudgePrompt, usage_details
from nbeval.evaluators.judges.parse import Parsed, find_json, parse_choice
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = ["TrajectoryJudge", "describe_step", "parse_failed_step"]

_YES_NO = {"yes": True, "no": False}
#: Blocks shown only when the row has something for them (the trajectory is always shown).
_OPTIONAL = frozenset({"guidelines", "expected_tool_calls"})
_STEP_LINE = re.compile(r"(?im)^[^\w\n]*failed[ _]step[^\w\n]*[:=][^\S\n]*(\d+|null|none)\b")


def parse_failed_step(text: str, n_messages: int) -> Parsed:
    """Read the message number a reply names as the first that went wrong.

    The reply names it as JSON ``failed_step``, or in a line ``failed_step: 4``; the value is
    ``None`` when it names none. A number outside the conversation is a failure.
    """
    obj = find_json(text)
    given: Any = None
    if isinstance(obj, Mapping):
        lowered = {str(k).strip().lower().replace(" ", "_"): v for k, v in obj.items()}
        given = lowered.get("failed_step", lowered.get("step"))
    else:
        m = _STEP_LINE.search(text)
        given = m.group(1) if m else None
    if given is None or (isinstance(given, str) and given.strip().lower() in ("", "null", "none")):
        return Parsed(None, text)
    number = given if isinstance(given, int) and not isinstance(given, bool) else None
    if isinstance(given, str) and given.strip().isdecimal():
        number = int(given.strip())
    if isinstance(given, float) and given.is_integer():
        number = int(given)
    if number is None or not 1 <= number <= n_messages:
        return Parsed(None, text, f"the judge's failed_step {str(given)[:20]!r} is not a message of the trajectory")
    return Parsed(number, text)


def describe_step(messages: Sequence[dict[str, Any]], number: int) -> str:
    """A message of a trajectory in a few words: ``message 3 (call to get_forecast)``."""
    m = messages[number - 1]
    role = m.get("role")
    if role == "assistant" and m.get("tool_calls"):
        what = "call to " + ", ".join(c["function"]["name"] for c in m["tool_calls"])
    elif role == "assistant":
        final = not any(x.get("role") == "assistant" for x in messages[number:])
        what = "the final answer" if final else "an assistant message"
    elif role == "tool":
        names = {c.get("id"): c["function"]["name"] for c in tool_calls_made(messages) if c.get("id")}
        tool = m.get("name") or names.get(m.get("tool_call_id"))
        what = f"result of {tool}" if tool else "a tool result"
    else:
        what = f"a {role} message"
    return f"message {number} ({what})"


def _reference(calls: Sequence[dict[str, Any]] | None) -> str:
    """Write the reference calls, numbered.

    It is "" when none were given (the block is left out) and :data:`NO_CALL_EXPECTED` for ``[]``,
    where the reference is that no tool should be called.
    """
    if calls is None:
        return ""
    if not calls:
        return NO_CALL_EXPECTED
    return "\n".join(
        f"{i}. {c['name']}({json.dumps(c['arguments'], ensure_ascii=False, sort_keys=True)})"
        for i, c in enumerate(calls, 1)
    )


@register
class TrajectoryJudge(JudgeEvaluator):
    """Does the agent's whole trajectory (calls, results, answer) pass the row's guidelines, or hold up?"""

    spec = EvaluatorSpec(
        id="trajectory_judge",
        family="agents",
        kind="rating",
        inputs=("messages",),
        optional_inputs=("guidelines", "expected_tool_calls"),
        resources=("judge",),
        description=(
            "A judge grades the agent's whole trajectory (the request, each tool call with its arguments, "
            "each result, the final answer) yes or no: against the row's guidelines when it has some, else "
            "for soundness (fitting calls and arguments, results read right, nothing made up, an answer "
            "that follows). Expected tool calls are shown as a reference. A no names the first message "
            "that went wrong (details failed_step)."
        ),
        metrics=(
            MetricSpec(
                "trajectory_judge", threshold=0.5, primary=True, description="share of trajectories rated as passing"
            ),
        ),
    )

    default_prompt = AGENT_PROMPTS["trajectory_judge"]

    def missing_input(self, row: Row) -> str | None:
        """Skip a row with a required input missing, or whose conversation has no assistant message."""
        missing = super().missing_input(row)
        if missing is None and not any(m["role"] == "assistant" for m in row.messages):
            return "the conversation has no assistant message: the agent did nothing to judge"
        return missing

    def _prompt_for(self, values: Mapping[str, str]) -> JudgePrompt:
        """Give the prompt without the blocks this row has nothing for.

        An empty <guidelines> block would leave the judge unsure which criteria apply.
        """
        if self.prompt.template is not None:
            return self.prompt
        shown = tuple((f, t) for f, t in self.prompt.inputs if f not in _OPTIONAL or values.get(f))
        return self.prompt if shown == self.prompt.inputs else self.prompt.replace(inputs=shown)

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Ask the judge for a yes or no on the whole trajectory; a no must name the first message that went wrong.

        A reply whose verdict, or whose failed step after a no, cannot be read is a parse failure.
        """
        values = {
            "conversation": transcript(row.messages),
            "guidelines": "\n".join(f"- {g}" for g in row.guidelines),
            "expected_tool_calls": _reference(row.expected_tool_calls),
        }
        reply = yield from self.ask(values, self._prompt_for(values))
        verdict = parse_choice(reply.text, _YES_NO)
        if not verdict.ok:
            return unread_score("trajectory_judge", verdict, [reply], {"failed_step": None})
        details: dict[str, Any] = {"judge": usage_details([reply]), "failed_step": None}
        if verdict.value:  # a step named with a yes is not a failure: nothing went wrong there
            return Score({"trajectory_judge": 1.0}, rationale=verdict.rationale, label="yes", details=details)
        step = parse_failed_step(reply.text or "", len(row.messages))
        if not step.ok:
            return unread_score("trajectory_judge", step, [reply], {"failed_step": None})
        if step.value is None:
            why = "the judge said no but named no failed_step, the first message that went wrong"
            return unread_score("trajectory_judge", Parsed(None, reply.text or "", why), [reply], {"failed_step": None})
        details["failed_step"] = step.value
        rationale = f"went wrong at {describe_step(row.messages, step.value)}: {verdict.rationale}"
        return Score({"trajectory_judge": 0.0}, rationale=rationale, label="no", details=details)
