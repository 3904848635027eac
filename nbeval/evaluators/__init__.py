"""Evaluators: the framework (:mod:`.base`, :mod:`.params`, :mod:`.registry`, :mod:`.scorer`) and
one package per family (:mod:`.deterministic`, :mod:`.embedding`, :mod:`.judges`, :mod:`.models`,
:mod:`.ragas`, :mod:`.agents`). Each evaluator declares itself as the ``spec`` of its class;
:mod:`.index` lists the built-ins from the generated ``index.json`` without importing them."""
