# %% [markdown] id="c00"
# # Agents and conversations: tool calls, trajectories and multi-turn chats
#
# An agent answers by calling tools, and a chat goes over several turns. nbeval stores either as the
# row's `messages`, in the OpenAI chat format (the assistant's `tool_calls`, the `tool` messages with
# their results), and scores them with the same engine, cache and statistics as any row:
#
# * **tool calls** against reference calls, with no judge (`tool_call_accuracy`, `tool_call_f1`,
#   computed by ragas);
# * **the whole trajectory** against guidelines (`trajectory_judge`), naming the step that went wrong;
# * **conversations** turn by turn (`conversation_relevancy`, `knowledge_retention`, `role_adherence`)
#   and as a whole (`conversation_completeness`).
#
# **This notebook calls no model.** The two "agents" below are plain Python functions that call two
# tools, and the judge is a stand-in function with crude rules (it is not a language model). Give
# `judge=` a real model for real judgements.

# %% id="c01"
import json
import re
import tempfile
from pathlib import Path

import nbeval
from nbeval import widgets as nw
from nbeval.data.conversation import render_messages

PLACES = {"Paris": (48.86, 2.35), "Lima": (-12.05, -77.04), "Oslo": (59.91, 10.75)}
WEATHER = {(48.86, 2.35): "rain, 14 °C", (-12.05, -77.04): "sunny, 24 °C", (59.91, 10.75): "snow, -3 °C"}


def geocode(city):
    lat, lon = PLACES[city]
    return {"lat": lat, "lon": lon}


def forecast(lat, lon):
    return WEATHER.get((lat, lon), "unknown place")


def call(n, name, **arguments):
    """An assistant message asking for one tool call."""
    fn = {"name": name, "arguments": json.dumps(arguments)}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{n}", "type": "function", "function": fn}]}


def result(n, value):
    return {"role": "tool", "tool_call_id": f"c{n}", "content": json.dumps(value)}


def city_of(prompt):
    return re.search(r"in (\w+)\?", prompt).group(1)


def careful_agent(prompt):
    """Looks the city up, then asks for the forecast at its coordinates."""
    city = city_of(prompt)
    place = geocode(city)
    weather = forecast(**place)
    return [call(1, "geocode", city=city), result(1, place),
            call(2, "forecast", **place), result(2, weather),
            {"role": "assistant", "content": f"In {city}: {weather}."}]


def hasty_agent(prompt):
    """Skips the lookup for Lima, and answers Oslo from memory without any tool."""
    city = city_of(prompt)
    if city == "Oslo":
        return [{"role": "assistant", "content": "In Oslo: mild and dry."}]
    if city == "Lima":
        return [call(1, "forecast", city=city), result(1, "unknown place"),
                {"role": "assistant", "content": "In Lima: sunny, 24 °C."}]
    return careful_agent(prompt)


# %% [markdown] id="c02"
# ## Collecting the agents' trajectories
#
# A test case may carry the calls a good agent makes (`expected_tool_calls`). `nbeval.collect`
# accepts an agent: a function that returns the messages it produced. They become the row's
# `messages`, after the user's prompt; the row's answer is the assistant's last text.

# %% id="c03"
def expected(city):
    lat, lon = PLACES[city]
    return [{"name": "geocode", "arguments": {"city": city}}, {"name": "forecast", "arguments": {"lat": lat, "lon": lon}}]


suite = nbeval.TestSuite.from_dict({"name": "weather", "tests": [{"test_cases": [
    {"key": city.lower(), "prompt": f"What is the weather in {city}?", "expected_tool_calls": expected(city),
     "guidelines": ["Look the city up before asking for its forecast."]}
    for city in PLACES
]}]})
lab = nbeval.collect(suite, {"careful": careful_agent, "hasty": hasty_agent}, cache=False).complete(progress=False)

# %% id="c04"
# NBVAL_CHECK_OUTPUT
row = next(r for r in lab.dataset.rows if r.model_key == "hasty" and r.key == "lima")
print(render_messages(row.messages, numbered=True))

# %% [markdown] id="c05"
# ## Tool calls against the reference, with no judge
#
# `tool_call_accuracy` pairs the calls made with the expected ones in order (`strict_order=False`
# ignores the order): 0 when the tools called are not the expected ones, otherwise the share of
# arguments that match. `tool_call_f1` counts the calls made and expected as sets. Both are ragas's
# metrics, computed by ragas itself.

