"""The package version, importable from every layer without importing the package facade."""

#: nbeval's version, as packaging metadata and ``nbeval --version`` give it.
__version__ = "0.1.0"
