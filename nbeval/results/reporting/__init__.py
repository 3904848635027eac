"""Reporting: what a result says to a person.

The HTML report, plain-text summaries, problems and insights, and the CI gate that turns problems into an exit status.
"""
