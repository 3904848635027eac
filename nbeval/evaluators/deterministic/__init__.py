"""Deterministic evaluators: matching, lexical overlap, leakage, classification and retrieval.

Declared in ``catalogue.toml`` beside this file; no model is needed to score them.
"""
