"""The data model and its readers (see :mod:`nbeval.data.model` and :mod:`nbeval.data.readers`)."""
