"""Embedding evaluators: similarity, groundedness and alignment from sentence embeddings.

Each evaluator declares itself as its class's ``spec``. Scoring yields :class:`~nbeval.request_kinds.Embed`
(and :class:`~nbeval.request_kinds.ScorePairs`) requests; the runtime answers them in batches.
"""
