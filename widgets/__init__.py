"""nbeval's notebook kit: Altair renderers and ipywidgets forms. Import it as ``nbeval.widgets``."""

if __name__ != "nbeval.widgets":  # the folder is widgets/ in the repo; it must not act as a top-level module
    msg = "the notebook kit is imported as 'nbeval.widgets', not as a top-level 'widgets' module"
    raise ImportError(msg)
