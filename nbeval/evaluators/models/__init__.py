"""Model-based evaluators: a local model scores each row (classifiers, NLI, causal language models).

Each evaluator declares itself as its class's ``spec``. :mod:`.base` is what they share (choosing the
model: ``model=``, ``device=``, ``batch_size=``); :mod:`.classifiers` holds ``toxicity``,
``fairness_bias``, ``hallucination`` and ``summac``; :mod:`.lm_scores` holds ``perplexity`` and the
four GPTScore evaluators. Scoring does no I/O: it yields :class:`~nbeval.request_kinds.Classify` and
:class:`~nbeval.request_kinds.TokenLogProbs` requests, which the engine pools across rows and
evaluators and :mod:`nbeval.resources.local_models` answers.
"""
