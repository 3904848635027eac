"""Statistics of results: intervals, comparisons, agreement, the arena, robustness and label queues.

Intervals, paired comparisons, agreement with people and among jurors, the arena fit from
head-to-head verdicts, robustness to perturbation, and which rows to label next.
"""
