# %% [markdown] id="c00"
# # Test sets from your documents
#
# Few projects start with a labelled test set. `nbeval.generate` writes one from the documents your
# RAG system answers from: a judge model reads a chunk (or two related chunks) and writes a question
# a user might ask, with the answer the chunk gives. Each test case keeps the chunk text and its
# `doc_uri` as the expected context, so the retrieval metrics (`document_recall`,
# `retriever_hit_rate`, `retriever_mrr`) work on the generated suite at once.
#
# ```python
# suite = nbeval.generate(["handbook/", "faq.md"], n=50, judge="gpt-4o-mini")
# ```
#
# Every call goes through nbeval's judge layer, as an evaluator's do: replies are cached (the same
# documents and seed give the same suite, and a second run makes no call), rate limits are retried
# with backoff, calls are bounded in number and time, and tokens and cost are counted. One call per
# test case, so `dry_run=True` says what a run will take before anything is spent.
#
# **This notebook calls no model.** Binder and CI have no API key, so a small Python function below
# stands in for the judge. It is **not a language model**: it copies sentences out of the passage
# into a question and an answer. Give `judge=` a real model (see `03_llm_judges.ipynb`) for real
# test sets.

# %% id="c01"
import json
import os
import re
import tempfile
from pathlib import Path

import pandas as pd

import nbeval
from nbeval.generation import chunk_documents, load_documents

os.chdir(tempfile.mkdtemp())  # a scratch folder: the files below are written there
Path("velo").mkdir()
Path("velo/stations.html").write_text("""<html><head><title>Stations</title></head><body>
<h1>Stations</h1>
<p>Velo has 240 stations across the city. Each station has a screen that shows how many bikes and
free docks it has, and the app shows the same numbers live.</p>
<p>A bike is returned by pushing it into a free dock until the light turns green. When a station is
full, the screen gives 15 extra minutes to reach the next station at no charge.</p>
</body></html>""", encoding="utf-8")

documents = [
    {"doc_uri": "velo/prices.md", "content": """# Prices

A single ride costs 1 euro for the first 30 minutes and 1 euro for every further 30 minutes.
A day pass costs 8 euros and includes every ride under 45 minutes for 24 hours.

The yearly subscription costs 45 euros. Students under 26 pay 25 euros a year. Electric bikes
cost 50 cents more per ride with every pass."""},
    {"doc_uri": "velo/safety.md", "content": """# Safety

Riders must be at least 14 years old. A helmet is not required by law, but Velo lends helmets
free of charge at its 20 largest stations.

Lights switch on by themselves when the bike moves. A damaged bike is reported with the red
button on its dock, and Velo takes it out of service within two hours."""},
    "velo/stations.html",  # a file (or a folder: every .txt, .md, .html and .pdf in it)
]
cache = Path("replies.sqlite")  # a fresh reply cache, so the counts below are a first run's

# %% [markdown] id="c02"
# ## What the judge is asked
#
# Each request is two messages: a system message with the rules and the JSON schema the reply must
# follow, and a user message with the passage (two for a multi-hop question), the kind of question
# wanted and, when personas are given, who asks. A reply that does not fit the schema is sent back
# with what was wrong and asked again (up to `attempts=3` calls); one that never fits is listed in
# the suite's generation report, never dropped silently.

# %% id="c03"
print(nbeval.generation.prompts.system_message())

# %% [markdown] id="c04"
# ## A stand-in judge
#
# The function below plays the judge in this notebook. **It is not a language model**: it takes a
# sentence of the passage (which one depends on the request), quotes its first words in a crude
# question, and gives the sentence as the answer, in the JSON the schema asks for. It reports no
# token counts (a real model's replies do). To show a re-ask, its first reply to any request about
# helmets is not JSON.

# %% id="c05"
PASSAGE = re.compile(r"<passage[^>]*>\n(.*?)\n</passage>", re.DOTALL)


def sentences(passage):
    flat = " ".join(line for line in passage.splitlines() if line.strip() and not line.startswith("#"))
    return [s for s in re.split(r"(?<=[.!?])\s+", flat) if len(s.split()) > 4]


