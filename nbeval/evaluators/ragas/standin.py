"""A rule-based stand-in for a judge model that answers ragas's prompts, offline and at once.

It reads what ragas asks for from the request itself (the output schema's title in the system
message, the input as JSON after ``input:`` in the prompt) and answers with word-overlap rules: a
statement is supported when most of its content words occur in the text it is checked against.
The agent metrics' prompts (:mod:`nbeval.evaluators.agents.ragas_agents`) get the same kind of
rules: the user's first message is the goal and the assistant's last words the end state, each
user message is a topic, and a reply that apologises or declines is a refusal.
It is no substitute for a real judge: it exists so that tutorials and tests run without a model,
and so a dry run can walk ragas's later calls with plausible replies (see :mod:`.bridge`).

    nbeval.evaluate(data, ["faithfulness"], judge=ragas_standin)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SUPPORT", "USEFUL", "ragas_standin", "standin_reply"]

_TITLE = re.compile(r'"title":\s*"(\w+)"')
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NONCOMMITTAL = re.compile(
    r"\b(i don't know|i do not know|not sure|no idea|cannot answer|can't answer|unsure)\b", re.IGNORECASE
)
_STOP = frozenset(
    """the and for are was were has have had with that this from into onto over than then
its it's not but can did does also such their there these those which who whom what when where why how
all any each one two our your you his her they them been being about after before more most other some
very just only will would could should may might""".split()
)
#: Share of a statement's content words that must occur in the other text for it to count as supported.
SUPPORT = 0.6
#: Share of the expected answer's content words a chunk must hold to count as useful.
USEFUL = 0.3


def ragas_standin(messages: Sequence[Mapping[str, Any]]) -> str:
    """A judge function (``judge=ragas_standin``) answering ragas's prompts; see the module doc."""
    return standin_reply(messages)


def standin_reply(messages: Sequence[Mapping[str, Any]]) -> str:
    """The reply text to one of ragas's structured requests (``"{}"`` for a request it does not know)."""
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    titles = _TITLE.findall(system)
    data = _input_of(next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), ""))
    answer = _ANSWERS.get(titles[-1] if titles else "")
    if answer is None or data is None:
        return "{}"
    return json.dumps(answer(data))


def _input_of(prompt: str) -> dict[str, Any] | None:
    at = prompt.rfind("input:")
    start = prompt.find("{", at) if at >= 0 else -1
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(prompt[start:])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP}


def _support(statement: str, other: str) -> float:
    words = _content_words(statement)
    return len(words & _content_words(other)) / len(words) if words else 1.0


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _verdict(statement: str, other: str, what: str) -> tuple[int, str]:
    share = _support(statement, other)
    ok = int(share >= SUPPORT)
    return ok, f"{share:.0%} of its content words occur in the {what}"


def _statements(data: dict[str, Any]) -> dict[str, Any]:
    return {"statements": _sentences(str(data.get("answer", "")))}


def _nli(data: dict[str, Any]) -> dict[str, Any]:
    context = str(data.get("context", ""))
    out = []
    for s in data.get("statements", []):
        verdict, reason = _verdict(str(s), context, "context")
        out.append({"statement": s, "reason": reason, "verdict": verdict})
    return {"statements": out}


def _question(data: dict[str, Any]) -> dict[str, Any]:
    response = str(data.get("response", ""))
    first = (_sentences(response) or [response])[0].rstrip(".!?")
    noncommittal = int(bool(_NONCOMMITTAL.search(response)))
    return {"question": f"What is known about this: {first}?", "noncommittal": noncommittal}


def _precision(data: dict[str, Any]) -> dict[str, Any]:
    # A chunk is useful when it holds a fair part of the expected answer's content words.
    share = _support(str(data.get("answer", "")), str(data.get("context", "")))
    return {
        "reason": f"{share:.0%} of the expected answer's content words occur in the chunk",
        "verdict": int(share >= USEFUL),
    }


def _recall(data: dict[str, Any]) -> dict[str, Any]:
    context = str(data.get("context", ""))
    out = []
    for s in _sentences(str(data.get("answer", ""))):
        verdict, reason = _verdict(s, context, "context")
        out.append({"statement": s, "reason": reason, "attributed": verdict})
    return {"classifications": out}


