"""A causal language model that tells how likely each continuation is after its prefix.

It answers :class:`~nbeval.request_kinds.TokenLogProbs` requests for ``perplexity`` and the GPTScore
evaluators. The engine (:class:`nbeval.request_kinds.local_model.LocalModelHandler`) pools every item of a
round for one model, deduplicated, and calls :meth:`CausalLMRunner.logprobs` once; the runner
sorts the sequences by length, batches them and hands back one
:class:`~nbeval.request_kinds.TokenScores` per item, in order.

How an item becomes token ids. The prefix and the continuation are tokenised *separately* and
the ids concatenated, so the scored tokens are exactly the continuation's own tokens (with a
byte-level BPE such as GPT-2's, a continuation that starts with a space, ``" Yes"``, gets the
tokens it would have in running text). A BOS token goes in front only when the tokenizer adds
one by itself; the continuation never gets special tokens.

Which tokens are scored. Every continuation token that has something before it: with a prefix,
all of them; with an empty prefix and no BOS, tokens 2..n (the first has no prediction), which is
exactly what transformers averages with ``labels=input_ids``.

Texts longer than the model's context (``n_positions`` or ``max_position_embeddings``):

- when the continuation fits, the prefix is cut from the *left* so the window ends with the whole
  continuation (the instruction's start is lost, the text next to the continuation kept);
- otherwise the sequence is scored in overlapping windows, the method of the transformers guide
  "Perplexity of fixed-length models": windows of the context length advancing by half of it,
  each token scored once, by the first window that has it among its new tokens, with the window's
  earlier tokens as context.

:meth:`CausalLMRunner.truncated` says when the first scored token does not see the whole text
before it, so the row is told.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nbeval.errors import MissingDependency, ResourceError
from nbeval.resources.local_model_types import TokenScores

__all__ = ["DEFAULT_BATCH_SIZE", "CausalLMRunner", "plan_windows"]

#: Sequences per forward pass when none is asked for, by device type.
DEFAULT_BATCH_SIZE = {"cpu": 16, "cuda": 64}
_INSTALL_HINT = "pip install 'nbeval[models]'"
_LOGITS_BUDGET = 2**28  # logit values one batch may produce (1 GiB in float32): bounds memory on long texts
_FALLBACK_CONTEXT = 1024
_CUT_REMEMBERED = 200_000  # items whose truncation is remembered


@dataclass(frozen=True)
class _Plan:
    """How one item runs: its ids, the first scored position and the windows that score it."""

    ids: tuple[int, ...]
    start: int
    """Position of the first scored token; tokens ``start..len(ids)-1`` are scored."""
    windows: tuple[tuple[int, int, int], ...]
    """``(begin, end, first_target)``: the model reads ``ids[begin:end]`` and scores positions
    ``first_target..end-1``."""
    truncated: bool


def plan_windows(n: int, start: int, context: int, stride: int) -> tuple[tuple[tuple[int, int, int], ...], bool]:
    """The windows that score the positions of a sequence from ``start`` on.

    They score positions ``start..n-1`` of an ``n``-token sequence; also returns whether text before
    ``start`` is left out of the first one.

    Within the context, one window. A continuation that fits: one window ending at ``n`` (the
    prefix cut from the left). Otherwise windows ``[b, b + context)`` with ``b`` advancing by
    ``stride``, each scoring the positions the previous one did not reach; from ``start = 1``
    these are exactly the windows of the transformers perplexity guide.
    """
    if start >= n:
        return (), False
    if n <= context:
        return ((0, n, start),), False
    if n - context < start:  # the continuation and at least one token before it fit
        return ((n - context, n, start),), True
    begin = max(0, start - (context - stride))
    first = begin
    windows = []
    target = start
    while True:
        end = min(begin + context, n)
        windows.append((begin, end, target))
        target = end
        if end == n:
            break
        begin += stride
    return tuple(windows), first > 0


class _Loaded:
    """What every view of one runner shares: the model, its tokenizer, the lock, the counter."""

    def __init__(self) -> None:
        self.model: Any = None
        self.tokenizer: Any = None
        self.context = 0
        self.vocab = 0
        self.bos: list[int] = []
        self.lock = threading.RLock()
        self.forwards = 0
        self.cut: dict[tuple[str, str], bool] = {}
        """Whether each scored item was truncated, remembered so that asking does not tokenise again."""


class CausalLMRunner:
    """A transformers causal language model behind a batching :meth:`logprobs`.

    Parameters:
        name: a hub name (``"distilgpt2"``) or a local directory saved with ``save_pretrained``.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
        batch_size: sequences per forward pass (``None``: :data:`DEFAULT_BATCH_SIZE` for the device).

    Cheap to build: the model loads on the first call that needs it, once, under a lock.
    """

    def __init__(self, name: str, device: str = "cpu", batch_size: int | None = None) -> None:
        self.name = str(name)
        self.device = str(device)
        kind = self.device.split(":", 1)[0]
        self.batch_size = batch_size or DEFAULT_BATCH_SIZE.get(kind, DEFAULT_BATCH_SIZE["cuda"])
        self._shared = _Loaded()

    def __repr__(self) -> str:
        return f"CausalLMRunner({self.name!r}, device={self.device!r}, batch_size={self.batch_size})"

    def with_batch_size(self, n: int) -> CausalLMRunner:
        """A view with another batch size that shares this runner's model, lock and counter."""
        view = copy.copy(self)
        view.batch_size = int(n)
        return view

    @property
    def forwards(self) -> int:
        """How many sequences (windows) went through the model, over every view."""
        return self._shared.forwards

    @property
    def context_length(self) -> int:
        """The longest sequence the model reads at once (loads the model)."""
        return self._load().context

    @property
    def stride(self) -> int:
        """How far consecutive windows over a long text advance: half the context."""
        return max(1, self.context_length // 2)

    # -- scoring ---------------------------------------------------------------------------

    def logprobs(self, items: Sequence[tuple[str, str]]) -> list[TokenScores]:
        """One :class:`TokenScores` per ``(prefix, continuation)`` item, in order."""
        loaded = self._load()
        with loaded.lock:
            distinct = list(dict.fromkeys((str(p), str(c)) for p, c in items))
            plans = self._plans(distinct)
            if len(loaded.cut) > _CUT_REMEMBERED:  # a bound on memory: older answers are planned again if asked
                loaded.cut.clear()
            loaded.cut.update(zip(distinct, (p.truncated for p in plans), strict=True))
            found = self._run(plans)
            texts = self._token_texts(plans)
            by_item = {item: TokenScores(texts[i], found[i]) for i, item in enumerate(distinct)}
            return [by_item[(str(p), str(c))] for p, c in items]

    def truncated(self, item: tuple[str, str]) -> bool:
        """Whether text before the continuation's first scored token was left out of its window."""
        key = (str(item[0]), str(item[1]))
        loaded = self._load()
        with loaded.lock:
            known = loaded.cut.get(key)
            return known if known is not None else self._plans([key])[0].truncated

    def _plans(self, items: Sequence[tuple[str, str]]) -> list[_Plan]:
        """Each item's plan, from one batched tokenisation of the prefixes and one of the continuations."""
        loaded = self._shared
        tok = loaded.tokenizer
        heads = _encode_all(tok, [p for p, _ in items])
        tails = _encode_all(tok, [c for _, c in items])
        plans = []
        for head_ids, tail_ids in zip(heads, tails, strict=True):
            head = list(loaded.bos) + head_ids
            ids = tuple(head + tail_ids)
            start = max(len(head), 1)
            windows, cut = plan_windows(len(ids), start, loaded.context, max(1, loaded.context // 2))
            plans.append(_Plan(ids, start, windows, cut))
        return plans

    def _run(self, plans: Sequence[_Plan]) -> list[np.ndarray]:
        """Every window of every plan through the model, longest first, in padded batches."""
        import torch

        loaded = self._shared
        out = [np.zeros(len(p.ids) - p.start if len(p.ids) > p.start else 0, dtype=np.float64) for p in plans]
        jobs = [(i, b, e, t) for i, p in enumerate(plans) for b, e, t in p.windows]
        jobs.sort(key=lambda j: j[2] - j[1], reverse=True)
        token_budget = max(loaded.context, _LOGITS_BUDGET // max(loaded.vocab, 1))
        pad = _pad_id(loaded.tokenizer)
        at = 0
        while at < len(jobs):
            width = jobs[at][2] - jobs[at][1]  # the longest of the batch: jobs are sorted
            size = max(1, min(self.batch_size, token_budget // max(width, 1)))
            batch = jobs[at : at + size]
            at += len(batch)
            input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, (i, b, e, _) in enumerate(batch):
                input_ids[row, : e - b] = torch.tensor(plans[i].ids[b:e], dtype=torch.long)
                mask[row, : e - b] = 1
            # Right padding: every real token keeps positions 0..k-1 and, the attention being
            # causal, never sees a pad; the pads' own outputs are never read.
            positions = torch.arange(width, dtype=torch.long).unsqueeze(0).expand(len(batch), -1)
            device = loaded.model.device
            with torch.inference_mode():
                logits = loaded.model(
                    input_ids=input_ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device)
                ).logits
                for row, (i, b, e, t) in enumerate(batch):
                    rows = logits[row, t - 1 - b : e - 1 - b].float()
                    targets = torch.tensor(plans[i].ids[t:e], dtype=torch.long, device=rows.device)
                    lp = torch.log_softmax(rows, dim=-1).gather(1, targets.unsqueeze(1)).squeeze(1)
                    start = plans[i].start
                    out[i][t - start : e - start] = lp.double().cpu().numpy()
            loaded.forwards += len(batch)
        return out

    def _token_texts(self, plans: Sequence[_Plan]) -> list[tuple[str, ...]]:
        tok = self._shared.tokenizer
        texts: list[tuple[str, ...]] = []
        for p in plans:
            scored = p.ids[p.start :]
            texts.append(tuple(tok.batch_decode([[t] for t in scored])) if scored else ())
        return texts

    # -- loading ---------------------------------------------------------------------------

    def _load(self) -> _Loaded:
        loaded = self._shared
        with loaded.lock:
            if loaded.model is None:
                model, tok = _load(self.name, self.device)
                loaded.tokenizer = tok
                loaded.context = _context_length(model, tok)
                loaded.vocab = int(getattr(model.config, "vocab_size", 0) or len(tok))
                loaded.bos = _leading_bos(tok)
                loaded.model = model
            return loaded


def _load(name: str, device: str) -> tuple[Any, Any]:
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        msg = f"perplexity and GPTScore need torch and transformers; install them with {_INSTALL_HINT}"
        raise MissingDependency(msg) from exc
    from nbeval.resources.embedder import _quiet_transformers

    path = Path(name).expanduser()
    local = path.is_dir()
    source = str(path) if local else name
    if not local and name.startswith(("/", ".", "~")):
        msg = (
            f"no model directory at {name!r}; pass model= an existing folder saved with save_pretrained, or a hub name"
        )
        raise ResourceError(msg)
    try:
        with _quiet_transformers():
            tok: Any = AutoTokenizer.from_pretrained(source)
            model: Any = AutoModelForCausalLM.from_pretrained(source)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if local:
            msg = f"could not load the causal language model in {source!r}: {first}"
        else:
            msg = (
                f"could not load causal language model {name!r} ({first}). If it is a hub name, download it "
                f"while online with `huggingface-cli download {name}` so it is in the Hugging Face cache, "
                "or pass model= a local directory that holds it"
            )
        raise ResourceError(msg) from exc
    try:
        model.to(device)
    except Exception as exc:
        msg = f"could not move causal language model {name!r} to device {device!r}: {exc}; try device='cpu'"
        raise ResourceError(msg) from exc
    model.eval()
    return model, tok


def _context_length(model: Any, tok: Any) -> int:
    """The model's context from its config, else the tokenizer's limit, else 1024."""
    for attr in ("n_positions", "max_position_embeddings", "n_ctx", "seq_length", "max_sequence_length"):
        value = getattr(model.config, attr, None)
        if isinstance(value, int) and value > 1:
            return value
    limit = getattr(tok, "model_max_length", None)
    if isinstance(limit, int) and 1 < limit < 1_000_000:
        return limit
    return _FALLBACK_CONTEXT


def _leading_bos(tok: Any) -> list[int]:
    """``[bos]`` when the tokenizer puts a BOS token in front of a text by itself, else ``[]``."""
    bos = getattr(tok, "bos_token_id", None)
    if bos is None:
        return []
    ids = tok("a", add_special_tokens=True)["input_ids"]
    return [int(bos)] if ids and ids[0] == bos else []


def _encode_all(tok: Any, texts: Sequence[str]) -> list[list[int]]:
    """Each text's token ids without special tokens, in one tokenizer call.

    An empty text has none; there is no warning for texts longer than the model's limit: the windows
    deal with those.
    """
    nonempty = [t for t in texts if t]
    ids = iter(tok(nonempty, add_special_tokens=False, verbose=False)["input_ids"] if nonempty else [])
    return [list(next(ids)) if t else [] for t in texts]


def _pad_id(tok: Any) -> int:
    for attr in ("pad_token_id", "eos_token_id", "unk_token_id"):
        value = getattr(tok, attr, None)
        if isinstance(value, int):
            return value
    return 0
