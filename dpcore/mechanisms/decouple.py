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

Inside groups.  A marginal measured with an attribute's values grouped (the projection's resolution plan, the
adaptive projection's cell cap) counts the group a row's value falls in, not the value.  Two rows that share a's
group in every such marginal, and agree on the other attributes' cells in every marginal measuring a value by
value, may exchange their values of a without changing any measured cell; a second shuffle per sweep does exactly
that, so which value of its group a row holds carries no association the measurements do not support.

Privacy.  Reads only the released rows and the public list of measured marginals; ``rng`` protects nothing.
Post-processing: the guarantee is unchanged.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..discovery import ZERO_REACH
from ..domain import whole_span
from .base import Param

#: Sweeps over the attributes (each sweep shuffles every attribute once within its blanket groups).
SWEEPS = 4


#: The mechanisms' switch (projection, projection_adaptive).
DECOUPLE_PARAM = Param(
    "decouple",
    "bool",
    True,
    "After the fit, shuffle each attribute's values among the rows that agree on every attribute it was measured "
    "with (and, where it is measured in groups of values, inside those groups): every measured marginal stays "
    "exactly as fitted, and pairs that were never measured carry no association the measurements do not support "
    "(post-processing; off keeps the fitted records' joint values).",
    advanced=True,
)


#: A missing or '(other)' cell whose one-way measurement is under this many σ is fitted as empty: noise alone
#: passes it with probability Φ(-2) ≈ 2.3%, and a column whose cells are all present is common.
STRUCTURAL_Z = 2.0

#: A value a public vocabulary added to a discovered category set (the rare ``Y`` of a flag whose ``N`` was released)
#: is fitted as empty under this many σ: it is nearly always real (a kept column is not constant, and a flag's other
#: cells are its partner), so the test is lighter -- a flag's 9% of ``Y`` measured at σ = 3.2% of the rows was
#: emptied in 4 of 10 releases at 2σ (about 21% of draws), about 4% at 1σ -- while a word the column does not have
#: (a four-point scale given the five-point scale's ``Neutral``) keeps about σ·φ(1) ≈ 0.24σ of the rows on average.
WORD_Z = 1.0

#: A number's end bins are fitted as empty only where the one-way measurement's σ is at most this share of the
#: rows: with more noise a real thin value cannot be told from an empty one (anes96's 944 rows at ε = 1, σ ≈ 4%:
#: a 1-7 scale lost its 3.6% of 7s; at a 5% limit its 2-way TVD rose 0.231 -> 0.236), so the ends are left as
#: measured.  At 2% a 2,500-row survey at ε = 1 (σ ≈ 2.3%) came back with 1-2% of each 1-5 answer at 7 and
#: trust ratings of 11-13; at 3% the tables measured with σ between 2% and 3% (that survey, a 2,000-row clinic
#: table, 1-5 / 1-7 scales at ε = 0.5, fair at ε = 0.3) all came back closer (docs/benchmarks.md).
OUTER_SIGMA_SHARE = 0.03

#: Where σ is over OUTER_SIGMA_SHARE, the end bins of at least this many numbers that share one schema (the same
#: bins, the same chains: a battery of items on one scale) are read together, on the sum of their shares.
BATTERY_MIN = 3

#: The mechanisms' switch (projection, projection_adaptive).
EMPTY_SPECIAL_PARAM = Param(
    "empty_special",
    "bool",
    True,
    "Fit cells that noise alone would fill as empty (post-processing): a column's missing or '(other)' cell, or a "
    f"number's values between two of its released frequent values, measured under {STRUCTURAL_Z:g}σ, a value a "
    f"public vocabulary added to its discovered categories measured under {WORD_Z:g}σ, and a discovered number's "
    "end values past where its power-of-two bounds vouch for rows while together under 1σ (where σ is at most "
    f"{OUTER_SIGMA_SHARE:.0%} of the rows; above it, over {BATTERY_MIN} or more columns whose end values are the "
    "same, under the σ of their sum) -- else a column that has none gets a few percent of rows there (a 1-5 scale "
    "located as [1, 7] coming back with 6s and 7s).",
    advanced=True,
)


