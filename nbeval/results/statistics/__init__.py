"""Statistics: intervals, paired comparisons, agreement with people and among jurors, the arena fit
from head-to-head verdicts, robustness to perturbation, and which rows to label next.
"""
