"""A retriever and an application for the service's tests, loaded by ``module:function``.

The knowledge base: three chunks from two documents. The retriever ranks by how many words a
chunk shares with the query (ties keep the order below), which makes its ranking easy to work out
by hand in the tests.
"""

from __future__ import annotations

from typing import Any

CHUNKS = [
    {"content": "AWEL is a workflow expression language for LLM applications", "doc_uri": "awel.md"},
    {"content": "Install DB-GPT with pip and start the web server", "doc_uri": "install.md"},
    {"content": "AWEL operators chain retrieval and model calls", "doc_uri": "awel.md"},
]


def _words(text: str) -> set[str]:
    return {w.strip("?.,").lower() for w in text.split()}


def retriever(query: str, top_k: int) -> list[dict[str, Any]]:
    """The ``top_k`` chunks sharing most words with ``query``; raises for the query ``boom``."""
    if query == "boom":
        raise RuntimeError("the index is down")
    q = _words(query)
    ranked = sorted(range(len(CHUNKS)), key=lambda i: -len(q & _words(CHUNKS[i]["content"])))
    return [CHUNKS[i] for i in ranked][:top_k]


def documents(doc_name: str) -> list[dict[str, Any]]:
    """The chunks of the document ``doc_name``, as a knowledge base lists them."""
    return [c for c in CHUNKS if c["doc_uri"] == doc_name]


def app(query: str, contexts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Answers with the first retrieved chunk, quoting the question."""
    first = contexts[0]["content"] if contexts else "I do not know"
    return {"answer": f"About {query!r}: {first}", "contexts": contexts or []}
