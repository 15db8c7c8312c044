"""Implicit query classes: all conjunctions of width ≤ k, described by k, never enumerated.

A marginal workload lists its queries; OracleQuery ([NRW19] §IV) and PrivLearn
([HRS12] §5) instead answer a whole *class* that is far too large to list.  The
class here is

    C_k = { q_S , ¬q_S : S a set of 1..k one-hot literals (a, v), at most one per attribute }

with ``q_S(x) = 1[x_a = v for every (a, v) in S]`` and ``¬q = 1 - q``.

Choices, and why:

* **At most one literal per attribute.**  A conjunction fixing two different values
  of one attribute is empty on every one-hot record (its answer is 0 whatever the
  data), and repeating a literal changes nothing; both are excluded, so every member
  is a distinct, non-trivial query.  Every cell of a marginal of width ≤ k is a
  member, so a marginal workload is a subset of the class.
* **No empty conjunction.**  Width 0 is the constant-1 query: its answer is public.
* **Negations included** (``negations=True``, the default), as the mechanisms work
  on Q ∪ ¬Q (ALGORITHMS.md "Common ground").  |¬q(D) - ¬q(D̂)| = |q(D) - q(D̂)|, so
  error estimates need only the positive half.

Size: the number of positive members of width w is the elementary symmetric
polynomial e_w(|X_1|, ..., |X_p|) (choose w attributes, one value each); the class
size is (1 or 2) × sum_{w=1..k} e_w, an exact Python integer.

Uniform sampling draws the width w with probability e_w / sum e_w, then an attribute
set S of size w with probability prod_{a in S} |X_a| / e_w (sequential inclusion:
attribute i is taken with probability |X_i| e_{r-1}(X_{i+1..p}) / e_r(X_{i..p}) when r
are still needed), then one value per chosen attribute uniformly, then the negation
flag with probability 1/2.  The product of these is 1 / |C_k| for every member.

Answers are vectorised: queries are grouped by attribute set, and each group is
answered from one mixed-radix cell index of the rows and one ``np.bincount``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .domain import Domain
from .errors import WorkloadError
from .workload import weighted_rows

#: Above this many cells an attribute set is answered by sorting the rows' cell
#: indices instead of a dense bincount.
DENSE_CELL_LIMIT = 10_000_000


@dataclass(frozen=True)
class Conjunctions:
    """A batch of N conjunctions in canonical form.

    ``attrs[i]`` lists the attributes of conjunction i in increasing order, padded
    with -1 to the batch width; ``values[i]`` the matching values (-1 where padded);
    ``negated[i]`` turns q into ¬q.
    """

    attrs: np.ndarray
    values: np.ndarray
    negated: np.ndarray

    def __post_init__(self) -> None:
        attrs = np.atleast_2d(np.asarray(self.attrs, dtype=np.int64))
        values = np.atleast_2d(np.asarray(self.values, dtype=np.int64))
        neg = np.asarray(self.negated, dtype=bool).reshape(-1)
        if attrs.shape != values.shape or attrs.shape[0] != neg.shape[0]:
            raise WorkloadError(
                f"Conjunctions need matching shapes: attrs {attrs.shape}, values {values.shape}, negated {neg.shape}."
            )
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "negated", neg)

    def __len__(self) -> int:
        return int(self.attrs.shape[0])

    @property
    def widths(self) -> np.ndarray:
        return (self.attrs >= 0).sum(axis=1)

    def positive(self) -> Conjunctions:
        """The same conjunctions without their negation flags."""
        return Conjunctions(self.attrs, self.values, np.zeros(len(self), bool))

    def take(self, idx) -> Conjunctions:
        return Conjunctions(self.attrs[idx], self.values[idx], self.negated[idx])

    def literals(self, i: int) -> list[tuple[int, int]]:
        return [(int(a), int(v)) for a, v in zip(self.attrs[i], self.values[i]) if a >= 0]

    def label(self, i: int, domain: Domain) -> str:
        body = " ∧ ".join(f"{domain.names[a]}={domain[a].labels()[v]}" for a, v in self.literals(i))
        return f"¬({body})" if self.negated[i] else body

    def keys(self) -> np.ndarray:
        """One row of int64 per conjunction (attrs, values, negated): equal rows ⇔ equal queries."""
        return np.concatenate([self.attrs, self.values, self.negated[:, None].astype(np.int64)], axis=1)

    @classmethod
    def from_literals(
        cls, items: Sequence[Sequence[tuple[int, int]]], negated: Sequence[bool] | None = None
    ) -> Conjunctions:
        """Build from lists of (attribute, value) pairs, in any order (sorted here)."""
        items = [sorted((int(a), int(v)) for a, v in lits) for lits in items]
        width = max((len(lits) for lits in items), default=1) or 1
        attrs = np.full((len(items), width), -1, dtype=np.int64)
        values = np.full((len(items), width), -1, dtype=np.int64)
        for i, lits in enumerate(items):
            for j, (a, v) in enumerate(lits):
                attrs[i, j], values[i, j] = a, v
        neg = np.zeros(len(items), bool) if negated is None else np.asarray(negated, bool)
        return cls(attrs, values, neg)

    @classmethod
    def from_workload(cls, workload) -> Conjunctions:
        """Every cell of a marginal workload, in the workload's flat query order."""
        width = max(len(m) for m in workload.marginals)
        attrs = np.full((workload.n_queries, width), -1, dtype=np.int64)
        values = np.full((workload.n_queries, width), -1, dtype=np.int64)
        for j, m in enumerate(workload.marginals):
            lo, hi = workload.offsets[j], workload.offsets[j + 1]
            cells = np.stack(np.unravel_index(np.arange(hi - lo), workload.marginal_shape(j)), axis=1)
            order = np.argsort(m)
            attrs[lo:hi, : len(m)] = np.asarray(m)[order]
            values[lo:hi, : len(m)] = cells[:, order]
        return cls(attrs, values, np.zeros(workload.n_queries, bool))


