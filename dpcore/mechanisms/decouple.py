"""Decoupling released rows: no dependence the measurements do not support (post-processing).

Why.  The projection fits a few hundred to a few thousand distinct records to the noisy answers and rounds them
to rows, so a small table's n rows are copies of a few hundred records.  Every pair of attributes that was NOT
measured inherits whatever dependence those records happen to carry: on a 1,000-row table given only its one-way
marginals the rows showed a Cramér's V error of 0.39 where independent columns show 0.06 (issue 23).  The
maximum-entropy distribution consistent with the measurements (what private-pgm's estimator fits) makes each
attribute independent of the attributes it was never measured with, given those it was measured with.

What.  For an attribute a, its *blanket* B(a) is the set of other attributes that share a measured marginal with
a (public: the workload and the mechanism's choices).  Rows that agree on every attribute of B(a) may exchange
their values of a without changing ANY measured marginal: a marginal containing a holds, besides a, only
attributes of B(a), on which the two rows agree, so its cells keep their counts; a marginal without a is
untouched.  One *sweep* visits the attributes in random order and, for each, shuffles a's values uniformly among
the rows of every blanket group.  The chain's moves keep every measured marginal of the rows exactly (and with
it the fit's workload error); what they randomise is a's association with the attributes outside B(a) beyond
what flows through B(a): the rows approach a's conditional independence of the rest given B(a), the structure
of the maximum-entropy model.  With one-way marginals only, B(a) is empty and one sweep makes the columns
independent; with a chain a - b - c measured, a and c become independent given b.  Where the blankets are
fine (many measured marginals, as on a 64-marginal workload over 14 attributes), the groups are small and
little moves: nothing that was measured is lost.

Privacy.  Reads only the released rows and the public list of measured marginals; ``rng`` protects nothing.
Post-processing: the guarantee is unchanged.
"""

from __future__ import annotations

import numpy as np

from .base import Param

#: Sweeps over the attributes (each sweep shuffles every attribute once within its blanket groups).
SWEEPS = 4


#: The mechanisms' switch (projection, projection_adaptive).
DECOUPLE_PARAM = Param(
    "decouple",
    "bool",
    True,
    "After the fit, shuffle each attribute's values among the rows that agree on every attribute it was measured "
    "with: every measured marginal stays exactly as fitted, and pairs that were never measured carry no association "
    "the measurements do not support (post-processing; off keeps the fitted records' joint values).",
    advanced=True,
)


#: A missing or '(other)' cell whose one-way measurement is under this many σ is fitted as empty: noise alone
#: passes it with probability Φ(-2) ≈ 2.3%, and a column whose cells are all present is common.
STRUCTURAL_Z = 2.0

#: The mechanisms' switch (projection, projection_adaptive).
EMPTY_SPECIAL_PARAM = Param(
    "empty_special",
    "bool",
    True,
    "Fit a column's missing cell or its '(other)' cell as empty when its measured count is under "
    f"{STRUCTURAL_Z:g}σ (post-processing): noise alone would otherwise put a few percent of rows there in a column "
    "that has none.",
    advanced=True,
)


def special_codes(domain) -> dict[int, tuple[int, ...]]:
    """Each attribute's missing and '(other)' codes (public: the schema's)."""
    out = {}
    for a, attr in enumerate(domain.attributes):
        codes = tuple(c for c in (attr.other_code, attr.n_regular if attr.missing else None) if c is not None)
        if codes:
            out[a] = codes
    return out


def own_group(value_map: np.ndarray, code: int) -> int | None:
    """The group a code is measured in when it is the only code there, else None."""
    group = int(value_map[code])
    return group if int(np.count_nonzero(value_map == group)) == 1 else None


def empty_notes(zeros: dict, domain, filled: int = 0) -> list[str]:
    """The run's note on the cells fitted as empty."""
    if not zeros:
        return []
    parts = []
    for a, codes in sorted(zeros.items()):
        attr = domain.attributes[a]
        labels = ["missing" if attr.missing and c == attr.n_regular else "(other)" for c in sorted(codes)]
        parts.append(f"{attr.name}: {', '.join(labels)}")
    return [
        f"Cells measured under {STRUCTURAL_Z:g}σ were fitted as empty (post-processing), so noise does not fill "
        f"them with rows the data may not have: {'; '.join(parts)}"
        + (f" ({filled:,} cells left there by the fit took a value from a similar row)." if filled else ".")
    ]


def blankets(n_attributes: int, measured) -> list[np.ndarray]:
    """B(a) for every attribute: the other attributes sharing a measured marginal (a tuple of indices) with a."""
    sets: list[set[int]] = [set() for _ in range(n_attributes)]
    for m in measured:
        m = tuple(int(a) for a in m)
        for a in m:
            sets[a].update(b for b in m if b != a)
    return [np.array(sorted(s), dtype=np.int64) for s in sets]


