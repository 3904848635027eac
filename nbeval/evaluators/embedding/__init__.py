"""Embedding evaluators: similarity, groundedness and alignment from sentence embeddings.

Declared in ``catalogue.toml`` beside this file. Scoring yields :class:`~nbeval.requests.Embed`
(and :class:`~nbeval.requests.ScorePairs`) requests; the runtime answers them in batches.
"""