def as_conjunctions(queries) -> Conjunctions:
    """Accept a :class:`Conjunctions` batch or a list of literal lists."""
    if isinstance(queries, Conjunctions):
        return queries
    try:
        return Conjunctions.from_literals(queries)
    except (TypeError, ValueError):
        raise WorkloadError("Give queries as a Conjunctions batch or as lists of (attribute, value) pairs.") from None


class ConjunctionClass:
    """All conjunctions of width 1..k over a domain's one-hot literals (and their negations).

    A *description* (domain, k), never a list: size is exact, members are checked,
    sampled uniformly and answered on demand.
    """

    def __init__(self, domain: Domain, k: int, negations: bool = True) -> None:
        p = len(domain)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise WorkloadError(f"The conjunction width k must be a whole number ≥ 1 (got {k!r}).")
        if k > p:
            raise WorkloadError(
                f"k = {k} exceeds the number of attributes ({p}): a conjunction has at most one "
                f"literal per attribute. Choose k ≤ {p}."
            )
        self.domain = domain
        self.k = int(k)
        self.negations = bool(negations)
        self.sizes = [int(s) for s in domain.shape]
        # E[i][r] = e_r(sizes[i:]) exactly (elementary symmetric polynomials, Python ints).
        E = [[0] * (self.k + 1) for _ in range(p + 1)]
        E[p][0] = 1
        for i in range(p - 1, -1, -1):
            E[i][0] = 1
            for r in range(1, self.k + 1):
                E[i][r] = E[i + 1][r] + self.sizes[i] * E[i + 1][r - 1]
        self._E = E
        self.count_by_width = [E[0][w] for w in range(self.k + 1)]  # index 0 unused (the empty conjunction)
        self.n_positive = sum(self.count_by_width[1:])
        # Sampling tables (exact ratios rounded once to float).
        self._width_p = np.array([float(Fraction(E[0][w], self.n_positive)) for w in range(1, self.k + 1)])
        self._include_p = np.zeros((p, self.k + 1))
        for i in range(p):
            for r in range(1, self.k + 1):
                if E[i][r]:
                    self._include_p[i, r] = float(Fraction(self.sizes[i] * E[i + 1][r - 1], E[i][r]))

    # ------------------------------------------------------------ size
    @property
    def size(self) -> int:
        """Exact number of members (an arbitrary-precision integer)."""
        return self.n_positive * (2 if self.negations else 1)

    @property
    def offsets(self) -> np.ndarray:
        """Start of each attribute's block in the one-hot vector."""
        return np.concatenate([[0], np.cumsum(self.sizes)])[:-1].astype(np.int64)

    def describe(self) -> dict:
        return {
            "kind": "conjunctions",
            "max_width": self.k,
            "negations": self.negations,
            "size": self.size,
            "size_log10": round(math.log10(self.size), 2),
            "count_by_width": {w: self.count_by_width[w] for w in range(1, self.k + 1)},
        }

    def to_dict(self) -> dict:
        return {"kind": "conjunctions", "max_width": self.k, "negations": self.negations, "size": str(self.size)}

    def __repr__(self) -> str:
        return f"ConjunctionClass(k={self.k}, negations={self.negations}, size={self.size:,})"

    # ------------------------------------------------------------ membership
    def membership(self, q: Conjunctions) -> np.ndarray:
        """Boolean per conjunction: is it a member of this class?"""
        a, v = q.attrs, q.values
        present = a >= 0
        w = present.sum(axis=1)
        ok = (w >= 1) & (w <= self.k)
        # padding only at the end, attributes strictly increasing (distinct), values in range
        ok &= np.all(present[:, 1:] <= present[:, :-1], axis=1) if a.shape[1] > 1 else True
        if a.shape[1] > 1:
            inc = (a[:, 1:] > a[:, :-1]) | ~present[:, 1:]
            ok &= np.all(inc, axis=1)
        p = len(self.sizes)
        ok &= np.all(~present | (a < p), axis=1)
        sizes = np.asarray(self.sizes + [1])[np.where(present, np.minimum(a, p), p)]
        ok &= np.all(~present | ((v >= 0) & (v < sizes)), axis=1)
        ok &= np.all(present | (v == -1), axis=1)
        if not self.negations:
            ok &= ~q.negated
        return ok

    def check(self, q: Conjunctions) -> None:
        """Raise :class:`WorkloadError` naming the first query outside the class."""
        bad = np.flatnonzero(~self.membership(q))
        if bad.size:
            i = int(bad[0])
            lits = [(int(a), int(v)) for a, v in zip(q.attrs[i], q.values[i]) if a >= 0 or v >= 0]
            raise WorkloadError(
                f"{bad.size:,} of {len(q):,} queries are outside the class of conjunctions of width 1..{self.k} "
                f"with at most one literal per attribute{'' if self.negations else ' (no negations)'}; "
                f"the first is query {i} with literals {lits}{' (negated)' if q.negated[i] else ''}. "
                f"Ask only for such conjunctions (valid attribute indices 0..{len(self.sizes) - 1} and values "
                f"within each attribute's range), or use a class with a larger k."
            )

    # ------------------------------------------------------------ sampling
    def sample(self, n: int, rng: np.random.Generator, negations: bool | None = None) -> Conjunctions:
        """``n`` i.i.d. members, exactly uniform over the class (see the module docstring).

        ``negations=False`` samples uniformly over the positive half only.
        """
        n = int(n)
        neg_on = self.negations if negations is None else (bool(negations) and self.negations)
        p = len(self.sizes)
        widths = rng.choice(np.arange(1, self.k + 1), size=n, p=self._width_p / self._width_p.sum())
        attrs = np.full((n, self.k), -1, dtype=np.int64)
        values = np.full((n, self.k), -1, dtype=np.int64)
        remaining = widths.copy()
        filled = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        for i in range(p):
            take = rng.random(n) < self._include_p[i, remaining]
            if not take.any():
                continue
            r = rows[take]
            attrs[r, filled[take]] = i
            values[r, filled[take]] = rng.integers(0, self.sizes[i], size=r.size)
            filled[take] += 1
            remaining[take] -= 1
        if np.any(remaining != 0):  # cannot happen: P(include) = 1 when all remaining attributes are needed
            raise WorkloadError("Internal error in the conjunction sampler.")
        negated = rng.random(n) < 0.5 if neg_on else np.zeros(n, bool)
        return Conjunctions(attrs, values, negated)

    # ------------------------------------------------------------ evaluation
    def answers(
        self, codes: np.ndarray, q: Conjunctions, weights: np.ndarray | None = None, check: bool = True
    ) -> np.ndarray:
        """Normalised answers ``q(D)`` of every conjunction on rows ``codes`` (optionally weighted)."""
        if check:
            self.check(q)
        return conjunction_answers(codes, self.sizes, q, weights)

    def satisfies(self, codes: np.ndarray, q: Conjunctions) -> np.ndarray:
        """``(rows, queries)`` boolean matrix q_j(x_i): for small batches (oracles, tests)."""
        self.check(q)
        codes = np.atleast_2d(np.asarray(codes, dtype=np.int64))
        out = np.ones((codes.shape[0], len(q)), dtype=bool)
        for j in range(q.attrs.shape[1]):
            a, v = q.attrs[:, j], q.values[:, j]
            present = a >= 0
            col = codes[:, np.where(present, a, 0)]
            out &= (col == v[None, :]) | ~present[None, :]
        return out ^ q.negated[None, :]

    def enumerate(self, limit: int = 200_000) -> Conjunctions:
        """Every member, for tiny domains (tests and cross-checks only)."""
        if self.size > limit:
            raise WorkloadError(
                f"The class has {self.size:,} members; enumeration is only for tiny classes (≤ {limit:,})."
            )
        items = []
        for w in range(1, self.k + 1):
            for S in itertools.combinations(range(len(self.sizes)), w):
                for vals in itertools.product(*[range(self.sizes[a]) for a in S]):
                    items.append(list(zip(S, vals)))
        pos = Conjunctions.from_literals(items)
        pos = Conjunctions(_pad(pos.attrs, self.k), _pad(pos.values, self.k), pos.negated)
        if not self.negations:
            return pos
        return Conjunctions(
            np.concatenate([pos.attrs, pos.attrs]),
            np.concatenate([pos.values, pos.values]),
            np.concatenate([np.zeros(len(pos), bool), np.ones(len(pos), bool)]),
        )

    # ------------------------------------------------------------ one-hot view
    def literal_indices(self, q: Conjunctions) -> np.ndarray:
        """One-hot index of each literal (-1 where padded): the query's bit vector in [HRS12] §5."""
        off = self.offsets
        return np.where(q.attrs >= 0, off[np.maximum(q.attrs, 0)] + q.values, -1)


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    if a.shape[1] >= width:
        return a
    return np.concatenate([a, np.full((a.shape[0], width - a.shape[1]), -1, dtype=a.dtype)], axis=1)


