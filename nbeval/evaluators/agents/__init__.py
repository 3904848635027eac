"""The agents family: evaluators of a row's conversation, its tool calls and its topics.

They read a row's conversation (``messages``), the tool calls made in it and the ones expected
(``expected_tool_calls``), and the topics allowed (``reference_topics``).

:mod:`.ragas_agents` holds ragas's agent metrics (tool-call accuracy and F1, goal accuracy, topic
adherence), computed by ragas and driven like the RAGAS family; ragas is imported only when one of
them is first built, so importing the family (to list or index it) imports no ragas.
:mod:`.conversation` holds the conversation judges (relevancy over a sliding window, knowledge
retention, role adherence, completeness) and :mod:`.trajectory` the judge of a whole agent
trajectory; :mod:`.prompts` their prompts and :mod:`.turns` what they share (the numbered
transcript, reading per-turn verdicts).
"""
