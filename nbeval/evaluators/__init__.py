"""Evaluators: the framework (:mod:`.base`, :mod:`.registry`), the catalogue (``catalogue/*.toml``)
and one module per family of implementations."""
