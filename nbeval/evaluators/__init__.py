"""Evaluators: the framework (:mod:`.base`, :mod:`.registry`) and one package per family
(:mod:`.deterministic`, :mod:`.embedding`, :mod:`.judges`), each declaring its evaluators in its
own ``catalogue.toml``."""
