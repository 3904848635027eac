"""The package version, importable from every layer without importing the package facade."""

__version__ = "0.1.0"