def conjunction_answers(
    codes: np.ndarray, sizes: Sequence[int], q: Conjunctions, weights: np.ndarray | None = None
) -> np.ndarray:
    """Answers of conjunctions grouped by attribute set: one bincount per distinct set."""
    codes, weights, total = weighted_rows(codes, weights)
    out = np.empty(len(q), dtype=np.float64)
    if len(q) == 0:
        return out
    sets, inverse = np.unique(q.attrs, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(sets) + 1))
    for g, S in enumerate(sets):
        members = order[bounds[g] : bounds[g + 1]]
        attrs = [int(a) for a in S if a >= 0]
        radix = [int(sizes[a]) for a in attrs]
        cells = math.prod(radix)
        row_idx = np.zeros(codes.shape[0], dtype=np.int64)
        q_idx = np.zeros(members.size, dtype=np.int64)
        for j, (a, r) in enumerate(zip(attrs, radix)):
            row_idx *= r
            row_idx += codes[:, a]
            q_idx *= r
            q_idx += q.values[members, j]
        if cells <= DENSE_CELL_LIMIT:
            counts = np.bincount(row_idx, weights=weights, minlength=cells)
            out[members] = counts[q_idx]
        else:  # sparse: sort the rows' cells (cells can exceed memory as a dense table)
            uniq, inv = np.unique(row_idx, return_inverse=True)
            counts = np.bincount(inv.reshape(-1), weights=weights, minlength=uniq.size)
            pos = np.minimum(np.searchsorted(uniq, q_idx), uniq.size - 1)
            out[members] = np.where(uniq[pos] == q_idx, counts[pos], 0.0)
    out /= total
    return np.where(q.negated, 1.0 - out, out)


