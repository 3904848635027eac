"""Conversation judges, which rate a row's whole conversation turn by turn or by what the user wanted.

A judge reads the row's whole conversation (``messages``).

``conversation_relevancy``, ``knowledge_retention``, ``role_adherence`` and
``conversation_completeness``. Each reports one metric, named after it: a share in [0, 1] of the
assistant's messages that pass (of the user's intentions met, for completeness), higher is better,
threshold 0.75. A row's details keep every verdict with the judge's reason, and its rationale names
the messages (intentions) that failed, by their number in the conversation (the first message is 1,
whatever its role: see :mod:`nbeval.evaluators.agents.turns`).

One judge call per conversation, with the messages numbered and a JSON reply giving a verdict for
every message asked about; ``conversation_relevancy`` asks one question per assistant message,
about the window of messages before it, all sent together. A reply that leaves out a message asked
about, or cannot be read, is a parse failure: no value (never a 0), the raw reply kept as the
rationale. Where there are several calls, one that fails or is unreadable leaves the share to the
others, and the error says how many could not be judged.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from nbeval.errors import EvaluatorError
from nbeval.evaluators.agents.prompts import AGENT_PROMPTS
from nbeval.evaluators.agents.turns import (
    TurnVerdict,
    assistant_turns,
    parse_intentions,
    parse_turn_verdicts,
    share_score,
    transcript,
    unread_score,
)
from nbeval.evaluators.base import EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.judges.core import JudgeEvaluator
from nbeval.evaluators.judges.parse import parse_choice
from nbeval.evaluators.registry import register
from nbeval.request_kinds import Chat, Gather

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = [
    "ConversationCompleteness",
    "ConversationJudge",
    "ConversationRelevancy",
    "KnowledgeRetention",
    "RoleAdherence",
]

_YES_NO = {"yes": True, "no": False}


def _metric(name: str, what: str) -> tuple[MetricSpec, ...]:
    return (MetricSpec(name, threshold=0.75, primary=True, description=what),)


class ConversationJudge(JudgeEvaluator):
    """A judge of a row's conversation, rating the assistant's messages that have text."""

    #: How the rationale and label word a message that passed, and one that failed.
    passed = "passed"
    failed = "failed"

    def missing_input(self, row: Row) -> str | None:
        """Skip a row with a required input missing, or whose conversation has no assistant message with text."""
        missing = super().missing_input(row)
        if missing is None and not assistant_turns(row.messages):
            return "the conversation has no assistant message with text to judge"
        return missing

    def one_call(self, row: Row, values: Mapping[str, str]) -> Generator[Any, Any, Score]:
        """Ask once about every assistant message of ``row``; a verdict on each, or a parse failure."""
        turns = assistant_turns(row.messages)
        values = {"conversation": transcript(row.messages), "turns": ", ".join(map(str, turns)), **values}
        reply = yield from self.ask(values)
        parsed = parse_turn_verdicts(reply.text, turns)
        if not parsed.ok:
            return unread_score(self.spec.id, parsed, [reply])
        verdicts = [TurnVerdict(f"message {n}", ok, reason, message=n) for n, (ok, reason) in parsed.value.items()]
        return share_score(self.spec.id, verdicts, [reply], passed=self.passed, failed=self.failed)


@register
class ConversationRelevancy(ConversationJudge):
    """Is each assistant message relevant to the messages just before it?"""

    spec = EvaluatorSpec(
        id="conversation_relevancy",
        family="agents",
        kind="score",
        inputs=("messages",),
        resources=("judge",),
        description=(
            "A judge rates every assistant message of the conversation relevant or not to what the user "
            "asked, reading only the window of the last `window` messages before it (every role counts, "
            "tool calls and results too). Per row: the share of messages rated relevant; the rationale "
            "names the others."
        ),
        params=(
            Param(
                "window",
                int,
                6,
                "how many messages before each assistant message the judge sees (messages of every role count)",
            ),
        ),
        metrics=_metric("conversation_relevancy", "share of the assistant's messages rated relevant"),
    )

    default_prompt = AGENT_PROMPTS["conversation_relevancy"]
    passed = "relevant"
    failed = "not relevant"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        window = self.params["window"]
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            msg = f"evaluator 'conversation_relevancy': window must be a number of messages, 1 or more, got {window!r}"
            raise EvaluatorError(msg)

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Ask about each assistant message, with the window of messages before it, all in one round.

        A call that fails or cannot be read leaves that message unjudged; the score is the share
        of the judged messages rated relevant.
        """
        window = self.params["window"]
        turns = assistant_turns(row.messages)
        chats = []
        for n in turns:
            values = {"conversation": transcript(row.messages, max(1, n - window), n), "turns": str(n)}
            chats.append(
                Chat(
                    messages=tuple(self.prompt.messages(values)),
                    params=dict(self.judge_params),
                    model=self.params.get("judge"),
                )
            )
        # One round for the whole conversation: its questions do not depend on each other.
        replies = yield Gather(tuple(chats))
        verdicts = []
        for n, reply in zip(turns, replies, strict=True):
            if isinstance(reply, BaseException):
                why = f"the judge call failed: {str(reply) or type(reply).__name__}"
                verdicts.append(TurnVerdict(f"message {n}", None, "", why, message=n))
                continue
            parsed = parse_choice(reply.text, _YES_NO)
            ok = parsed.value if parsed.ok else None
            verdicts.append(TurnVerdict(f"message {n}", ok, parsed.rationale, parsed.error, message=n))
        return share_score(
            self.spec.id, verdicts, replies, passed=self.passed, failed=self.failed, details={"window": window}
        )