def group_keys(codes: np.ndarray, columns: np.ndarray, sizes) -> np.ndarray:
    """One integer per row naming its combination of values on ``columns`` (all rows equal when there are none)."""
    n = codes.shape[0]
    if columns.size == 0:
        return np.zeros(n, dtype=np.int64)
    radix = np.asarray([int(sizes[c]) for c in columns], dtype=np.float64)
    if float(np.prod(radix)) < 2.0**62:
        key = np.zeros(n, dtype=np.int64)
        for c in columns:
            key = key * int(sizes[c]) + codes[:, c].astype(np.int64)
        return key
    return np.unique(codes[:, columns], axis=0, return_inverse=True)[1].astype(np.int64).ravel()


def shuffle_within(values: np.ndarray, key: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``values`` permuted uniformly at random among the rows of each key group."""
    by_key = np.argsort(key, kind="stable")
    shuffled = np.lexsort((rng.random(key.size), key))  # the same groups, in a random order inside each
    out = values.copy()
    out[by_key] = values[shuffled]
    return out


def decouple_rows(
    codes: np.ndarray, sizes, measured, rng: np.random.Generator, sweeps: int = SWEEPS
) -> tuple[np.ndarray, dict]:
    """Rows whose every measured marginal is unchanged and whose attributes are shuffled within their blanket
    groups (module docstring).  Returns (rows, public summary)."""
    codes = np.array(codes, copy=True)
    n, p = codes.shape
    if n < 2 or p < 2:
        return codes, {"sweeps": 0, "free_attributes": []}
    blanket = blankets(p, measured)
    moved = np.zeros(p, dtype=np.int64)
    for _ in range(int(sweeps)):
        for a in rng.permutation(p):
            key = group_keys(codes, blanket[a], sizes)
            new = shuffle_within(codes[:, a], key, rng)
            moved[a] += int(np.count_nonzero(new != codes[:, a]))
            codes[:, a] = new
    summary = {
        "sweeps": int(sweeps),
        "free_attributes": [int(a) for a in range(p) if blanket[a].size == 0],
        "mean_blanket": float(np.mean([b.size for b in blanket])),
        "moved_share": float(moved.sum() / max(1, n * p * int(sweeps))),
    }
    return codes, summary


def decouple_notes(summary: dict | None) -> list[str]:
    """The run's note on the decoupling (public: from the workload and the released rows)."""
    if not summary or not summary.get("sweeps"):
        return []
    free = len(summary["free_attributes"])
    return [
        f"Rows decoupled ({summary['sweeps']} sweeps): each attribute's values shuffled among rows that agree on the "
        f"attributes it was measured with ({summary['mean_blanket']:.1f} on average"
        + (f"; {free} measured alone, so independent of the rest" if free else "")
        + "). Every measured marginal is unchanged; unmeasured pairs carry no invented association "
        "(post-processing; turn off with decouple=false)."
    ]


def fill_empty_cells(
    codes: np.ndarray, sizes, measured, empty: dict, rng: np.random.Generator
) -> tuple[np.ndarray, int]:
    """Rows holding a code the fit was told is empty (``empty``: attribute -> codes, e.g. a column's missing cell
    measured under 2σ) take that attribute's value from a random donor row that holds none of those codes and
    agrees with it on the attribute's blanket (every attribute it was measured with; any donor when no row
    agrees), so the associations that were measured carry over.  The fit stops once its residuals are at the
    noise level, which leaves such a cell a few percent of the rows; this removes them.  Returns (rows, cells
    changed).  Post-processing of the released rows and the public list of measured marginals."""
    codes = np.array(codes, copy=True)
    n, p = codes.shape
    if n < 2 or not empty:
        return codes, 0
    blanket = blankets(p, measured)
    changed = 0
    for a, bad_codes in sorted(empty.items()):
        bad = np.isin(codes[:, a], np.fromiter(bad_codes, dtype=np.int64))
        good = np.flatnonzero(~bad)
        if not bad.any() or good.size == 0:
            continue
        key = group_keys(codes, blanket[a], sizes)
        order = good[np.argsort(key[good], kind="stable")]
        sorted_keys = key[order]
        rows = np.flatnonzero(bad)
        lo = np.searchsorted(sorted_keys, key[rows], side="left")
        hi = np.searchsorted(sorted_keys, key[rows], side="right")
        count = hi - lo
        pick = lo + np.floor(rng.random(rows.size) * np.maximum(count, 1)).astype(np.int64)
        donors = np.where(
            count > 0, order[np.minimum(pick, order.size - 1)], good[rng.integers(0, good.size, rows.size)]
        )
        codes[rows, a] = codes[donors, a]
        changed += int(rows.size)
    return codes, changed
