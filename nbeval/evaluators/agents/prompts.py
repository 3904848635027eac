"""The prompts of the conversation and trajectory judges, in nbeval's own words.

Each is a :class:`~nbeval.evaluators.judges.core.JudgePrompt` (``AGENT_PROMPTS[id]`` is the default
of evaluator ``id``) showing its data in tagged blocks: the transcript (``<conversation>``, or
``<trajectory>``) as numbered ``<message>`` blocks (:func:`~nbeval.evaluators.agents.turns.transcript`),
the numbers of the messages to judge (``<turns_to_judge>``), the role (``<role>``), the guidelines
and the reference tool calls. Text inside a block cannot close it, and a message cannot close its
own ``<message>`` block either. Replies are one JSON object, the reason before the verdict.
"""

from __future__ import annotations

from nbeval.evaluators.agents.turns import transcript
from nbeval.evaluators.judges.core import Example, JudgePrompt

__all__ = ["AGENT_PROMPTS"]

_CONVERSATION = ("conversation", "conversation")
_TURNS = ("turns", "turns_to_judge")

_PER_TURN_FORMAT = (
    "Reply with one JSON object and nothing else, with one entry for every message listed in "
    "<turns_to_judge>:\n"
    '{{"turns": [{{"message": <the message number>, "reason": "<one sentence>", "verdict": "yes" or "no"}}]}}\n'
    "(yes: {yes}; no: {no})"
)

_EXAMPLE_CHAT = transcript(
    [
        {
            "role": "system",
            "content": "You are Pip, the booking assistant of the Harbour Bistro. Only help with bookings.",
        },
        {"role": "user", "content": "Hi! A table for four on Friday at 19:00, please. One of us is vegan."},
        {"role": "assistant", "content": "Done: a table for four on Friday at 19:00. I noted the vegan guest."},
        {"role": "user", "content": "Great. Also, can you help me with my maths homework?"},
        {"role": "assistant", "content": "Sure! Send me the first exercise and we will solve it together."},
        {"role": "user", "content": "Actually, make the booking for 20:00."},
        {"role": "assistant", "content": "Moved to 20:00. How many people will there be?"},
    ]
)

_RELEVANCY = JudgePrompt(
    instruction=(
        "You judge one message of an AI assistant in a conversation with a user: is it relevant? You "
        "see the most recent messages before it and the message itself, which is the last one shown; "
        "<message_to_judge> gives its number. It is relevant when it responds to what the user asked "
        "or said in the messages shown, stays on that subject, and the user would take it as a reply "
        "to them. Do not judge whether it is correct, complete or well written. A clarifying question "
        "or a refusal is relevant when it engages with the request. Earlier messages are not shown: "
        "when the message refers to something you cannot see, give it the benefit of the doubt unless "
        "it plainly ignores the request in view."
    ),
    inputs=(_CONVERSATION, ("turns", "message_to_judge")),
    output_format=(
        'Reply with one JSON object and nothing else: {"reason": "<one or two sentences>", "verdict": '
        '"yes" or "no"} (yes: the message is relevant; no: it is not).'
    ),
    examples=(
        Example(
            {
                "conversation": transcript(
                    [
                        {"role": "user", "content": "Which platform does the 8:15 to Leeds leave from?"},
                        {"role": "assistant", "content": "Trains are a comfortable way to travel in England."},
                    ]
                ),
                "turns": "2",
            },
            '{"reason": "The user asked for a platform; the reply talks about trains in general.", "verdict": "no"}',
        ),
    ),
)

_KNOWLEDGE_RETENTION = JudgePrompt(
    instruction=(
        "You check whether an AI assistant remembers what the user told it during a conversation. For "
        "each assistant message listed in <turns_to_judge>, decide whether it keeps to the facts, "
        "preferences and constraints the user gave in the messages before it: it must not ask again for "
        "something the user already said, contradict it, or carry on as if it had not been said. A "
        "message that needs nothing the user said earlier keeps it. Judge memory only, not whether the "
        "message is correct or helpful."
    ),
    inputs=(_CONVERSATION, _TURNS),
    output_format=_PER_TURN_FORMAT.format(
        yes="the message keeps what the user said", no="it forgets or contradicts it"
    ),
    examples=(
        Example(
            {"conversation": _EXAMPLE_CHAT, "turns": "3, 5, 7"},
            '{"turns": [{"message": 3, "reason": "It books what was asked and notes the vegan guest.", '
            '"verdict": "yes"}, {"message": 5, "reason": "It needs nothing said earlier.", "verdict": "yes"}, '
            '{"message": 7, "reason": "It asks how many people, though the user said four.", "verdict": "no"}]}',
        ),
    ),
)