@register
class KnowledgeRetention(ConversationJudge):
    """Does the assistant keep what the user told it earlier in the conversation?"""

    spec = EvaluatorSpec(
        id="knowledge_retention",
        family="agents",
        kind="score",
        inputs=("messages",),
        resources=("judge",),
        description=(
            "A judge reads the whole conversation and rates each assistant message on whether it keeps the "
            "facts, preferences and constraints the user gave before it (no asking again, no contradicting, "
            "no carrying on as if unsaid). Per row: the share of messages that keep them, in one judge call."
        ),
        metrics=_metric("knowledge_retention", "share of the assistant's messages that keep what the user said"),
    )

    default_prompt = AGENT_PROMPTS["knowledge_retention"]
    passed = "kept what the user said"
    failed = "forgot or contradicted the user"

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Ask once about every assistant message: does it keep what the user said before it?"""
        return (yield from self.one_call(row, {}))


@register
class RoleAdherence(ConversationJudge):
    """Does the assistant stay in the role its system message (or ``role=``) gives it?"""

    spec = EvaluatorSpec(
        id="role_adherence",
        family="agents",
        kind="score",
        inputs=("messages",),
        resources=("judge",),
        description=(
            "A judge rates each assistant message on whether it stays in the role set by the conversation's "
            "system message, or by role= (which takes its place when given). Per row: the share of messages "
            "in role, in one judge call; a conversation with neither is an error."
        ),
        params=(
            Param(
                "role",
                str,
                None,
                "the role the assistant must keep, in words; used instead of the conversation's system message",
            ),
        ),
        metrics=_metric("role_adherence", "share of the assistant's messages that stay in role"),
    )

    default_prompt = AGENT_PROMPTS["role_adherence"]
    passed = "in role"
    failed = "out of role"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        role = self.params["role"]
        if role is not None and (not isinstance(role, str) or not role.strip()):
            msg = "evaluator 'role_adherence': role must be a non-empty string describing the assistant's role"
            raise EvaluatorError(msg)

    def role_of(self, row: Row) -> str | None:
        """The role the assistant is held to: ``role=``, else the conversation's system messages."""
        if self.params["role"]:
            return str(self.params["role"]).strip()
        system = [m["content"].strip() for m in row.messages if m["role"] == "system" and (m["content"] or "").strip()]
        return "\n\n".join(system) or None

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Ask once whether each assistant message stays in role; an error when there is no role to hold it to."""
        role = self.role_of(row)
        if role is None:
            why = "no role to hold the assistant to: the conversation has no system message and role= was not given"
            return Score({"role_adherence": None}, error=why)
        return (yield from self.one_call(row, {"assistant_role": role}))


@register
class ConversationCompleteness(ConversationJudge):
    """Did the conversation give the user what they came for?"""

    spec = EvaluatorSpec(
        id="conversation_completeness",
        family="agents",
        kind="score",
        inputs=("messages",),
        resources=("judge",),
        description=(
            "A judge lists the user's intentions over the whole conversation, then says which were met by its "
            "end (one judge call). Per row: the share of intentions met; the rationale names those that were "
            "not."
        ),
        metrics=_metric("conversation_completeness", "share of the user's intentions met by the end"),
    )

    default_prompt = AGENT_PROMPTS["conversation_completeness"]

    def missing_input(self, row: Row) -> str | None:
        """Skip a row with a required input missing, or whose conversation has no user message."""
        missing = super().missing_input(row)
        if missing is None and not any(m["role"] == "user" for m in row.messages):
            return "the conversation has no user message"
        return missing

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Ask once for the user's intentions and whether each was met; the share met is the score."""
        reply = yield from self.ask({"conversation": transcript(row.messages)})
        parsed = parse_intentions(reply.text)
        if not parsed.ok:
            return unread_score(self.spec.id, parsed, [reply])
        verdicts = [TurnVerdict(f'"{what}"', met, reason, intention=what) for what, met, reason in parsed.value]
        return share_score(self.spec.id, verdicts, [reply], passed="met", failed="not met", key="intentions")