def subject(sentence, words=6):
    return " ".join(sentence.rstrip(".").split()[:words]).lower()


def stand_in_writer(messages):
    """NOT a language model: copies sentences of the passages into the JSON the schema asks for."""
    ask = messages[1]["content"]
    if "helmet" in ask and len(messages) == 2:
        return "Here is a good question: do I need a helmet?"  # not JSON: nbeval asks again
    passages = [sentences(p) for p in PASSAGE.findall(ask)]
    k = sum(map(ord, ask))  # which sentence: the same request always picks the same one
    picked = [p[k % len(p)] for p in passages]
    who = re.search(r"Ask it as this person would: (\w+)", ask)
    opening = f"As a {who.group(1)}, what" if who else "What"
    if len(picked) == 1:
        question = f'{opening} does Velo say about "{subject(picked[0])}..."?'
    else:
        question = f'{opening} links "{subject(picked[0], 5)}..." and "{subject(picked[1], 5)}..."?'
    return json.dumps({"question": question, "answer": " ".join(picked)})

# %% [markdown] id="c06"
# ## First, what it would take
#
# `dry_run=True` reads and cuts the documents, lays out the questions and counts the calls and
# tokens, asking nothing. Tokens are estimated as nbeval's dry run estimates an evaluation's (four
# characters a token), the replies at the length the prompt asks for; the tests check the estimate
# within 15% of a real run's counts.

# %% id="c07"
# NBVAL_CHECK_OUTPUT
settings = dict(judge=stand_in_writer, personas=["tourist", "commuter"], chunk_size=200, chunk_overlap=20,
                seed=0, cache=cache, progress=False)  # progress=False: no bar in this notebook's outputs
plan = nbeval.generate(documents, 8, dry_run=True, **settings)
print(plan)

# %% [markdown] id="c08"
# ## Generating
#
# Half the questions are single-hop (one chunk answers them), half multi-hop (they need two related
# chunks, paired by the words they share); each kind cycles through the personas.

# %% id="c09"
# NBVAL_CHECK_OUTPUT
suite = nbeval.generate(documents, 8, **settings)
table = pd.DataFrame(
    [{"kind": c.extra["generation"]["kind"], "persona": c.extra["generation"]["persona"],
      "question": c.prompt, "from chunks": ", ".join(c.extra["generation"]["chunk_ids"])}
     for c in suite.test_cases]
)
print(table.to_string(index=False, max_colwidth=80))

# %% [markdown] id="c10"
# Each case holds the question (`prompt`), the answer (`expected_output`), the chunks it was written
# from (`expected_context`, text and `doc_uri`), the categories `generated:<kind>` and
# `persona:<name>`, and, under `extra["generation"]`, the chunk ids and a review status (`pending`:
# read generated cases before relying on them).

# %% id="c11"
# NBVAL_CHECK_OUTPUT
print(json.dumps(suite.test_cases[0].to_json(), indent=1)[:900])

# %% [markdown] id="c12"
# ## The generation report
#
# `suite.extra["generation_report"]` counts the calls, tokens and cost, and lists every reply that
# never fitted the schema (with the raw replies), every failed call and every duplicate question
# removed (questions are compared by embedding; near-duplicates of an earlier one are dropped and
# replaced from the plan). The stand-in's reply about helmets was not JSON the first time: it was
# asked again, and the second reply fitted.

# %% id="c13"
# NBVAL_CHECK_OUTPUT
report = suite.extra["generation_report"]
print({k: report[k] for k in ("requested", "made", "calls", "cached_calls", "reasked", "duplicates_removed")})
print("never fitted:", report["parse_failures"], "failed calls:", report["call_failures"])
print(*nbeval.generation.summary_lines(suite), sep="\n")

# %% [markdown] id="c14"
# The same documents, settings and seed with the same cache give the same suite, and make no call:

# %% id="c15"
# NBVAL_CHECK_OUTPUT
again = nbeval.generate(documents, 8, **settings)
print("same suite:", [c.to_json() for c in again.test_cases] == [c.to_json() for c in suite.test_cases])
print("calls:", again.extra["generation_report"]["calls"], "cached:", again.extra["generation_report"]["cached_calls"])