class Gap(int):
    """The code of a bin between two of a number's points (:func:`gap_codes`): tested against STRUCTURAL_Z like a
    missing or '(other)' cell, and named as such in the run's note."""


class Word(int):
    """The code of a value a public vocabulary added to a discovered category set (:mod:`dpcore.vocabularies`):
    tested against WORD_Z instead of STRUCTURAL_Z."""


def special_codes(domain) -> dict[int, tuple[int, ...]]:
    """Each attribute's missing and '(other)' codes, and the values a public vocabulary added to a discovered
    category set (:class:`Word`: not released from the data, so possibly absent) -- public: the schema's."""
    out = {}
    for a, attr in enumerate(domain.attributes):
        added = tuple(Word(attr.values.index(v)) for v in attr.vocabulary)
        codes = added + tuple(c for c in (attr.other_code, attr.n_regular if attr.missing else None) if c is not None)
        if codes:
            out[a] = codes
    return out


def gap_codes(attr) -> tuple[Gap, ...]:
    """A number's bins that lie between two of its points (released frequent values, :attr:`Attribute.points`)
    and hold none: they hold the values not released, each under the release's threshold, so a column whose
    values are a few round numbers (discounts of 0, 5, 10 and 20%) has nothing there -- and noise left 5% of a
    3,000-row table's discounts at 1-4, 6-9 and 11-19.  Like a missing or '(other)' cell, each is fitted as empty
    where its one-way measurement is under STRUCTURAL_Z·σ; a bin holding a real share of rows (the body of a
    continuous column between two frequent values) stays.  The bins beyond the outermost points are left to
    :func:`outer_chains`.  Public: the schema."""
    if attr.kind != "numeric" or len(attr.points) < 2:
        return ()
    edges = np.asarray(attr.edges, dtype=float)
    held = {int(i) for i in np.clip(np.searchsorted(edges, attr.points, side="right") - 1, 0, len(edges) - 2)}
    return tuple(Gap(i) for i in range(min(held) + 1, max(held)) if i not in held)


def _power_of_two(x: float) -> bool:
    return x > 0 and math.isfinite(x) and math.frexp(x)[0] == 0.5


def _power_above(x: float) -> float:
    """The least power of two at or above x > 0: the located bound a refined one was trimmed from is at least it."""
    return 2.0 ** math.ceil(math.log2(x))


def _whole_span(edges, i: int) -> tuple[int, int]:
    """The first and last whole number of bin i of a whole-number attribute (its last bin is closed)."""
    return whole_span(edges[i], edges[i + 1], i == len(edges) - 2)