class RowsAnswerer:
    """Synthetic rows seen as a synopsis: ``answer(q)`` evaluates the conjunctions on the rows.

    Lets :func:`sampled_class_error` measure mechanisms with output "rows" (OracleQuery, FEM...)."""

    def __init__(self, rows: np.ndarray, domain: Domain, weights: np.ndarray | None = None) -> None:
        self.rows = np.asarray(rows)
        self.sizes = list(domain.shape)
        self.weights = weights

    def answer(self, queries) -> np.ndarray:
        return conjunction_answers(self.rows, self.sizes, as_conjunctions(queries), self.weights)


def sampled_class_error(
    dataset, synopsis, k: int, n_samples: int, rng: np.random.Generator, negations: bool = False
) -> dict:
    """Error of a synopsis (anything with ``answer(conjunctions)``) on ``n_samples`` uniform members.

    INTERNAL: computed on the private data, not differentially private.  Negations
    are off by default because |¬q(D) - ¬q(D̂)| = |q(D) - q(D̂)|.  The sample size
    bounds the estimate: with probability ≥ 0.95, at most a fraction 3/n_samples of the
    class has error above the sampled maximum ("rule of three").
    """
    cls = ConjunctionClass(dataset.domain, k)
    q = cls.sample(n_samples, rng, negations=negations)
    true = cls.answers(dataset.codes, q, check=False)
    est = np.asarray(synopsis.answer(q), dtype=float)
    err = np.abs(true - est)
    return {
        "class": f"all conjunctions of width ≤ {k}",
        "class_size": str(cls.size),
        "n_samples": int(n_samples),
        "max_error": float(err.max()),
        "mean_error": float(err.mean()),
        "p95_error": float(np.quantile(err, 0.95)),
        "note": "estimated on uniformly sampled class members; computed on the private data (not private)",
    }
