"""The RAGAS family: ragas's metric code computes the numbers, nbeval answers its model calls.

Each evaluator declares itself as its class's ``spec``. :mod:`.bridge` runs a ragas metric's coroutine
and turns each model call it makes into an nbeval request; :mod:`.evaluators` holds the six
evaluators, on the base classes of :mod:`.base`; :mod:`.transcript` writes what ragas saw into a
row's rationale; :mod:`.standin` is a rule-based judge that answers ragas's prompts (tutorials,
tests and dry-run estimates). Only :mod:`.bridge` imports ragas, and :mod:`.base` imports both
only when an evaluator is first built (importing the evaluators, to list or index them, imports
no ragas).
"""
