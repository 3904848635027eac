"""Evaluators: the framework (:mod:`.base`, :mod:`.params`, :mod:`.registry`, :mod:`.scorer`) and
one package per family (:mod:`.deterministic`, :mod:`.embedding`, :mod:`.judges`, :mod:`.models`,
:mod:`.ragas`, :mod:`.agents`). Each evaluator declares itself as the ``spec`` of its class;
:mod:`.index` lists the built-ins from an index built on first use, without importing them.
"""
