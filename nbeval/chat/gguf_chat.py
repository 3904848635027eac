"""A local GGUF model as a chat model, run in this process by llama.cpp (through ``xllamacpp``).

``judge="gguf:<path>"`` (or ``"gguf:<owner>/<repo>/<file>.gguf"`` for a file on the Hugging Face
hub) or ``judge={"provider": "gguf", "model": ..., "threads": 4, "context": 4096, "gpu_layers":
-1, "parallel": 4}``. Why ``xllamacpp``: it installs as a prebuilt wheel in seconds (llama-cpp-
python compiles for ~6 minutes) and carries llama.cpp's own server, whose scheduler answers several
requests at once in parallel *slots*, batched into one forward pass per step, and decodes under a
JSON schema (llama-cpp-python's server answered HTTP 500 to ``json_schema``). The call goes to that
server's chat-completions handler in process, with no HTTP and no port.

* **One load per process.** The model loads on the first call and is kept in a process-wide table
  keyed by the file and the load settings, so every judge evaluator of a run (and of later runs in
  the same kernel) that names the same file with the same settings shares one copy.
* **Parallel slots.** ``parallel`` requests decode together (default 4); the run's client sends
  that many at once unless the judge's settings say ``concurrency``. ``context`` is each slot's
  context in tokens (default 4096); the model is given ``context * parallel``.
* **Constrained to the verdict.** A judge's reply is decoded under its verdict's JSON schema
  (:mod:`nbeval.chat.structured`), so it always parses, with ``max_tokens`` bounded by that shape.
* **Log-probabilities** (``logprobs=True, top_logprobs=k``) come as llama.cpp's server gives them:
  the model's own distribution at each step, before the grammar narrows it;
  ``score_mode="expected"`` renormalises over the allowed ratings, so this is what it needs.
* **Offline.** A path never touches the network. A hub name is downloaded (by
  ``huggingface_hub``, to its cache) only when no such file exists locally, and not at all under
  ``HF_HUB_OFFLINE=1``, where the error says so.
* **Identity.** The reply cache keys on the file's content (its size and a hash of its first and
  last MiB) and the generation settings, not its path: a copied model keeps its cache, a changed
  file does not.

A call cannot be interrupted once it runs: ``timeout`` is not enforced (``max_tokens`` bounds
it); cancelling a run stops new calls, and the calls in flight finish.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nbeval.chat.base import ChatError, ChatReply, Message, Usage, normalize_messages
from nbeval.chat.logprobs import as_logprobs
from nbeval.errors import EvaluatorError, MissingDependency

if TYPE_CHECKING:
    from nbeval.chat.structured import VerdictSchema

__all__ = ["GGUF_PREFIX", "LOAD_SETTINGS", "REQUEST_FIELDS", "GGUFChat", "loaded_gguf_models"]

#: How a judge names a GGUF model: ``"gguf:<path or hub repo/file>"``.
GGUF_PREFIX = "gguf:"

#: Request fields a GGUF model takes (llama.cpp server's chat-completions fields).
REQUEST_FIELDS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "max_tokens",
        "seed",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "repeat_penalty",
        "response_format",
        "logprobs",
        "top_logprobs",
        "n_probs",
    }
)
#: Load settings (each a GGUFChat argument).
LOAD_SETTINGS = ("threads", "context", "gpu_layers", "parallel", "verbose")

_LOADED: dict[tuple[Any, ...], Any] = {}
_LOADING = threading.Lock()
_SAMPLE = 1 << 20  # bytes hashed at each end of the file for its identity


def loaded_gguf_models() -> list[str]:
    """The GGUF files loaded in this process (one entry per file and load settings)."""
    with _LOADING:
        return [key[0] for key in _LOADED]


class GGUFChat:
    """A GGUF model run by llama.cpp in this process (see the module docstring).

    Args:
        model: A path to a ``.gguf`` file, or ``"<owner>/<repo>/<file>.gguf"`` on the Hugging Face
            hub (downloaded on first use when no such local file exists).
        threads: CPU threads for decoding (default: the machine's cores).
        context: Each parallel slot's context, in tokens.
        gpu_layers: Layers offloaded to a GPU (``-1``: all; ignored by a CPU-only build).
        parallel: Requests decoded together.
        verbose: Let llama.cpp log to standard error (off by default: it logs every request).
        **default_params: Request fields sent with every call (``temperature``, ``max_tokens``...).
    """

    structured_output = True
    """Replies are decoded under a judge's verdict schema (:mod:`nbeval.chat.structured`)."""

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        threads: int | None = None,
        context: int = 4096,
        gpu_layers: int = -1,
        parallel: int = 4,
        verbose: bool = False,
        **default_params: Any,
    ) -> None:
        self.model = os.fspath(model)
        if not self.model.strip():
            msg = 'a GGUF judge needs a model: "gguf:<path to a .gguf file>" or "gguf:<owner>/<repo>/<file>.gguf"'
            raise EvaluatorError(msg)
        for label, value, least in (("context", context, 256), ("parallel", parallel, 1), ("threads", threads, 1)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
                msg = f"GGUF judge {self.model!r}: {label} must be a whole number of at least {least}, got {value!r}"
                raise EvaluatorError(msg)
        if isinstance(gpu_layers, bool) or not isinstance(gpu_layers, int) or gpu_layers < -1:
            msg = f"GGUF judge {self.model!r}: gpu_layers must be -1 (all) or a whole number, got {gpu_layers!r}"
            raise EvaluatorError(msg)
        unknown = sorted(set(default_params) - REQUEST_FIELDS)
        if unknown:
            msg = (
                f"GGUF judge {self.model!r}: unknown setting(s) {', '.join(unknown)}; load settings are "
                f"{', '.join(LOAD_SETTINGS)}, request fields {', '.join(sorted(REQUEST_FIELDS))}"
            )
            raise EvaluatorError(msg)
        self.threads = threads or os.cpu_count() or 1
        self.context = context
        self.gpu_layers = gpu_layers
        self.parallel = parallel
        self.verbose = verbose
        self.default_params = dict(default_params)
        base = os.path.basename(self.model.rstrip("/"))
        self.name = base[:-5] if base.lower().endswith(".gguf") else base
        self.client_settings = {"concurrency": parallel}
        self._path: str | None = None
        self._identity: str | None = None

    def __repr__(self) -> str:
        return f"GGUFChat({self.model!r}, parallel={self.parallel}, context={self.context})"

    # -- the file ------------------------------------------------------------------------------

    def path(self) -> str:
        """The local file: the path given, or the hub file downloaded (once) to the hub's cache."""
        if self._path is None:
            self._path = _local_file(self.model)
        return self._path

    def cache_identity(self) -> str:
        """What the reply cache keys on: the file's content and the generation settings."""
        if self._identity is None:
            path = self.path()
            digest = hashlib.blake2b(digest_size=16)
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                digest.update(f.read(_SAMPLE))
                if size > 2 * _SAMPLE:
                    f.seek(size - _SAMPLE)
                    digest.update(f.read(_SAMPLE))
            settings = json.dumps(self.default_params, sort_keys=True, default=repr)
            self._identity = f"gguf|{size}|{digest.hexdigest()}|{settings}"
        return self._identity

    # -- calls ---------------------------------------------------------------------------------

    def structured_request(self, verdict: VerdictSchema) -> dict[str, Any]:
        """Decode under ``verdict``'s schema, within the tokens that shape can take."""
        from nbeval.chat.structured import response_format

        return {"response_format": response_format(verdict), "max_tokens": verdict.max_tokens}

    def chat(self, messages: Sequence[Message], *, timeout: float | None = None, **params: Any) -> ChatReply:
        """One chat completion from the local model (loaded on the first call).

        ``timeout`` is not enforced: a running decode cannot be stopped; ``max_tokens`` bounds it.
        """
        server = self._server()
        merged = {**self.default_params, **params}
        body: dict[str, Any] = {k: v for k, v in merged.items() if k in REQUEST_FIELDS}
        body["messages"] = normalize_messages(messages)
        started = time.perf_counter()
        try:
            data = server.handle_chat_completions(body)
        except Exception as exc:  # llama.cpp reports a bad request (a schema it cannot compile) as an exception
            msg = f"{self.name}: llama.cpp refused the request: {exc}"
            raise ChatError(msg, status=400) from exc
        duration = time.perf_counter() - started
        return self._reply(data, duration)

    def _reply(self, data: Any, duration: float) -> ChatReply:
        if isinstance(data, Mapping) and "error" in data:
            error = data["error"]
            detail = error.get("message", error) if isinstance(error, Mapping) else error
            msg = f"{self.name}: llama.cpp answered an error: {detail}"
            code = error.get("code") if isinstance(error, Mapping) else None
            status = code if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599 else 500
            raise ChatError(msg, status=status)
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            msg = f"{self.name}: llama.cpp's reply is not a chat completion: {str(data)[:200]!r}"
            raise ChatError(msg) from exc
        return ChatReply(
            text=str(content),
            usage=Usage.from_any(data.get("usage")),
            model=self.name,
            duration_s=duration,
            logprobs=as_logprobs(choice.get("logprobs")),
        )

    def _server(self) -> Any:
        key = (self.path(), self.context, self.parallel, self.threads, self.gpu_layers)
        with _LOADING:
            server = _LOADED.get(key)
            if server is None:
                server = _LOADED[key] = self._load(key[0])
            return server

    def _load(self, path: str) -> Any:
        try:
            import xllamacpp
        except ImportError as exc:
            msg = 'GGUF judges run on llama.cpp through xllamacpp: pip install "nbeval[local]"'
            raise MissingDependency(msg) from exc
        p = xllamacpp.CommonParams()
        p.model.path = path
        p.n_parallel = self.parallel
        p.n_ctx = self.context * self.parallel
        p.cpuparams.n_threads = self.threads
        p.cpuparams_batch.n_threads = self.threads
        p.n_gpu_layers = self.gpu_layers
        p.warmup = False
        if not self.verbose:
            p.verbosity = -1
        try:
            return xllamacpp.Server(p)
        except Exception as exc:
            msg = f"cannot load the GGUF model {path!r}: {exc}"
            raise ChatError(msg) from exc


def _local_file(model: str) -> str:
    """The local path of ``model``: a file as given, else a hub file ``owner/repo/file.gguf`` downloaded."""
    expanded = os.path.expanduser(model)
    if os.path.isfile(expanded):
        return os.path.abspath(expanded)
    parts = model.split("/")
    if os.path.isabs(expanded) or model.startswith(".") or len(parts) < 3 or not model.lower().endswith(".gguf"):
        msg = (
            f"no GGUF file at {model!r}; give the path of a .gguf file, or a file on the Hugging Face hub "
            'as "gguf:<owner>/<repo>/<file>.gguf"'
        )
        raise ChatError(msg)
    repo, filename = "/".join(parts[:2]), "/".join(parts[2:])
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        msg = f"downloading {model!r} from the Hugging Face hub needs huggingface_hub: pip install huggingface_hub"
        raise MissingDependency(msg) from exc
    try:
        return str(hf_hub_download(repo_id=repo, filename=filename))
    except Exception as exc:  # offline, missing, gated: say which file and what to do
        offline = " (HF_HUB_OFFLINE is set: download it once with it unset, or give a path)" if _offline() else ""
        msg = f"cannot get {filename!r} from the hub repository {repo!r}{offline}: {type(exc).__name__}: {exc}"
        raise ChatError(msg) from exc


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
