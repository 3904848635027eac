"""A local Hugging Face causal language model as a chat model (loaded lazily, once)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from nbeval.chat.base import ChatError, ChatReply, Message, Usage, messages_to_prompt, normalize_messages
from nbeval.chat.logprobs import TokenLogprob
from nbeval.chat.secrets import hash_secrets, redact, register_secrets, secrets_in
from nbeval.errors import EvaluatorError, MissingDependency

__all__ = ["HFChat"]

#: Generation parameters understood here; OpenAI-only ones (``response_format``...) are ignored.
_GEN_KEYS = frozenset(
    {"max_new_tokens", "temperature", "top_p", "top_k", "do_sample", "repetition_penalty", "num_beams"}
)


#: Precisions a local model may load in.
_DTYPES = frozenset({"float16", "bfloat16", "float32", "auto"})


class HFChat:
    """A causal LM from the Hugging Face hub (by name) or a local directory (by path).

    The model loads on the first call, on ``device`` (default: ``cuda`` when available, else
    ``cpu``), in ``dtype`` (``"float16"``, ``"bfloat16"``, ``"float32"`` or ``"auto"``; default:
    the checkpoint's own). Messages go through the tokenizer's chat template when it has one; otherwise they
    are joined as ``Role: content`` blocks followed by ``Assistant:``. ``max_tokens`` is accepted
    as an alias of ``max_new_tokens``; ``temperature`` above 0 turns sampling on, 0 or none means
    greedy decoding. A ``timeout`` bounds generation time (``max_time``). Calls are serialised:
    one model, one generation at a time. ``token`` (a Hugging Face access token, for gated or
    private models) is used to load the model and kept out of ``repr``, errors and the cache.

    ``logprobs=True`` (as an OpenAI-compatible endpoint takes it) makes the reply carry the
    log-probability of each generated token and, with ``top_logprobs=k``, of the ``k`` most likely
    tokens at each position (:attr:`~nbeval.chat.base.ChatReply.logprobs`): the log-softmax of the
    model's raw logits there, before temperature or any other sampling setting. A generated
    token's text is what it adds to the decoded reply, so the tokens' texts put together are the
    reply's text; an alternative's text is that token decoded alone.
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        device: str | None = None,
        max_new_tokens: int = 256,
        *,
        dtype: str | None = None,
        token: str | None = None,
        **default_params: Any,
    ) -> None:
        register_secrets(token, *secrets_in(default_params))
        self.model_name_or_path = os.fspath(model_name_or_path)
        self.name = os.path.basename(self.model_name_or_path.rstrip("/")) or self.model_name_or_path
        self.device = device
        if dtype is not None and dtype not in _DTYPES:
            msg = f"dtype must be one of {', '.join(sorted(_DTYPES))}, got {dtype!r}"
            raise EvaluatorError(msg)
        self.dtype = dtype
        self.default_params = {"max_new_tokens": max_new_tokens, **default_params}
        self.__token = token  # name-mangled: never in repr, identity or errors
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HFChat({self.model_name_or_path!r}, device={self.device!r})"

    def cache_identity(self) -> str:
        """The text the reply cache keys on for this model.

        Its path (absolute for a local folder), dtype and default generation parameters (secrets
        hashed).
        """
        path = self.model_name_or_path
        if os.path.isdir(path):
            path = os.path.abspath(path)
        dtype = f"|dtype={self.dtype}" if self.dtype else ""  # another precision may answer otherwise
        return f"hf|{path}{dtype}|{json.dumps(hash_secrets(self.default_params), sort_keys=True, default=repr)}"

    def _load(self) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            msg = 'local Hugging Face chat models need transformers and torch: pip install "nbeval[judge]" torch'
            raise MissingDependency(msg) from e
        if self.device is None:
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        auth = {"token": self.__token} if self.__token else {}
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model_name_or_path, **auth)
            precision = (
                {}
                if self.dtype is None
                else {"dtype": self.dtype if self.dtype == "auto" else getattr(torch, self.dtype)}
            )
            model = AutoModelForCausalLM.from_pretrained(self.model_name_or_path, **auth, **precision)
        except (OSError, ValueError) as e:
            msg = redact(f"cannot load the causal LM {self.model_name_or_path!r}: {e}")
            raise ChatError(msg) from e
        model.to(self.device)  # type: ignore[arg-type]
        model.eval()
        self._tokenizer, self._model = tokenizer, model

    def _prompt_ids(self, messages: list[dict[str, str]]) -> Any:
        tok = self._tokenizer
        if getattr(tok, "chat_template", None):
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            return tok(text, return_tensors="pt", add_special_tokens=False)
        text = messages_to_prompt(messages) if len(messages) == 1 else (messages_to_prompt(messages) + "\n\nAssistant:")
        return tok(text, return_tensors="pt")

    def _gen_kwargs(self, params: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        merged = {**self.default_params, **params}
        if "max_tokens" in merged:
            merged["max_new_tokens"] = merged.pop("max_tokens")
        kwargs = {k: v for k, v in merged.items() if k in _GEN_KEYS}
        temperature = kwargs.get("temperature")
        if not temperature:  # greedy unless a positive temperature asks for sampling
            kwargs.pop("temperature", None)
            kwargs.setdefault("do_sample", False)
        else:
            kwargs.setdefault("do_sample", True)
        tok = self._tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        kwargs["pad_token_id"] = 0 if pad is None else pad
        if timeout is not None:
            kwargs["max_time"] = float(timeout)
        return kwargs

    def chat(self, messages: Sequence[Message], *, timeout: float | None = None, **params: Any) -> ChatReply:
        """Generate a reply to ``messages`` with the local model.

        The model is loaded on the first call. The reply has the token counts and, where asked for,
        the top log-probabilities of each step. Calls are serialised: one model, one generation at a
        time.
        """
        msgs = normalize_messages(messages)
        started = time.perf_counter()
        with self._lock:
            if self._model is None:
                self._load()
            import torch

            enc = self._prompt_ids(msgs).to(self.device)
            kwargs = self._gen_kwargs(dict(params), timeout)
            top_k = self._top_logprobs(dict(params))
            if top_k is not None:  # the raw logits of every step come back with the sequence
                kwargs.update(output_logits=True, return_dict_in_generate=True)
            try:
                with torch.no_grad():
                    out = self._model.generate(**enc, **kwargs)
            except (RuntimeError, ValueError) as e:
                msg = redact(f"{self.name}: generation failed: {e}")
                raise ChatError(msg) from e
            sequences = out.sequences if top_k is not None else out
            n_prompt = int(enc["input_ids"].shape[1])
            new_ids = sequences[0][n_prompt:]
            text = self._tokenizer.decode(new_ids, skip_special_tokens=True)
            logprobs = None if top_k is None else self._logprobs(new_ids.tolist(), out.logits, top_k)
        return ChatReply(
            text=text,
            usage=Usage(n_prompt, int(new_ids.shape[0])),
            model=self.name,
            duration_s=time.perf_counter() - started,
            logprobs=logprobs,
        )

    def _top_logprobs(self, params: dict[str, Any]) -> int | None:
        """How many alternatives a call asks for at each token.

        ``top_logprobs``, default 0, or ``None`` when it asks for no log-probabilities (``logprobs``
        not true).
        """
        merged = {**self.default_params, **params}
        if not merged.get("logprobs"):
            return None
        k = merged.get("top_logprobs") or 0
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            msg = f"{self.name}: top_logprobs must be a whole number of 0 or more, got {k!r}"
            raise ChatError(msg)
        return k

    def _logprobs(self, ids: list[int], logits: Any, k: int) -> tuple[TokenLogprob, ...]:
        """Each generated token's log-probability and the ``k`` likeliest tokens there.

        Read from the raw logits of each step (one ``(1, vocab)`` tensor a step).
        """
        import torch

        tok = self._tokenizer
        out: list[TokenLogprob] = []
        before = ""
        for i, (token_id, step) in enumerate(zip(ids, logits, strict=False)):
            lp = torch.log_softmax(step[0].float(), dim=-1)
            # the text this token adds to the reply, so the pieces put together are the reply
            upto = tok.decode(ids[: i + 1], skip_special_tokens=True)
            piece = upto[len(before) :] if upto.startswith(before) else tok.decode([token_id])
            before = upto
            top: tuple[tuple[str, float], ...] = ()
            if k:
                values, indices = torch.topk(lp, min(k, int(lp.shape[-1])))
                top = tuple((tok.decode([j]), float(v)) for v, j in zip(values.tolist(), indices.tolist(), strict=True))
            out.append(TokenLogprob(piece, float(lp[token_id]), top))
        return tuple(out)
