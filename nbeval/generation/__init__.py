"""Test sets from your documents.

:func:`generate` writes a :class:`~nbeval.data.model.TestSuite` of questions, answers and the chunks
they come from, with a judge model.

    suite = nbeval.generate(["handbook/", "faq.md"], n=20, judge="gpt-4o-mini")
    nbeval.generate(["handbook/"], n=200, judge="gpt-4o-mini", dry_run=True)   # calls and tokens first

**Own prompts, not ragas's generator.** ragas's test-set generator first builds a knowledge graph
of the documents: headline, summary, keyphrase and entity extractors and embeddings for every
chunk, then relationship builders, scenario and persona generation, and only then the questions.
That is several model calls per chunk before the first question, a number that depends on the
documents' structure and on what the extractors return, and so cannot be known before a run:
exactly the unestimated cost and the hanging runs users of those tools report. It also needs
langchain document loaders and its extractors' own prompts and parsers. nbeval asks one call per
test case instead (plus a bounded re-ask when a reply does not fit the schema), so
``dry_run=True`` can say what a run will take, within a few percent; related chunks for multi-hop
questions are paired by shared words, with no model (:mod:`.plan`). The prompts
(:mod:`.prompts`) follow ragas's structured calls in form: the reply's JSON schema in the system
message, the reply parsed against it, and a wrong reply answered with what was wrong.

**On nbeval's judge layer.** Every call is a :class:`~nbeval.request_kinds.Chat` request answered by
:class:`~nbeval.runtime.Resources`, as an evaluator's are: cached on disk (the same documents,
settings and seed make the same requests, so a second run makes no call), bounded in
concurrency, retried on rate limits with backoff, cut off at a time limit, counted in tokens and
priced. Duplicate questions are found with the run's embedder (the packaged MiniLM by default).

Modules: :mod:`.documents` (reading files, folders, strings and dicts), :mod:`.chunks` (cutting
them), :mod:`.prompts` (the requests and the schema), :mod:`.plan` (which cases to ask for, and
the dry run's :class:`GenerationPlan`; replacements of the same kind), :mod:`.generate` (the run),
:mod:`.report` (the suite, its report and the error of a run that made nothing).
"""

from __future__ import annotations

from nbeval.generation.chunks import DocChunk, chunk_documents
from nbeval.generation.documents import Document, load_documents
from nbeval.generation.generate import REPORT_KEY, generate, summary_lines
from nbeval.generation.plan import GenerationPlan
from nbeval.generation.prompts import CASE_SCHEMA

__all__ = [
    "CASE_SCHEMA",
    "REPORT_KEY",
    "DocChunk",
    "Document",
    "GenerationPlan",
    "chunk_documents",
    "generate",
    "load_documents",
    "summary_lines",
]
