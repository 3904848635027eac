"""``nbeval evaluator show ID`` and ``%nbeval show ID``: one evaluator in full."""

from __future__ import annotations

import argparse

from nbeval.commands.base import Arg, Command, MagicSpelling, arg

__all__ = ["COMMAND", "EvaluatorShow"]


class EvaluatorShow(Command):
    """One evaluator: its inputs, parameters, metrics, thresholds and judge prompt."""

    name = "evaluator show"
    help = "show an evaluator's inputs, metrics and prompt"
    parent_help = "show one evaluator"
    order = 2
    arguments: tuple[Arg, ...] = (
        arg("id", complete="evaluator", help="the evaluator's id (`nbeval evaluators` lists them)"),
    )
    magic = MagicSpelling("show", "one evaluator in full: inputs, metrics, thresholds, judge prompt", order=3)

    def run(self, args: argparse.Namespace) -> int:
        """Print the evaluator ``args.id`` in full."""
        from nbeval.evaluators.registry import get_class, get_spec

        spec = get_spec(args.id)
        print(f"{spec.id}  ({spec.family}, {spec.kind})\n\n{spec.description}\n")
        print(f"inputs:    {', '.join(spec.inputs)}")
        if spec.optional_inputs:
            print(f"optional:  {', '.join(spec.optional_inputs)}")
        if spec.resources:
            print(f"resources: {', '.join(spec.resources)}")
        if spec.params:
            print("params:")
            for p in spec.params.declared:  # each as a keyword argument with its default, its type and what it does
                print(
                    f"  {p.name}={p.default!r}  ({p.type_name})" + (f"\n      {p.description}" if p.description else "")
                )
        print("metrics:")
        for m in spec.metrics:
            print(
                f"  {m.name:<28} {m.direction:<7} [{m.lo:g}, {m.hi:g}]  threshold {m.threshold}"
                f"{'  (primary)' if m is spec.primary else ''}"
            )
        cls = get_class(args.id)
        prompt_text = getattr(cls, "prompt_text", None)
        if callable(prompt_text):
            print("\n" + getattr(cls, "prompt_heading", "prompt (replace with prompt=...):") + "\n")
            print(prompt_text())
        return 0


#: The ``nbeval evaluator show`` subcommand (``%nbeval show``); :func:`nbeval.commands.all_commands` finds it here.
COMMAND = EvaluatorShow()
