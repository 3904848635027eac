"""Geometric completeness of a summary: how much of the source's spread its sentences span.

Pure arithmetic on sentence vectors, used by ``summarization_completeness``. Given unit vectors
for the source's sentences (``S``, n rows) and the summary's (``T``, m rows):

1. **Distinct source points.** Identical source rows count once.
2. **Snap or drop.** Each summary sentence is compared with every source sentence in the
   original embedding space (Euclidean distance between unit vectors, ``sqrt(2 - 2 cos)``). If
   its nearest source sentence lies within the *radius* it is replaced by that source point,
   otherwise it is dropped as not grounded in the source. The radius is the median of the
   pairwise distances between distinct source sentences (with one source sentence, where there
   is no pair, 1.0, i.e. cosine >= 0.5). Snapping keeps the score at most 1 and means summary
   points never need their own projection: after snapping they *are* source points.
3. **Reduce.** With at least ``min_points`` (10) distinct source sentences the source points
   are projected to ``n_components`` (2) dimensions with UMAP (``random_state`` fixed,
   ``n_neighbors = min(15, n - 1)``), fitted on the source only; with fewer, distances stay in
   the original space, because UMAP needs a neighbourhood graph to mean anything. UMAP is fed
   the source's pairwise distances rounded to :data:`DISTANCE_DECIMALS` places, not the vectors:
   its layout is chaotic in its input's last bits, and encoders give the same sentence vectors
   that differ in those bits with another batch size, thread count or device. Without the
   rounding one summary scored 0.31, 0.42 or 0.48 by batch size alone; with it, the same texts
   give the same score (a distance within 1e-7 of a rounding boundary is the rare exception).
4. **Three-segment distance** of a point set: take the longest segment between two of its
   points (its diameter, a-b); then twice extend this path at whichever end can reach an unused
   point farthest, adding that segment (a path c-a-b, then c-a-b-d or e-c-a-b). The length of
   this greedy three-segment path (fewer segments when there are fewer than four points) is a
   cheap stand-in for the area the points spread over.
5. **Completeness** = three-segment distance of the snapped summary points divided by that of
   all source points, clipped to [0, 1].

Behaviour with very few sentences:

* no source sentences: ``None`` (nothing to cover);
* no summary sentences, or none snapped: 0;
* one distinct source sentence: 1 when a summary sentence snaps to it, else 0;
* a summary whose sentences all snap to **one** source point spans no distance and scores 0,
  whatever the source, so a one-sentence summary of a source with two or more distinct
  sentences scores 0: a point covers no area;
* two or three source sentences: the ratio is of one- or two-segment paths, so it moves in
  large steps (a summary covering 2 of 3 points gets their distance over the 2-segment path).

A summary repeating the whole source snaps every sentence onto itself and scores exactly 1.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from nbeval.errors import BadParameter, MissingDependency

__all__ = [
    "DISTANCE_DECIMALS",
    "MIN_POINTS",
    "N_COMPONENTS",
    "RANDOM_STATE",
    "Completeness",
    "completeness",
    "three_segment_distance",
    "warm_up",
]

#: UMAP's settings for the completeness map: the fewest points it is fitted on, the dimensions it reduces to, and its
#: seed (fixed, so a run is repeatable).
MIN_POINTS = 10
N_COMPONENTS = 2
RANDOM_STATE = 42
#: Decimal places of the pairwise distances UMAP is fitted on (unit vectors: distances in [0, 2]).
DISTANCE_DECIMALS = 2
_SINGLE_SOURCE_RADIUS = 1.0  # cosine >= 0.5 when there is no source pair to measure


@dataclass
class Completeness:
    """The result of :func:`completeness`, with what it was computed from."""

    value: float | None
    """Completeness in [0, 1] (``None`` without source sentences)."""
    source_distance: float = 0.0
    """Three-segment distance of the source points."""
    summary_distance: float = 0.0
    """Three-segment distance of the snapped summary points."""
    snapped: list[int | None] = field(default_factory=list)
    """For each summary sentence, the source sentence it snapped to (``None``: dropped)."""
    radius: float = 0.0
    """Snapping radius used (Euclidean, original space)."""
    reduced: bool = False
    """Whether UMAP reduction was applied."""

    def to_dict(self) -> dict[str, object]:
        """The measurement as a JSON-ready dict (distances rounded to 6 places) for a score's details."""
        return {
            "source_distance": round(self.source_distance, 6),
            "summary_distance": round(self.summary_distance, 6),
            "snapped": self.snapped,
            "radius": round(self.radius, 6),
            "reduced": self.reduced,
        }