def outer_chains(attr) -> tuple[tuple[int, ...], ...]:
    """A discovered number's end bins that its bounds do not vouch for, as chains from the outside in.

    Discovered bounds are the outer edges of power-of-two bins (:func:`dpcore.discovery.histogram_bounds`): an upper
    bound of 7 says some rows lie in [4, 7], not that any reach 7. The bins that lie wholly past the start of the
    top power-of-two range (above 4 here: 5, 6, 7), and wholly before the end of the bottom one (a lower bound of 4
    from [4, 7]: 4, 5, 6), may hold nothing but noise; so may the bins of a range that reached down to 0 from a bulk
    far above it (ages 18-90 located as [16, 127] and taken to [0, 127]: the bins wholly below 127 / ZERO_REACH,
    where the lowest bin the reach can have started from ends; when the upper bound was refined in -- ages
    18-95 come back as [0, 79] -- from the least power of two above it, which the located bound was at least).
    A bin that is the whole top power of two by itself -- a thin tail the bounds gave a bin of its own
    (:func:`dpcore.discovery._tail_bin`: its noisy count reached only TAIL_Z·σ) -- may hold nothing but noise too.
    Otherwise only bounds with ``"dp"`` provenance that are a power of two (the upper one, for whole numbers, one
    less) qualify: a declared bound is the user's, and a refined one was already moved in to where the rows are.
    At least one bin is left out of every chain. Public: the released schema only."""
    if attr.kind != "numeric" or len(attr.edges) < 3:
        return ()
    edges, k = attr.edges, len(attr.edges) - 1
    sources = dict(attr.provenance)
    top: list[int] = []
    bottom: list[int] = []
    if attr.integer:
        last = _whole_span(edges, k - 1)[1]
        if sources.get("upper") == "dp" and last >= 3 and _power_of_two(last + 1.0):
            start = (last + 1) // 2
            top = [i for i in range(k - 1, -1, -1) if _whole_span(edges, i)[0] > start]
            if not top and _whole_span(edges, k - 1)[0] == start:  # a thin tail's own bin (the top power of two)
                top = [k - 1]
        first = _whole_span(edges, 0)[0]
        if sources.get("lower") == "dp" and first >= 2 and _power_of_two(float(first)):
            end = 2 * first - 1
            bottom = [i for i in range(k) if _whole_span(edges, i)[1] < end]
        elif sources.get("lower") == "dp" and first == 0 and last >= 1:  # reached down to 0
            bottom = [i for i in range(k) if _whole_span(edges, i)[1] < _power_above(last + 1.0) / ZERO_REACH]
    else:
        upper, lower = float(edges[-1]), float(edges[0])
        if sources.get("upper") == "dp" and _power_of_two(upper):
            top = [i for i in range(k - 1, -1, -1) if edges[i] > upper / 2.0]
            if not top and edges[k - 1] == upper / 2.0:  # a thin tail's own bin (the top power of two)
                top = [k - 1]
        if sources.get("lower") == "dp" and _power_of_two(lower):
            bottom = [i for i in range(k) if edges[i + 1] < 2.0 * lower]
        elif sources.get("lower") == "dp" and lower == 0.0 and upper > 0.0:  # reached down to 0
            bottom = [i for i in range(k) if edges[i + 1] <= _power_above(upper) / ZERO_REACH]
    top = _prefix(top)
    bottom = _prefix([i for i in bottom if i not in top])
    while (top or bottom) and len(top) + len(bottom) >= k:  # leave a bin no chain reaches
        (bottom if len(bottom) >= len(top) else top).pop()
    return tuple(tuple(c) for c in (top, bottom) if c)


def _prefix(chain: list[int]) -> list[int]:
    """The leading run of consecutive codes (from the outside in) of ``chain``."""
    out: list[int] = []
    for i in chain:
        if out and abs(i - out[-1]) != 1:
            break
        out.append(i)
    return out


class EmptyChains(dict):
    """:func:`empty_chains`' attribute -> links, with ``pools``: the end chains read together
    (:func:`battery_pools`)."""

    pools: tuple[tuple[tuple[int, tuple[int, ...]], ...], ...] = ()


def battery_pools(domain) -> tuple[tuple[tuple[int, tuple[int, ...]], ...], ...]:
    """Groups of at least BATTERY_MIN numbers' end chains (:func:`outer_chains`) over the same bins -- the same
    values, whatever else each column's bins hold: the items of a battery on one scale, discovered alike (twenty
    1-5 answers located as [1, 7], a few of them as [2, 7]: their 5, 6 and 7 are one chain).  Each member is
    (attribute, its chain's codes).  Public: the schema."""
    groups: dict[tuple, list[tuple[int, tuple[int, ...]]]] = {}
    for a, attr in enumerate(domain.attributes):
        for chain in outer_chains(attr):
            bins = tuple((float(attr.edges[i]), float(attr.edges[i + 1]), i == len(attr.edges) - 2) for i in chain)
            groups.setdefault((bool(attr.integer), bins), []).append((a, chain))
    return tuple(tuple(g) for g in groups.values() if len(g) >= BATTERY_MIN)


def empty_chains(domain) -> dict[int, tuple]:
    """Every attribute's codes that noise alone may fill, for :func:`chain_zeros`: its missing and '(other)' codes
    (bare codes, :func:`special_codes`), a number's bins between its points (bare codes, :func:`gap_codes`) and a
    discovered number's end bins (tuples, from the outside in: :func:`outer_chains`).  Public: the schema."""
    out = EmptyChains()
    special = special_codes(domain)
    for a, attr in enumerate(domain.attributes):
        links = tuple(special.get(a, ())) + gap_codes(attr) + outer_chains(attr)
        if links:
            out[a] = links
    out.pools = battery_pools(domain)
    return out