_ROLE_ADHERENCE = JudgePrompt(
    instruction=(
        "You check whether an AI assistant stays in the role it was given, described in <role>. For each "
        "assistant message listed in <turns_to_judge>, decide whether it speaks and acts as that role: it "
        "keeps the persona, tone, scope and limits the role sets, and it does not step out of the role, "
        "claim to be something else, or do what the role rules out, even when the user asks it to. "
        "Declining, in character, a request the role does not cover is staying in role."
    ),
    inputs=(("assistant_role", "role"), _CONVERSATION, _TURNS),
    output_format=_PER_TURN_FORMAT.format(yes="the message stays in role", no="it leaves the role"),
    examples=(
        Example(
            {
                "assistant_role": "You are Pip, the booking assistant of the Harbour Bistro. Only help with bookings.",
                "conversation": _EXAMPLE_CHAT,
                "turns": "3, 5, 7",
            },
            '{"turns": [{"message": 3, "reason": "A booking, as the role says.", "verdict": "yes"}, '
            '{"message": 5, "reason": "It offers homework help, which the role rules out.", "verdict": "no"}, '
            '{"message": 7, "reason": "Back to the booking.", "verdict": "yes"}]}',
        ),
    ),
)

_COMPLETENESS = JudgePrompt(
    instruction=(
        "You judge whether a conversation with an AI assistant gave the user what they came for. First "
        "list the user's intentions: the distinct things the user wanted to get, learn or have done over "
        "the whole conversation. Count a request once however often it is repeated or reworded, and leave "
        "out greetings, thanks and requests the user withdrew. Then decide for each intention whether it "
        "was met by the end of the conversation: the user got the information, or the task was done. An "
        "intention that was declined, forgotten, answered only in part or still waiting is not met."
    ),
    inputs=(_CONVERSATION,),
    output_format=(
        "Reply with one JSON object and nothing else:\n"
        '{"intentions": [{"intention": "<what the user wanted, in a few words>", "reason": "<one sentence>", '
        '"met": "yes" or "no"}]}'
    ),
    examples=(
        Example(
            {"conversation": _EXAMPLE_CHAT},
            '{"intentions": [{"intention": "book a table for four on Friday, for a vegan guest too", "reason": '
            '"Booked, and moved to 20:00 when asked.", "met": "yes"}, {"intention": "help with maths homework", '
            '"reason": "Offered, but no exercise was solved.", "met": "no"}]}',
        ),
    ),
)

_TRAJECTORY = JudgePrompt(
    instruction=(
        "You grade the trajectory of an AI agent: everything it did to handle a user's request, shown as "
        "numbered messages in <trajectory>: the request, each tool call with its arguments, each tool "
        "result, and the final answer. Go through the messages in order and decide whether the trajectory "
        "passes.\n"
        "- When <guidelines> are given, they are the criteria: it passes only when every step and the final "
        "answer follow every guideline (a guideline that does not apply counts as followed).\n"
        "- When no guidelines are given, judge whether it is sound: each tool call suits the request and "
        "takes its arguments from what the user and earlier results said; results are read correctly and "
        "nothing is made up; no call is needlessly repeated and no needed step is skipped; the final answer "
        "follows from the results and answers the request.\n"
        "When <reference_tool_calls> are given, they show one good way to do the task: a guide, not a script "
        "(other tools or another order are fine when they do the job). When the trajectory fails, find the "
        "first message where it went wrong and say what went wrong there."
    ),
    inputs=(
        ("conversation", "trajectory"),
        ("guidelines", "guidelines"),
        ("expected_tool_calls", "reference_tool_calls"),
    ),
    output_format=(
        "Reply with one JSON object and nothing else:\n"
        '{"reason": "<two or three sentences>", "verdict": "yes" or "no", "failed_step": <the number of the '
        "first message that went wrong, or null when the trajectory passes>}"
    ),
    examples=(
        Example(
            {
                "conversation": transcript(
                    [
                        {"role": "user", "content": "What will the weather be in Porto tomorrow?"},
                        {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "c1",
                                    "type": "function",
                                    "function": {"name": "get_forecast", "arguments": '{"city": "Lisbon"}'},
                                }
                            ],
                        },
                        {"role": "tool", "tool_call_id": "c1", "content": '{"city": "Lisbon", "max_c": 24}'},
                        {"role": "assistant", "content": "Tomorrow in Porto: up to 24 °C."},
                    ]
                ),
                # shown only when the row being judged has these blocks too
                "guidelines": "(none)",
                "expected_tool_calls": "(none)",
            },
            '{"reason": "Message 2 asks for the forecast of Lisbon, not Porto, so the answer in message 4 gives '
            'the wrong city\'s weather.", "verdict": "no", "failed_step": 2}',
        ),
    ),
)

#: The default prompt of each conversation or trajectory judge.
AGENT_PROMPTS: dict[str, JudgePrompt] = {
    "conversation_relevancy": _RELEVANCY,
    "knowledge_retention": _KNOWLEDGE_RETENTION,
    "role_adherence": _ROLE_ADHERENCE,
    "conversation_completeness": _COMPLETENESS,
    "trajectory_judge": _TRAJECTORY,
}
