"""Tests of nbeval.perturbation: nbeval.perturb, the built-in perturbators, the registry and the CLI."""