def chain_zeros(chains: dict, measure) -> dict[int, set[int]]:
    """attribute -> the codes fitted as empty.  ``measure(attribute, code)`` gives the code's noisy share of the
    rows and that share's σ, or None where it is not measured in a cell of its own.  A bare code (a missing or
    '(other)' cell) is emptied when its share is under STRUCTURAL_Z·σ, a value a vocabulary added (:class:`Word`)
    under WORD_Z·σ.  Along a chain (a number's end bins, from the outside in; only where σ ≤ OUTER_SIGMA_SHARE)
    codes are emptied while their shares together (each at least 0) stay under one σ: two empty values past a
    scale's end go about 66% of the time, a real value holding 2σ of the rows about 16% of the time and one holding
    3σ about 2%.  Where σ is over OUTER_SIGMA_SHARE, a battery's chains (``chains.pools``, :func:`battery_pools`)
    are read on the sum of its m items' shares, whose σ is sqrt(m) times one item's while a value the items hold
    adds up m times: a 1,500-row survey's twenty 1-5 answers measured at σ = 5.4% of the rows, each left with 6s
    and 7s on 3-19% of its rows, read their empty 6 and 7 together at σ_sum = 24% against their 5s' 220%.
    Post-processing of the noisy answers and their public σ."""
    out: dict[int, set[int]] = {}
    for pool in getattr(chains, "pools", ()):
        _read_chain(pool, measure, out, pooled=True)
    for a, links in chains.items():
        for link in links:
            if isinstance(link, tuple):
                _read_chain(((a, link),), measure, out, pooled=False)
                continue
            got = measure(a, int(link))
            if got is not None and got[0] < (WORD_Z if isinstance(link, Word) else STRUCTURAL_Z) * got[1]:
                out.setdefault(a, set()).add(int(link))
    return out


def _read_chain(members, measure, out: dict[int, set[int]], pooled: bool) -> None:
    """An end chain read from the outside in (:func:`chain_zeros`) on the sum of its members' shares ((attribute,
    codes) each: one column's chain, or a battery's, :func:`battery_pools`): each step's codes are emptied while
    the positive parts of the summed shares stay together under the sum's σ.  One column is read where its σ is at
    most OUTER_SIGMA_SHARE, a battery where every item's is over it (else each is read alone).  The items' noises
    are independent (one-way measurements; on a chosen workload nearly: marginals holding two items share a cell
    of many)."""
    total = 0.0
    for step in range(len(members[0][1])):
        got = [measure(a, int(chain[step])) for a, chain in members]
        if any(g is None for g in got):
            break
        noisy = min(g[1] for g in got) > OUTER_SIGMA_SHARE
        if noisy != pooled:
            break
        total += max(sum(g[0] for g in got), 0.0)  # a negative share (noise) must not make room for a real bin
        if total >= math.sqrt(sum(g[1] ** 2 for g in got)):
            break
        for a, chain in members:
            out.setdefault(a, set()).add(int(chain[step]))


def own_group(value_map: np.ndarray, code: int) -> int | None:
    """The group a code is measured in when it is the only code there, else None."""
    group = int(value_map[code])
    return group if int(np.count_nonzero(value_map == group)) == 1 else None


