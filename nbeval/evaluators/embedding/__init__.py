"""Embedding evaluators: similarity, groundedness and alignment from sentence embeddings.

Each evaluator declares itself as its class's ``spec``. Scoring yields :class:`~nbeval.requests.Embed`
(and :class:`~nbeval.requests.ScorePairs`) requests; the runtime answers them in batches.
"""
