"""Runs: results over time.

The registry of runs saved in one folder and the diff of two runs, with its coverage and its gate.
"""