def empty_notes(zeros: dict, domain, filled: int = 0) -> list[str]:
    """The run's note on the cells fitted as empty."""
    if not zeros:
        return []
    parts, ends, words, gaps = [], False, False, False
    in_pools = {a for pool in battery_pools(domain) for a, _ in pool}
    pooled = any(a in in_pools for a in zeros)
    for a, codes in sorted(zeros.items()):
        attr = domain.attributes[a]
        names = attr.labels()
        between = set(gap_codes(attr))
        words = words or any(c < len(attr.values) and attr.values[c] in attr.vocabulary for c in codes)
        gaps = gaps or bool(between & set(codes))
        special = {attr.other_code, attr.n_regular if attr.missing else None} | between
        ends = ends or (attr.kind != "categorical" and any(c not in special for c in codes))
        labels = ["missing" if attr.missing and c == attr.n_regular else names[c] for c in sorted(codes)]
        parts.append(f"{attr.name}: {', '.join(labels)}")
    kinds = [
        text
        for flag, text in (
            (gaps, "a number's values between the values released as frequent"),
            (
                ends,
                "a discovered number's values past where its power-of-two bounds vouch for rows: together under 1σ"
                + (", or over columns sharing one scale, each too noisy alone, under their sum's σ" if pooled else ""),
            ),
            (words, f"a value a public vocabulary added: under {WORD_Z:g}σ"),
        )
        if flag
    ]
    return [
        f"Cells measured under {STRUCTURAL_Z:g}σ"
        + (f" ({'; '.join(kinds)})" if kinds else "")
        + " were fitted as empty (post-processing), so noise does not fill them with rows the data may not have: "
        + "; ".join(parts)
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
    return _keys(codes, [(int(c), None, int(sizes[c])) for c in columns])


def _keys(codes: np.ndarray, columns) -> np.ndarray:
    """One integer per row naming its cells under ``columns``: (attribute, value map -- None for the values
    themselves -- and the number of cells it has)."""
    n = codes.shape[0]
    if not columns:
        return np.zeros(n, dtype=np.int64)

    def cell(b: int, f: np.ndarray | None) -> np.ndarray:
        return codes[:, b].astype(np.int64) if f is None else f[codes[:, b]]

    key = np.zeros(n, dtype=np.int64)
    bound = 1  # the key's values lie in [0, bound)
    for b, f, r in columns:
        if bound * int(r) >= 2**62:  # renumber the combinations seen so far (at most n of them) before it overflows
            seen, inverse = np.unique(key, return_inverse=True)
            key, bound = inverse.astype(np.int64).ravel(), int(seen.size)
        key = key * int(r) + cell(b, f)
        bound *= int(r)
    return key


def shuffle_within(values: np.ndarray, key: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``values`` permuted uniformly at random among the rows of each key group.  The rows sorted by key (stable),
    then by a uniform draw per row inside each group: one integer sort and one sort of group numbers plus the draw
    in [0, 1) (group numbers below n < 2^31 leave the draw over 20 bits of a double) -- the permutation a sort on
    (key, draw) together gives, from the same draws, ~2x faster on a million rows than ``np.lexsort``."""
    out = values.copy()
    if key.size < 2:
        return out
    draw = rng.random(key.size)
    by_key = np.argsort(key, kind="stable")
    ranked = key[by_key]
    group = np.empty(key.size, dtype=np.float64)
    group[0] = 0.0
    np.cumsum(ranked[1:] != ranked[:-1], out=group[1:])
    inside = np.argsort(group + draw[by_key])  # the same groups, each in the order of its rows' draws
    out[by_key] = values[by_key[inside]]
    return out


def whole_map(value_map: np.ndarray) -> bool:
    """Whether a marginal's map of an attribute's values keeps every value in a cell of its own."""
    return int(value_map.max()) + 1 == len(value_map)


def within_group_columns(marginals, value_maps, a: int) -> list[tuple[int, np.ndarray]] | None:
    """What two rows must share to exchange attribute a's values *within its groups* and keep every measured cell:
    a's group in each marginal that measures a in groups, and, in each marginal that measures a value by value, the
    other attributes' cells there -- as (attribute, value map) pairs, without repeats.  None when no marginal groups
    a (the blanket move then covers it).  Public: the measured marginals and their value maps."""
    grouped = [f for m, maps in zip(marginals, value_maps) for b, f in zip(m, maps) if b == a and not whole_map(f)]
    if not grouped:
        return None
    out: list[tuple[int, np.ndarray]] = []
    seen: set[tuple[int, bytes]] = set()

    def add(b: int, f: np.ndarray) -> None:
        tag = (int(b), np.asarray(f, dtype=np.int64).tobytes())
        if tag not in seen:
            seen.add(tag)
            out.append((int(b), np.asarray(f, dtype=np.int64)))

    for f in grouped:
        add(a, f)
    for m, maps in zip(marginals, value_maps):
        if a in m and whole_map(maps[m.index(a)]):
            for b, f in zip(m, maps):
                if b != a:
                    add(b, f)
    return out


def decouple_rows(
    codes: np.ndarray,
    sizes,
    measured,
    rng: np.random.Generator,
    sweeps: int = SWEEPS,
    value_maps=None,
    deadline: float | None = None,
) -> tuple[np.ndarray, dict]:
    """Rows whose every measured marginal is unchanged and whose attributes are shuffled within their blanket
    groups (module docstring).  ``value_maps`` (per measured marginal, each attribute's map of values to the cells
    it was measured in, as :class:`~dpcore.mechanisms.projection.MeasuredMarginals` holds them) adds a second move
    for each attribute some marginal measures in groups: its values are shuffled among the rows that share its
    groups and, in the marginals that measure it value by value, the other attributes' cells
    (:func:`within_group_columns`) -- so inside a group, where no grouped cell can see it, a value carries no
    association the value-by-value measurements do not support (without it the fit's few records put, at ε = 0.1
    on coded Adult, a group's US incomes on one age and the rest on another).  ``deadline`` (a
    ``time.perf_counter()`` value: the run's time limit) stops the sweeps after the first one that ends past it --
    one sweep does most of the work (with one-way marginals only it makes the columns independent), and on a
    million rows of 30 attributes each sweep takes ~35 CPU-s.  Returns (rows, public summary)."""
    codes = np.array(codes, copy=True)
    n, p = codes.shape
    if n < 2 or p < 2:
        return codes, {"sweeps": 0, "free_attributes": []}
    blanket = blankets(p, measured)
    within = [within_group_columns(measured, value_maps, a) if value_maps is not None else None for a in range(p)]
    within_keys = [None if w is None else [(b, f, int(f.max()) + 1) for b, f in w] for w in within]
    moved = np.zeros(p, dtype=np.int64)
    done = 0
    for _ in range(int(sweeps)):
        if done and deadline is not None and time.perf_counter() > deadline:
            break
        done += 1
        for a in rng.permutation(p):
            before = codes[:, a].copy()
            codes[:, a] = shuffle_within(before, group_keys(codes, blanket[a], sizes), rng)
            if within_keys[a] is not None:
                codes[:, a] = shuffle_within(codes[:, a], _keys(codes, within_keys[a]), rng)
            moved[a] += int(np.count_nonzero(codes[:, a] != before))
    summary = {
        "sweeps": done,
        "sweeps_planned": int(sweeps),
        "free_attributes": [int(a) for a in range(p) if blanket[a].size == 0],
        "mean_blanket": float(np.mean([b.size for b in blanket])),
        "moved_share": float(moved.sum() / max(1, n * p * done)),
        "within_groups": [int(a) for a in range(p) if within[a] is not None],
    }
    return codes, summary


def decouple_notes(summary: dict | None) -> list[str]:
    """The run's note on the decoupling (public: from the workload and the released rows)."""
    if not summary or not summary.get("sweeps"):
        return []
    free = len(summary["free_attributes"])
    within = len(summary.get("within_groups") or [])
    return [
        f"Rows decoupled ({summary['sweeps']} sweep{'' if summary['sweeps'] == 1 else 's'}"
        + (
            f" of {summary['sweeps_planned']}: the run's time limit was reached"
            if summary.get("sweeps_planned", summary["sweeps"]) > summary["sweeps"]
            else ""
        )
        + "): each attribute's values shuffled among rows that agree on the "
        f"attributes it was measured with ({summary['mean_blanket']:.1f} on average"
        + (f"; {free} measured alone, so independent of the rest" if free else "")
        + ")"
        + (
            f"; the {within} attribute(s) measured in groups of values also shuffled inside their groups"
            if within
            else ""
        )
        + ". Every measured marginal is unchanged; unmeasured pairs carry no invented association "
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
