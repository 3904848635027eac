"""Evaluators: the framework that declares and registers them, and the built-in families.

The framework is :mod:`.base`, :mod:`.params`, :mod:`.registry` and :mod:`.scorer`; there is one
package per family (:mod:`.deterministic`, :mod:`.embedding`, :mod:`.judges`, :mod:`.models`,
:mod:`.ragas`, :mod:`.agents`). Each evaluator declares itself as the ``spec`` of its class;
:mod:`.index` lists the built-ins from an index built on first use, without importing them.
"""