# %% id="c06"
# NBVAL_CHECK_OUTPUT
calls = nbeval.evaluate(lab, ["tool_call_accuracy", "tool_call_f1"], progress=False)
s = calls.scores
print(s.pivot_table(index="key", columns=["evaluator", "model_key"], values="value").to_string())
print(s[(s["model_key"] == "hasty") & (s["key"] == "lima") & (s["evaluator"] == "tool_call_accuracy")]
      ["rationale"].iloc[0])

# %% [markdown] id="c07"
# ## A judge for the whole trajectory
#
# `trajectory_judge` shows the judge every step (the request, each call with its arguments, each
# result, the answer) with the row's guidelines and reference calls, and asks for a verdict and the
# number of the first message that went wrong. The stand-in below follows the guideline with a
# rule: a `forecast` call must come after a `geocode` call, and a trajectory without any call fails
# at its answer. A real judge reads the same prompt (`print(nbeval.evaluator("trajectory_judge").prompt)`).

# %% id="c08"
MESSAGE = re.compile(r'<message number="(\d+)" role="(\w+)">\n(.*?)\n</message>', re.DOTALL)


def stand_in_judge(messages):
    """Not a language model: crude rules so the notebook runs offline."""
    data = messages[-1]["content"]
    steps = [(int(n), role, text) for n, role, text in MESSAGE.findall(data)]
    looked_up = False
    for number, role, text in steps:
        looked_up = looked_up or "calls geocode(" in text
        if "calls forecast(" in text and not looked_up:
            reason = f"Message {number} asks for a forecast before looking the city up."
            return json.dumps({"reason": reason, "verdict": "no", "failed_step": number})
    if not any("calls " in text for _, _, text in steps):
        last = steps[-1][0]
        reason = f"The answer in message {last} uses no tool at all."
        return json.dumps({"reason": reason, "verdict": "no", "failed_step": last})
    return json.dumps({"reason": "Each step follows the guideline.", "verdict": "yes", "failed_step": None})


judged = nbeval.evaluate(lab, ["trajectory_judge"], judge=stand_in_judge, cache=False, progress=False)
judged

# %% id="c09"
# NBVAL_CHECK_OUTPUT
for _, r in judged.scores.iterrows():
    print(f"{r['model_key']:<8} {r['key']:<6} {r['label']:<4} {r['rationale']}")

# %% [markdown] id="c10"
# The explorer shows each model's conversation as numbered turns, each tool call and its result
# folded under it, beside the verdicts. Click a heatmap cell to switch case.

# %% id="c11" tags=["chart"]
explorer = nw.CaseExplorer(judged)
explorer.select("lima", "hasty")
explorer

# %% [markdown] id="c12"
# ## Traces from your agent framework
#
# Agents instrumented with OpenTelemetry and the OpenInference conventions (Phoenix, LangChain,
# LlamaIndex and OpenAI instrumentors) export traces as OTLP JSON. `nbeval.load` reads such a file
# (the collector's JSON lines, or one JSON object) as one row per trace: the conversation from the
# LLM spans, tool calls from the TOOL spans in time order, retrieved documents as the context.
# The cell below writes a one-span trace by hand to show the shape.

# %% id="c13"
# NBVAL_CHECK_OUTPUT
def attribute(key, value):
    return {"key": key, "value": {"stringValue": value}}


span = {
    "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "chat",
    "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001500000000",
    "attributes": [
        attribute("openinference.span.kind", "LLM"), attribute("llm.model_name", "my-agent"),
        attribute("llm.input_messages.0.message.role", "user"),
        attribute("llm.input_messages.0.message.content", "What is the weather in Paris?"),
        attribute("llm.output_messages.0.message.role", "assistant"),
        attribute("llm.output_messages.0.message.content", "Rain, 14 °C."),
    ],
}
folder = Path(tempfile.mkdtemp())
(folder / "traces.jsonl").write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n")
traces = nbeval.load(folder / "traces.jsonl")
trace_row = traces.rows[0]
print(trace_row.key, trace_row.model_key, trace_row.actual_duration)
print(trace_row.input, "->", trace_row.actual_output)
