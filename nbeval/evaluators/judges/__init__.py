"""Judge evaluators: a chat model grades each row.

Each evaluator declares itself as its class's ``spec``. :mod:`.core` is what every judge evaluator
shares (prompts, the request, parsing hooks), :mod:`.prompts` the built-in prompts, :mod:`.parse`
the reply parsers, and :mod:`.boolean`, :mod:`.rating`, :mod:`.score` the three kinds of judge.
"""
