# %% [markdown] id="c00"
# # Custom evaluators: your prompt, your function, your class
#
# Three ways to check what the built-in evaluators do not:
#
# 1. **`byop`** (bring your own prompt): a prompt template that asks a judge for true or false;
# 2. **`pipeline`**: any Python function of the row's fields that returns a number;
# 3. **a registered evaluator**: a small class with its own declaration, usable everywhere an
#    evaluator id is (the CLI and the forms too, when it is installed as a plugin).
#
# Everything runs offline on the demo lab.

# %% id="c01"
import math
import re

import nbeval
from nbeval import widgets as nw

lab = nbeval.demo_lab()

# %% [markdown] id="c02"
# ## 1. `byop`: a yes/no question of your own
#
# The template uses `{input}`, `{expected_output}`, `{context}` and `{actual_output}` where the
# row's data goes; rows lacking a field the template uses are skipped. The judge must answer
# `true` (pass) or `false` (fail).
#
# With a real judge you would pass `judge="gpt-4o-mini"` or set `NBEVAL_JUDGE_MODEL` (see
# `03_llm_judges.ipynb`). So that this notebook runs offline, **a small Python function stands in
# for the judge model**: it answers the one question asked here ("does the answer give a figure or a
# date?") by looking for digits in the answer. It is a placeholder for a model, not a judge.

# %% id="c03" tags=["chart"]
template = (
    "Question: {input}\n"
    "Answer: {actual_output}\n\n"
    "Does the answer give a concrete figure or date? Reply with true or false.")


def digit_spotter(prompt):
    """Stand-in judge: true when the answer part of the prompt contains a digit."""
    answer = prompt.split("Answer:", 1)[1].split("\n\n", 1)[0]
    return "true" if re.search(r"\d", answer) else "false"


concrete = nbeval.evaluator("byop", prompt=template, name="gives_a_figure")
figures = nbeval.evaluate(lab, [concrete], judge=digit_spotter, cache=False, progress=False)
nw.pass_fail_chart(figures, "gives_a_figure")

# %% [markdown] id="c04"
# ## 2. `pipeline`: a function of the row
#
# The function's parameter names say which fields it receives (`input`, `expected_output`,
# `actual_output`, `context` as a list of chunk texts, ..., or `row` for the whole row). It returns a
# number, a `(number, rationale)` pair or a dict with `score` and `rationale`. No judge is involved.
# Here: how long the answer is compared with the expected answer (1 is the same length).

# %% id="c05" tags=["chart"]
def length_ratio(actual_output, expected_output):
    ratio = len(actual_output.split()) / max(len(expected_output.split()), 1)
    return ratio, f"{len(actual_output.split())} words for an expected {len(expected_output.split())}"


lengths = nbeval.evaluate(lab, [nbeval.evaluator("pipeline", fn=length_ratio, name="length_ratio")],
                          progress=False)
nw.distribution_chart(lengths, "length_ratio")

# %% id="c06"
# NBVAL_CHECK_OUTPUT
print(lengths.leaderboard("length_ratio").round(2).to_string())

# %% [markdown] id="c07"
# ## 3. A registered evaluator
#
# A class with a `score(row)` method that returns an `nbeval.Score`, and an `EvaluatorSpec` that
# declares what it reads (rows missing an input are skipped), which metrics it reports (direction,
# range, default threshold, which one is primary) and its parameters. `nbeval.register(spec=...)`
# makes it available by id, exactly like a built-in one. A package makes it permanent by naming the
# class in the `nbeval.evaluators` entry-point group.
#
# This one flags **hedging**: answers that refuse or say they do not know.

# %% id="c08"
HEDGES = re.compile(r"\b(i don't know|i do not know|i can't|i cannot|not sure|unable to)\b", re.IGNORECASE)

spec = nbeval.EvaluatorSpec(
    id="hedging",
    family="custom",
    kind="score",
    inputs=("actual_output",),
    metrics=(
        nbeval.MetricSpec("hedges", direction="lower", lo=0, hi=1, threshold=0.2, primary=True,
                          description="share of answers that refuse or hedge"),
        nbeval.MetricSpec("hedge_phrases", direction="lower", lo=0, hi=math.inf, threshold=None,
                          description="hedging phrases per answer"),
    ),
    params={"allow_refusals": False},
    description="Flags answers that refuse or say they do not know (refusals allowed with allow_refusals=True).",
)


@nbeval.register(spec=spec)
class Hedging(nbeval.Evaluator):
    def score(self, row):
        found = HEDGES.findall(row.actual_output)
        if self.params["allow_refusals"]:
            found = [f for f in found if "can" not in f.lower()]
        rationale = "hedges: " + ", ".join(found) if found else None
        return nbeval.Score({"hedges": float(bool(found)), "hedge_phrases": float(len(found))},
                            rationale=rationale, label="hedge" if found else "direct")

# %% id="c09"
# NBVAL_CHECK_OUTPUT
print(nbeval.catalogue()["hedging"].description)
print(nbeval.evaluator("hedging", allow_refusals=True))

# %% [markdown] id="c10"
# It mixes freely with built-in and other custom evaluators in one run:

# %% id="c11" tags=["chart"]
mixed = nbeval.evaluate(
    lab,
    ["rouge", "hedging", nbeval.evaluator("hedging", allow_refusals=True, name="hedging_refusals_ok"),
     nbeval.evaluator("pipeline", fn=length_ratio, name="length_ratio")],
    progress=False)
mixed

# %% id="c12" tags=["chart"]
nw.heatmap(mixed, "hedging")

# %% [markdown] id="c13"
# ## Evaluators that need a model
#
# An evaluator that needs embeddings or a judge does no I/O itself: its `score` **yields a request**
# (`nbeval.Embed(texts)` or `nbeval.Chat(messages)`) and receives the answer, so the engine can batch
# every row's requests into one embedder call or one pool of judge calls, with caching and retries.
# This one measures how close each answer is to its question (embeddings come back L2-normalised, so
# the dot product is the cosine):

# %% id="c14" tags=["chart"]
@nbeval.register(spec=nbeval.EvaluatorSpec(
    id="on_topic", family="custom", kind="score", inputs=("input", "actual_output"),
    resources=("embedder",),
    metrics=(nbeval.MetricSpec("on_topic", threshold=0.4, primary=True,
                               description="cosine similarity of question and answer"),)))
class OnTopic(nbeval.Evaluator):
    def score(self, row):
        question, answer = yield nbeval.Embed((row.input, row.actual_output))
        return nbeval.Score({"on_topic": max(0.0, float(question @ answer))})


topical = nbeval.evaluate(lab, ["on_topic"], progress=False)
nw.leaderboard_chart(topical, "on_topic")
