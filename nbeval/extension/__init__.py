"""nbeval's IPython extension: ``%load_ext nbeval`` in a notebook switches it on.

    %load_ext nbeval
    %nbeval run demo -e rouge,exact_match         # the options of `nbeval run`; binds _nbeval
    %nbeval evaluators overlap                    # the catalogue as a searchable table
    %nbeval show rouge                            # one evaluator in full
    %nbeval explore                               # the case explorer on _nbeval
    %nbeval judge llama3 --base-url http://localhost:11434/v1
    %%nbeval_suite faq                            # a cell of test cases (YAML or JSON) -> faq

Loading registers the magics (:mod:`nbeval.extension.magics`), Tab completion of evaluator ids
and option names (:mod:`nbeval.extension.completion`) and rich display of datasets, suites, labs
and plans (:mod:`nbeval.extension.display`). It imports nothing heavy: pandas, the engine and
the evaluators load when a magic first needs them. Loading twice is harmless;
``%unload_ext nbeval`` removes all three.
"""

from __future__ import annotations

from typing import Any

from nbeval.extension import completion, display
from nbeval.extension.magics import NbevalMagics

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register nbeval's magics, completion and display formatters in ``ipython`` (idempotent)."""
    ipython.register_magics(NbevalMagics)
    completion.install(ipython)
    display.install(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Remove what :func:`load_ipython_extension` registered (nothing happens for what is not there)."""
    magics = ipython.magics_manager.magics
    for kind, names in NbevalMagics.magics.items():
        for name in names:
            magics[kind].pop(name, None)
    ipython.magics_manager.registry.pop(NbevalMagics.__name__, None)
    completion.uninstall(ipython)
    display.uninstall(ipython)