def completeness(
    source: np.ndarray,
    summary: np.ndarray,
    *,
    min_points: int = MIN_POINTS,
    n_components: int = N_COMPONENTS,
    random_state: int = RANDOM_STATE,
    radius: float | None = None,
) -> Completeness:
    """Geometric completeness of ``summary`` sentence vectors against ``source`` ones (see module doc)."""
    src = _rows(source)
    summ = _rows(summary)
    if len(src) == 0:
        return Completeness(None)
    distinct, inverse = _distinct_rows(src)
    pts = src[distinct]
    if radius is None:
        radius = _median_pairwise(pts) if len(pts) > 1 else _SINGLE_SOURCE_RADIUS
    snapped: list[int | None] = []
    if len(summ):
        d = _pairwise(summ, pts)
        nearest = d.argmin(axis=1)
        for k, near in enumerate(nearest):
            snapped.append(int(distinct[near]) if d[k, near] <= radius + 1e-9 else None)
    kept = sorted({int(inverse[s]) for s in snapped if s is not None})  # indices into pts
    if not kept:
        return Completeness(0.0, snapped=snapped, radius=float(radius))
    if len(pts) == 1:
        return Completeness(1.0, snapped=snapped, radius=float(radius))
    reduced = len(pts) >= min_points
    coords = _reduce(pts, n_components, random_state) if reduced else pts
    whole = three_segment_distance(coords)
    part = three_segment_distance(coords[kept])
    value = 0.0 if whole <= 0 else float(np.clip(part / whole, 0.0, 1.0))
    return Completeness(value, whole, part, snapped, float(radius), reduced)


def three_segment_distance(points: np.ndarray) -> float:
    """Length of the greedy three-segment path over ``points`` (see module doc, step 4)."""
    pts = _rows(points)
    k = len(pts)
    if k < 2:
        return 0.0
    d = _pairwise(pts, pts)
    a, b = np.unravel_index(int(np.argmax(d)), d.shape)
    path = [int(a), int(b)]
    total = float(d[a, b])
    used = set(path)
    for _ in range(2):
        free = [p for p in range(k) if p not in used]
        if not free:
            break
        head, tail = path[0], path[-1]
        p_head = max(free, key=lambda p: d[head, p])
        p_tail = max(free, key=lambda p: d[tail, p])
        if d[head, p_head] >= d[tail, p_tail]:
            total += float(d[head, p_head])
            path.insert(0, p_head)
            used.add(p_head)
        else:
            total += float(d[tail, p_tail])
            path.append(p_tail)
            used.add(p_tail)
    return total


def _rows(x: np.ndarray) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.size == 0:
        return arr.reshape(0, arr.shape[-1] if arr.ndim == 2 else 0)
    if arr.ndim != 2:
        msg = f"expected a 2-D array of sentence vectors, got shape {arr.shape}"
        raise BadParameter(msg)
    return arr


def _pairwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    dist: np.ndarray = np.sqrt(np.maximum(sq, 0.0))
    return dist


def _median_pairwise(pts: np.ndarray) -> float:
    d = _pairwise(pts, pts)
    return float(np.median(d[np.triu_indices(len(pts), k=1)]))


def _distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of first occurrences of each distinct row, and each row's index among them."""
    seen: dict[bytes, int] = {}
    first: list[int] = []
    inverse = np.empty(len(x), dtype=np.intp)
    for i, row in enumerate(x):
        k = seen.setdefault(row.tobytes(), len(first))
        if k == len(first):
            first.append(i)
        inverse[i] = k
    return np.asarray(first, dtype=np.intp), inverse


# ---------------------------------------------------------------------------------------------
# UMAP, cached per source (two models summarising one source share the projection)

_CACHE: OrderedDict[bytes, np.ndarray] = OrderedDict()
_CACHE_SIZE = 256
_LOCK = threading.Lock()


def _reduce(pts: np.ndarray, n_components: int, random_state: int) -> np.ndarray:
    dist = _rounded_distances(pts)
    key = hashlib.sha1(dist.tobytes() + f"{n_components}:{random_state}".encode()).digest()
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    coords = _umap(dist, n_components, random_state)
    with _LOCK:
        _CACHE[key] = coords
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return coords


def _rounded_distances(pts: np.ndarray) -> np.ndarray:
    """Compute the pairwise distances rounded to :data:`DISTANCE_DECIMALS` places.

    Rounded, float noise in the vectors (batch size, threads, device) no longer reaches UMAP (see
    module doc, step 3).
    """
    dist = np.round(_pairwise(pts, pts), DISTANCE_DECIMALS)
    np.fill_diagonal(dist, 0.0)
    return np.ascontiguousarray(np.maximum(dist, dist.T))  # exactly symmetric


def _umap(dist: np.ndarray, n_components: int, random_state: int) -> np.ndarray:
    """UMAP fitted on a precomputed distance matrix."""
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # umap/numba chatter on import and on small inputs
            import umap
    except ImportError as exc:
        msg = "summarization_completeness needs umap-learn; install it with pip install 'nbeval[embed]'"
        raise MissingDependency(msg) from exc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reducer = umap.UMAP(
            n_components=n_components,
            n_neighbors=min(15, len(dist) - 1),
            random_state=random_state,
            n_jobs=1,
            metric="precomputed",
        )
        return np.asarray(reducer.fit_transform(dist), dtype=np.float64)


def warm_up() -> None:
    """Run UMAP once on random points so numba compiles now, not during a timed run."""
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(MIN_POINTS + 2, 8))
    _umap(_rounded_distances(pts / np.linalg.norm(pts, axis=1, keepdims=True)), N_COMPONENTS, RANDOM_STATE)
