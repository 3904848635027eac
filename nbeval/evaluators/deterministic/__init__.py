"""Deterministic evaluators: matching, lexical overlap, leakage, classification and retrieval.

Each evaluator declares itself as its class's ``spec``; no model is needed to score them.
"""
