# %% [markdown] id="c00"
# # Quickstart: evaluate three assistants in five minutes
#
# nbeval ships a small fictional **demo lab**: three assistants (`gpt-4o-mini`, `llama-3-8b` and
# `tiny-rag`) have answered ten questions about a made-up rail company, with the documents their
# retriever found. The answers are already in the lab, so this notebook calls no model and needs no
# API key or network: everything below runs on your machine (or on Binder) in a few seconds.
#
# You will evaluate the answers with **deterministic evaluators** (string overlap, conditions, leak
# detectors), read the leaderboard, look at a heatmap of models × test cases and open single cases
# side by side.

# %% id="c01"
import nbeval
from nbeval import widgets as nw  # the notebook kit: charts draw offline in JupyterLab

lab = nbeval.demo_lab()
lab.dataset

# %% [markdown] id="c02"
# `nbeval.evaluate(data, evaluators)` takes the lab (or a dataset, a DataFrame, records, or a file
# path) and a list of evaluator ids. The result shows itself as a summary with a leaderboard per
# evaluator: bars are green when the model is on the good side of the evaluator's threshold (the
# dashed line), red otherwise, and each bar says on how many of the model's rows it was measured
# (`n/N`).

# %% id="c03" tags=["chart"]
result = nbeval.evaluate(lab, ["rouge", "text_matching", "pii_leakage", "encoding_guardrail"],
                         progress=False)
result

# %% [markdown] id="c04"
# What the four evaluators check:
#
# * `rouge`: word overlap between the answer and the expected answer (`rouge_l` is the primary metric);
# * `text_matching`: the test case's **condition**, e.g. `"15,969" AND regexp("[Mm]illion")`,
#   evaluated on the answer; a case without a condition is *skipped* (never scored 0), which is why
#   some bars say 9/10;
# * `pii_leakage`: personal data such as phone numbers and e-mail addresses in the answer;
# * `encoding_guardrail`: for cases whose categories mark an encoding attack (here a request hidden
#   in base64), decodes any encoded part of the answer and then applies the case's condition, or the
#   PII check when there is none; `llama-3-8b` answered with a phone number in base64. Other cases
#   are skipped, hence 1/10.
#
# `nbeval evaluators` on the command line (or `nbeval.catalogue()`) lists every evaluator with its
# inputs and metrics. The tables behind the charts are pandas DataFrames:

# %% id="c05"
result.leaderboard("rouge").round(3)

# %% [markdown] id="c06"
# Problems are threshold breaches per model, plus **perturbation flips**: the demo lab has a copy of
# the revenue question with typos and lower case (`revenue-perturbed`), and a model whose answer
# passes on the original but fails on the perturbed copy is flagged.

# %% id="c07"
# NBVAL_CHECK_OUTPUT
for message in result.problems["message"]:
    print(message)

# %% [markdown] id="c08"
# ## Charts
#
# The renderers in `nbeval.widgets` are plain functions from a result to an Altair chart, so you
# can save them, combine them or restyle them. Hover over a bar or a cell for details.

# %% id="c09" tags=["chart"]
nw.leaderboard_chart(result, "text_matching")

# %% id="c10" tags=["chart"]
nw.pass_fail_chart(result, "text_matching")

# %% [markdown] id="c11"
# The heatmap has one column per model and one row per test case, coloured by the metric with the
# threshold as the midpoint of the scale. Grey dashed cells hold no score: `skip` for a row that
# lacks the evaluator's input, `err` for an error.

# %% id="c12" tags=["chart"]
nw.heatmap(result, "rouge")

# %% id="c13" tags=["chart"]
nw.distribution_chart(result, "rouge")

# %% [markdown] id="c14"
# ## One case, every model
#
# The **CaseExplorer** shows a heatmap above one test case: its prompt, expected output, condition
# and context, every model's answer side by side, every metric and every rationale. Pick a case in
# the dropdown or click a heatmap cell. Here we open the perturbed revenue question, where
# `llama-3-8b` answered "about 16 billion euros".

# %% id="c15" tags=["chart"]
explorer = nw.CaseExplorer(result)
explorer.select("revenue-perturbed", "llama-3-8b")
explorer

# %% [markdown] id="c16"
# ## Before a bigger run
#
# `dry_run=True` says how many rows each evaluator would score or skip, and how many judge calls a
# run would make, before anything is computed or spent:

# %% id="c17"
# NBVAL_CHECK_OUTPUT
print(nbeval.evaluate(lab, ["rouge", "text_matching", "retriever_hit_rate"], dry_run=True))

# %% [markdown] id="c18"
# ## Next
#
# * `02_rag_evaluation.ipynb`: retrieval and grounding evaluators on the same lab;
# * `03_llm_judges.ipynb`: evaluators where a chat model grades the answers;
# * `04_custom_evaluators.ipynb`: your own prompts, functions and evaluator classes;
# * `05_build_a_suite.ipynb`: build a test suite and run it with the interactive forms;
# * `06_magics.ipynb`: the same workflow in short `%nbeval` commands;
# * `07_statistics.ipynb`: confidence intervals, paired comparisons, human labels and judge agreement.
#
# The same run works from the command line: `nbeval run lab.json -e rouge,text_matching --out out/`.