# %% [markdown] id="c16"
# ## Evaluating a retriever on the generated suite
#
# The expected contexts make retrieval metrics work with no labelling. Below, a **stand-in
# retriever** (word overlap between the question and each chunk; not a real search engine) returns
# the one best chunk for every question, and nbeval scores what it found. A multi-hop question
# written from two documents needs both, so one chunk finds at most half of them (`document_recall`
# 0.5 on that question).

# %% id="c17"
# NBVAL_CHECK_OUTPUT
chunks = chunk_documents(load_documents(documents).documents, chunk_size=200, overlap=20)


def words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def retrieve(question, k=1):
    ranked = sorted(chunks, key=lambda c: -len(words(question) & words(c.content)))
    return [{"content": c.content, "doc_uri": c.doc_uri} for c in ranked[:k]]


rows = [{"key": c.key, "input": c.prompt, "actual_output": c.expected_output, "model_key": "word-overlap",
         "context": retrieve(c.prompt), "expected_context": [x.to_json() for x in c.expected_context]}
        for c in suite.test_cases]
result = nbeval.evaluate(rows, ["retriever_hit_rate", "retriever_mrr", "document_recall"], progress=False)
board = result.leaderboard()[["retriever_hit_rate.hit_rate", "retriever_mrr.mrr", "document_recall.document_recall"]]
print(board.round(3).to_string())
kinds = {c.key: c.extra["generation"]["kind"] for c in suite.test_cases}
recall = result.scores.query("metric == 'document_recall'")
print(recall.groupby(recall["key"].map(kinds))["value"].mean().round(3).to_string())

# %% [markdown] id="c20"
# ## Reviewing the generated cases
#
# Generated cases are drafts: read them before relying on them. The SuiteBuilder's **review mode**
# shows one generated case at a time, its question and expected answer beside the chunk(s) it was
# written from, with the counts per kind. **Accept** it, **Edit** it (the question or the answer;
# what the generator wrote is kept under `extra["generation"]["original"]`) or **Reject** it with a
# reason: a rejected case leaves the suite but is kept aside, whole, in
# `suite.extra["rejected_cases"]` (saved with the suite, and restorable). Each action moves on to
# the next pending case. Every button and text box is reached with Tab and pressed with Enter or
# Space; the same actions are methods, which is how the cell after the form drives it.

# %% id="c21"
from nbeval import widgets as nw

builder = nw.SuiteBuilder(suite, review=True)
builder

# %% id="c22"
# NBVAL_CHECK_OUTPUT
review = builder.reviewer
review.accept()  # the first case is right
review.edit(expected_output=suite.test_cases[1].expected_output + " (checked against the price list)")
review.reject("asks about two sentences at once")  # kept aside, not lost
print(review.counts())
print("rejected:", [(e["case"]["prompt"][:60], e["case"]["generation"]["reason"]) for e in review.rejected])
reviewed = review.reviewed_suite()  # the accepted cases (and any written by hand)
print(len(reviewed.test_cases), "accepted;", len(suite.test_cases) - 3, "still pending")

# %% [markdown] id="c18"
# ## Saving, and the command line
#
# The suite saves as JSON with its report, and loads back with `nbeval.load`. The same generation
# runs from a shell, and in a notebook as a magic (`%load_ext nbeval`):
#
# ```bash
# nbeval generate handbook/ faq.md -n 50 --judge gpt-4o-mini --dry-run      # calls and tokens first
# nbeval generate handbook/ faq.md -n 50 --judge gpt-4o-mini --out suite.json
# ```
#
# ```python
# %nbeval generate handbook/ -n 50 --judge llama3 --judge-base-url http://localhost:11434/v1 -o suite
# ```
#
# A bar counts the cases made while a run asks (`progress=False` or `--no-progress`: none).

# %% id="c19"
# NBVAL_CHECK_OUTPUT
path = Path("velo-suite.json")
suite.save(path)
loaded = nbeval.load(path)
print(type(loaded).__name__, len(loaded.test_cases), "cases;", "report kept:", "generation_report" in loaded.extra)