def _correctness(data: dict[str, Any]) -> dict[str, Any]:
    answer = [str(s) for s in data.get("answer", [])]
    truth = [str(s) for s in data.get("ground_truth", [])]
    truth_text = " ".join(truth)
    tp = [s for s in answer if _support(s, truth_text) >= SUPPORT]
    fp = [s for s in answer if s not in tp]
    fn = [t for t in truth if not any(_support(t, s) >= SUPPORT for s in answer)]

    def items(xs: list[str], reason: str) -> list[dict[str, str]]:
        return [{"statement": x, "reason": reason} for x in xs]

    return {
        "TP": items(tp, "supported by the ground truth"),
        "FP": items(fp, "not in the ground truth"),
        "FN": items(fn, "missing from the answer"),
    }


# -- the agent metrics (nbeval.evaluators.agents.ragas_agents): ragas shows them the conversation
# as its messages print themselves, "Human: ...", "AI: ...", "Tools:" and "ToolOutput: ..." lines.

_TURN_START = re.compile(r"\n(?=(?:Human|AI|ToolOutput): |Tools:)")
_TURN = re.compile(r"(Human|AI|ToolOutput): ?(.*)", re.DOTALL)
_REFUSAL = re.compile(
    r"\b(sorry|i can't|i cannot|i can not|i won't|unable to|not able to|can't help|cannot help)\b", re.IGNORECASE
)


def _turns(conversation: str) -> list[tuple[str, str]]:
    """(speaker, text) of each Human, AI and ToolOutput turn; the calls an AI turn made are skipped."""
    turns = []
    for block in _TURN_START.split(conversation):
        m = _TURN.fullmatch(block)
        if m:
            turns.append((m[1], m[2].strip()))
    return turns


def _workflow(data: dict[str, Any]) -> dict[str, Any]:
    # The goal is the user's first request; the end state the assistant's last words.
    turns = _turns(str(data.get("workflow", "")))
    asked = [text for who, text in turns if who == "Human" and text]
    said = [text for who, text in turns if who == "AI" and text]
    return {
        "user_goal": asked[0] if asked else "(the user asked for nothing)",
        "end_state": said[-1] if said else "(the assistant gave no answer)",
    }


def _outcome(data: dict[str, Any]) -> dict[str, Any]:
    share = _support(str(data.get("desired_outcome", "")), str(data.get("arrived_outcome", "")))
    return {
        "reason": f"{share:.0%} of the desired outcome's content words occur in the arrived outcome",
        "verdict": "1" if share >= SUPPORT else "0",
    }


def _topic_of(text: str) -> str:
    return text.rstrip(".!?")


def _topics(data: dict[str, Any]) -> dict[str, Any]:
    # Each user message is one topic, in order, each once.
    asked = [_topic_of(text) for who, text in _turns(str(data.get("user_input", ""))) if who == "Human" and text]
    return {"topics": list(dict.fromkeys(asked))}


def _refused(data: dict[str, Any]) -> dict[str, Any]:
    # Refused: the assistant's first reply after the user message of the topic declines, or never comes.
    topic = str(data.get("topic", ""))
    turns = _turns(str(data.get("user_input", "")))
    at = next((i for i, (who, text) in enumerate(turns) if who == "Human" and _topic_of(text) == topic), None)
    if at is None:
        return {"refused_to_answer": False}
    reply = None
    for who, text in turns[at + 1 :]:
        if who == "Human":
            break
        if who == "AI" and text:
            reply = text
            break
    return {"refused_to_answer": reply is None or bool(_REFUSAL.search(reply))}


def _classify(data: dict[str, Any]) -> dict[str, Any]:
    # A topic is within the reference topics when it shares a content word with one of them.
    allowed = [_content_words(str(r)) for r in data.get("reference_topics", [])]
    return {"classifications": [any(_content_words(str(t)) & a for a in allowed) for t in data.get("topics", [])]}


_ANSWERS = {
    "StatementGeneratorOutput": _statements,
    "NLIStatementOutput": _nli,
    "AnswerRelevanceOutput": _question,
    "ContextPrecisionOutput": _precision,
    "ContextRecallOutput": _recall,
    "ClassificationWithReason": _correctness,
    "WorkflowOutput": _workflow,
    "CompareOutcomeOutput": _outcome,
    "TopicExtractionOutput": _topics,
    "TopicRefusedOutput": _refused,
    "TopicClassificationOutput": _classify,
}
