"""Marginal workloads, query indexing, fast answers and error metrics.

A k-way marginal is an attribute set S; its queries are all cells y of
prod_{i in S} X_i with q_{S,y}(x) = 1[x_S = y] ([VTBSW20], Def. 2.4).  Queries are
numbered flat: marginal j owns ids ``offsets[j] .. offsets[j] + sizes[j] - 1`` and
cell y of marginal j has id ``offsets[j] + ravel_multi_index(y)`` (row-major, the
first attribute of S most significant).

Answers are normalised counts ``q(D) = (1/n) sum_i q(D_i)``.  Every computation is
vectorised: one mixed-radix cell index per marginal and one ``np.bincount``.
The mechanisms work on Q ∪ ¬Q; since |¬q(D) - ¬q(D')| = |q(D) - q(D')|, errors
over Q alone equal errors over Q ∪ ¬Q.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .domain import Domain
from .errors import WorkloadError

#: Bytes per query a release keeps in memory at once (true answers, noisy or
#: synthetic answers, error vector, MW log-weights for Q and ¬Q: ~6 float64).
BYTES_PER_QUERY = 48
#: Refuse workloads whose working set would pass this many bytes.
DEFAULT_MEMORY_LIMIT = 4 * 1024**3


@dataclass(frozen=True)
class Workload:
    """A list of marginals over a domain, with flat query indexing."""

    domain: Domain
    marginals: tuple[tuple[int, ...], ...]
    # Derived from the two above in __post_init__: not constructor arguments, not part of equality.
    _n_queries: int = field(init=False, repr=False, compare=False)
    _offsets: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.marginals:
            raise WorkloadError("The workload has no marginals; choose at least one.")
        p = len(self.domain)
        seen = set()
        for m in self.marginals:
            if not m or len(set(m)) != len(m) or any(not 0 <= a < p for a in m):
                raise WorkloadError(f"Invalid marginal {m}: attributes must be distinct indices in 0..{p - 1}.")
            key = tuple(sorted(m))
            if key in seen:
                raise WorkloadError(f"Marginal {self.marginal_name_of(m)} appears twice.")
            seen.add(key)
        object.__setattr__(self, "marginals", tuple(tuple(int(a) for a in m) for m in self.marginals))
        sizes = [math.prod(self.domain.shape[a] for a in m) for m in self.marginals]
        total = sum(sizes)
        check_memory(total)
        object.__setattr__(self, "_n_queries", total)
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        object.__setattr__(self, "_offsets", offsets)

    # -------------------------------------------------------------- builders
    @classmethod
    def all_kway(cls, domain: Domain, k: int, max_cells: int | None = None) -> Workload:
        _check_k(domain, k)
        margs = [
            m
            for m in itertools.combinations(range(len(domain)), k)
            if max_cells is None or _cells(domain, m) <= max_cells
        ]
        if not margs:
            raise WorkloadError(f"No {k}-way marginal has at most {max_cells:,} cells; raise the cap or lower k.")
        return cls(domain, tuple(margs))

    @classmethod
    def random_kway(cls, domain: Domain, k: int, m: int, seed: int = 0, max_cells: int | None = None) -> Workload:
        """``m`` distinct k-way marginals chosen uniformly at random (seeded: the workload is public)."""
        _check_k(domain, k)
        if m < 1:
            raise WorkloadError("The number of marginals must be at least 1.")
        n_all = math.comb(len(domain), k)
        if n_all > 5_000_000:
            raise WorkloadError(f"There are {n_all:,} {k}-way marginals; choose a smaller k or fewer attributes.")
        candidates = [
            c
            for c in itertools.combinations(range(len(domain)), k)
            if max_cells is None or _cells(domain, c) <= max_cells
        ]
        if m > len(candidates):
            cap = f" with at most {max_cells:,} cells" if max_cells is not None else ""
            raise WorkloadError(f"Only {len(candidates):,} {k}-way marginals{cap} exist; ask for at most that many.")
        # The legacy RandomState draw reproduces the benchmark literature's selection
        # (FEM / private-pgm: seed 0 on adult gives the 64 marginals with 458,996 cells).
        pick = np.random.RandomState(seed).choice(len(candidates), size=m, replace=False)
        return cls(domain, tuple(candidates[i] for i in pick))

    @classmethod
    def from_names(cls, domain: Domain, marginals: Sequence[Sequence[str]]) -> Workload:
        return cls(domain, tuple(tuple(domain.index(a) for a in m) for m in marginals))

    # ------------------------------------------------------------- indexing
    @property
    def n_marginals(self) -> int:
        return len(self.marginals)

    @property
    def n_queries(self) -> int:
        return self._n_queries

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self._offsets)

    @property
    def offsets(self) -> np.ndarray:
        return self._offsets

    def marginal_shape(self, j: int) -> tuple[int, ...]:
        return tuple(self.domain.shape[a] for a in self.marginals[j])

    def marginal_name(self, j: int) -> str:
        return self.marginal_name_of(self.marginals[j])

    def marginal_name_of(self, m: Sequence[int]) -> str:
        return " × ".join(self.domain.names[a] for a in m)

    def query_id(self, j: int, cell: Sequence[int]) -> int:
        shape = self.marginal_shape(j)
        if len(cell) != len(shape) or any(not 0 <= c < s for c, s in zip(cell, shape)):
            raise WorkloadError(f"Cell {tuple(cell)} is not in marginal {self.marginal_name(j)} of shape {shape}.")
        return int(self._offsets[j] + np.ravel_multi_index(tuple(cell), shape))

    def locate(self, qid: int) -> tuple[int, tuple[int, ...]]:
        """(marginal index, cell) of a flat query id."""
        if not 0 <= qid < self.n_queries:
            raise WorkloadError(f"Query id {qid} outside 0..{self.n_queries - 1}.")
        j = int(np.searchsorted(self._offsets, qid, side="right") - 1)
        cell = np.unravel_index(int(qid - self._offsets[j]), self.marginal_shape(j))
        return j, tuple(int(c) for c in cell)

    def literals(self, qid: int) -> list[tuple[int, int]]:
        """The (attribute, value) pairs a query's cell fixes."""
        j, cell = self.locate(qid)
        return list(zip(self.marginals[j], cell))

    def query_label(self, qid: int) -> str:
        j, cell = self.locate(qid)
        parts = [f"{self.domain.names[a]}={self.domain[a].labels()[v]}" for a, v in zip(self.marginals[j], cell)]
        return " ∧ ".join(parts)

    def marginal_of(self, qids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self._offsets, np.asarray(qids), side="right") - 1

    def decompose(self, qids: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Group flat ids by marginal: [(j, cells as (len, k) codes), ...]."""
        qids = np.asarray(qids, dtype=np.int64)
        js = self.marginal_of(qids)
        out = []
        for j in np.unique(js):
            local = qids[js == j] - self._offsets[j]
            cells = np.stack(np.unravel_index(local, self.marginal_shape(int(j))), axis=1)
            out.append((int(j), cells))
        return out

    # ------------------------------------------------------------- answers
    def cell_index(self, codes: np.ndarray, j: int) -> np.ndarray:
        """Mixed-radix index of every row's cell in marginal j."""
        m = self.marginals[j]
        idx = np.array(codes[:, m[0]], dtype=np.int64)
        for a in m[1:]:
            idx *= self.domain.shape[a]
            idx += codes[:, a]
        return idx

    def answers(self, codes: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Normalised answers of every query on rows ``codes`` (optionally weighted).

        With weights, answers are ``sum_i w_i q(x_i) / sum_i w_i`` (a distribution
        over the given records).
        """
        codes, weights, total = weighted_rows(codes, weights)
        out = np.empty(self.n_queries, dtype=np.float64)
        cols = [np.ascontiguousarray(codes[:, a]) for a in range(codes.shape[1])]
        for j, m in enumerate(self.marginals):
            idx = cols[m[0]].copy()
            for a in m[1:]:
                idx *= self.domain.shape[a]
                idx += cols[a]
            lo, hi = self._offsets[j], self._offsets[j + 1]
            out[lo:hi] = np.bincount(idx, weights=weights, minlength=hi - lo)
        out /= total
        return out

    def marginal_table(self, answers: np.ndarray, j: int) -> np.ndarray:
        """The answers of marginal j reshaped to its cell shape."""
        return answers[self._offsets[j] : self._offsets[j + 1]].reshape(self.marginal_shape(j))

    def split(self, answers: np.ndarray) -> list[np.ndarray]:
        return [answers[self._offsets[j] : self._offsets[j + 1]] for j in range(self.n_marginals)]

    # ------------------------------------------------------------- estimates
    def memory_bytes(self) -> int:
        return self.n_queries * BYTES_PER_QUERY

    def describe(self) -> dict:
        return {
            "n_marginals": self.n_marginals,
            "n_queries": self.n_queries,
            "n_queries_with_negations": 2 * self.n_queries,
            "largest_marginal_cells": int(self.sizes.max()),
            "memory_mb": round(self.memory_bytes() / 1e6, 1),
        }

    def to_dict(self) -> dict:
        return {"marginals": [[self.domain.names[a] for a in m] for m in self.marginals]}


def _cells(domain: Domain, m: Sequence[int]) -> int:
    return math.prod(domain.shape[a] for a in m)


def _check_k(domain: Domain, k: int) -> None:
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise WorkloadError("k (the marginal width) must be a whole number ≥ 1.")
    if k > len(domain):
        raise WorkloadError(
            f"k = {k} is larger than the number of attributes ({len(domain)}); choose k ≤ {len(domain)}."
        )


def weighted_rows(codes: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, float]:
    """Validated (int64 codes, float weights or None, total weight) for answering queries."""
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise WorkloadError("Rows must be a 2-D array of codes.")
    codes = codes.astype(np.int64, copy=False)
    if weights is None:
        total = float(codes.shape[0])
    else:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (codes.shape[0],) or np.any(weights < 0) or not np.all(np.isfinite(weights)):
            raise WorkloadError("Weights must be one finite non-negative number per row.")
        total = float(weights.sum())
    if total <= 0:
        raise WorkloadError("No rows (or zero total weight) to answer queries on.")
    return codes, weights, total


def check_memory(n_queries: int, limit: int | None = None) -> None:
    """Refuse a workload whose working set would not fit, with the number and a fix."""
    need = n_queries * BYTES_PER_QUERY
    if limit is None:
        limit = DEFAULT_MEMORY_LIMIT
        try:
            import psutil

            limit = min(limit, int(psutil.virtual_memory().available * 0.5))
        except Exception:  # psutil is optional at this depth
            pass
    if need > limit:
        raise WorkloadError(
            f"This workload has {n_queries:,} queries and needs about {need / 1e9:.1f} GB of memory "
            f"(limit {limit / 1e9:.1f} GB). Choose fewer marginals, a smaller k, coarser bins, "
            "or a cap on cells per marginal."
        )


# ---------------------------------------------------------------- error metrics
def max_error(true: np.ndarray, est: np.ndarray) -> float:
    """max_q |q(D) - q(D̂)| over Q (equal to the max over Q ∪ ¬Q)."""
    return float(np.max(np.abs(true - est)))


def mean_error(true: np.ndarray, est: np.ndarray) -> float:
    return float(np.mean(np.abs(true - est)))


def marginal_tv(workload: Workload, true: np.ndarray, est: np.ndarray) -> np.ndarray:
    """Per-marginal total variation distance 0.5 * ||m_S(D) - m_S(D̂)||_1."""
    diff = np.abs(true - est)
    return 0.5 * np.add.reduceat(diff, workload.offsets[:-1])


def marginal_max(workload: Workload, true: np.ndarray, est: np.ndarray) -> np.ndarray:
    return np.maximum.reduceat(np.abs(true - est), workload.offsets[:-1])


def zeros_baseline(workload: Workload) -> np.ndarray:
    """Answers of the empty release: every query answered 0."""
    return np.zeros(workload.n_queries)


def uniform_baseline(workload: Workload) -> np.ndarray:
    """Answers of the uniform distribution over the domain: 1/|cells| per cell."""
    return np.repeat(1.0 / workload.sizes, workload.sizes)


# ---------------------------------------------------------------- defaults that fit the table
#: A default workload keeps marginals whose cells hold at least this many rows on average (n / cells).
MIN_ROWS_PER_CELL = 5
#: A default workload has at most this many marginals beyond the one-way ones (when the table has room).
DEFAULT_MARGINALS = 64


def default_workload(
    domain: Domain,
    n: int,
    *,
    max_marginals: int = DEFAULT_MARGINALS,
    min_rows_per_cell: float = MIN_ROWS_PER_CELL,
    seed: int = 0,
) -> Workload:
    """A workload that fits the table, from public quantities only (n and the attribute sizes).

    Every one-way marginal (each attribute alone: what any release must get right first), then two-way
    marginals whose average cell holds at least ``min_rows_per_cell`` rows (cells ≤ n / min_rows_per_cell),
    up to ``max_marginals`` marginals in all, chosen uniformly at random among the eligible pairs with a
    public seed.  A 100-row table gets its one-way marginals and the few small pairs it can support; a
    400-column table gets its 400 one-way marginals (thousands of queries, not millions).
    """
    p = len(domain)
    one_way: list[tuple[int, ...]] = [(a,) for a in range(p)]
    room = max(0, int(max_marginals) - p)
    eligible = eligible_pairs(domain, n, min_rows_per_cell)
    pairs: list[tuple[int, ...]] = []
    if room and eligible:
        rng = np.random.default_rng(seed)
        pick = np.sort(rng.choice(len(eligible), size=min(room, len(eligible)), replace=False))
        pairs = [eligible[k] for k in pick]
    return Workload(domain, tuple(one_way + pairs))


def eligible_pairs(domain: Domain, n: int, min_rows_per_cell: float = MIN_ROWS_PER_CELL) -> list[tuple[int, int]]:
    """The attribute pairs whose average cell holds at least ``min_rows_per_cell`` rows (cells ≤ n / that), in
    order (public: n and the attribute sizes)."""
    n = int(n)
    if n < 1:
        raise WorkloadError("The table has no rows.")
    p = len(domain)
    if p < 2:
        return []
    cap = max(1.0, n / float(min_rows_per_cell))
    shape = np.asarray(domain.shape, dtype=float)
    i, j = np.triu_indices(p, k=1)
    keep = np.flatnonzero(shape[i] * shape[j] <= cap)
    return [(int(i[k]), int(j[k])) for k in keep]


def noise_check(sigma: float, n: int, n_cells: int) -> dict:
    """Expected noise per cell against what a cell holds, from public quantities only.

    ``sigma`` is the standard deviation of the noise added to each cell's COUNT (rows), ``n`` the table's
    rows, ``n_cells`` the cells of a marginal (the largest one for a workload).  A cell holds n / n_cells rows
    on average; the noise moves it by E|N(0, σ²)| = σ·sqrt(2/π) rows.  When the noise is larger, the released
    marginal is mostly noise: ``suggested_max_cells`` = n / (σ·sqrt(2/π)) is the largest marginal for which it
    is not."""
    if n < 1 or n_cells < 1:
        raise WorkloadError("noise_check needs n ≥ 1 and at least one cell.")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise WorkloadError("The noise scale σ must be a finite non-negative number.")
    noise = float(sigma) * math.sqrt(2.0 / math.pi)
    held = float(n) / float(n_cells)
    return {
        "expected_noise_per_cell": noise,
        "rows_per_cell": held,
        "ratio": noise / held if held > 0 else math.inf,
        "ok": noise <= held,
        "suggested_max_cells": int(n / noise) if noise > 0 else None,
    }


def noise_warning(sigma: float, n: int, n_cells: int) -> str | None:
    """A pre-run warning when the expected noise per cell exceeds what a cell holds (None when it does not)."""
    c = noise_check(sigma, n, n_cells)
    if c["ok"]:
        return None
    fix = (
        f"choose marginals of at most {c['suggested_max_cells']:,} cells (fewer attributes per marginal, coarser "
        "bins, fewer marginals) or a larger ε"
        if c["suggested_max_cells"]
        else "choose a larger ε or fewer marginals"
    )
    return (
        f"Expected noise per cell (about {c['expected_noise_per_cell']:,.0f} rows) exceeds what a cell holds "
        f"(n / cells = {n:,} / {n_cells:,} ≈ {c['rows_per_cell']:,.1f} rows): the released marginals will be "
        f"mostly noise. Suggestion: {fix}."
    )


def workload_noise_warning(workload: Workload, sigma: float, n: int) -> str | None:
    """:func:`noise_warning` for a workload's largest marginal."""
    return noise_warning(sigma, n, int(workload.sizes.max()))
