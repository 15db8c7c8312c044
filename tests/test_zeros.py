"""Exact zeros of an amount (a clinic's costs: 60% exactly 0, the rest spread from 50 to 14,000) with nothing
declared.  A real-numbered column's bins next to zero ([2^-10, 2^-9), ...) hold nothing, so a range grown one
adjacent bin at a time never crossed from the zeros to the rest: the costs came back in [0, 1], and where the
range was found the zeros came back as draws over [0, 102).  Now the range reaches past that gap when a run of
bins beyond it stands out (:func:`dpcore.discovery._beyond_zero`), and 0 gets a bin of its own when the bin
around zero cleared its threshold.  Both read nothing but the bounds histogram's noisy counts.  Fixed seeds;
tolerances from the distributions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, norm

from dpcore.discovery import (
    BIN_FALSE_POSITIVE,
    POWER_RANGE,
    WINDOWS,
    bin_index,
    bound_bins,
    histogram_bounds,
)
from dpcore.domain import Attribute
from dpcore.privacy.samplers import Randomness
from dpcore.tabular import _real_point_edges, prepare_table

SIGMA = 58.8  # the bounds histogram's σ for a 14-column table of 2,000 rows at ε = 1 (the generated clinic table)


def _costs(n: int, seed: int = 7) -> np.ndarray:
    """60% exactly 0, the rest log-normal around 400 (cents kept)."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < 0.6, 0.0, np.round(np.exp(rng.normal(6.0, 1.0, n)), 2))


def test_a_zero_inflated_real_amount_keeps_its_range_past_the_empty_bins_near_zero():
    """No bin past zero clears the threshold T ≈ 4.3σ alone (the fullest holds ~190 rows), but the run of 4 bins
    128-2047 holds ~600, over its union-bound threshold z·σ·2.  That run alone clears it with probability
    p = Φ((m - z·2σ) / 2σ) -- a lower bound on keeping the range; the count kept of 200 draws is at least the
    binomial's 0.1% quantile.  (Before: the range reached past zero in none of them.)  The zeros' bin is read as
    held every time (~1,200 rows, 20σ)."""
    costs = _costs(2000)
    counts = np.bincount(bin_index(costs, "numeric", False), minlength=len(bound_bins("numeric", False)[0]))
    zero = (len(counts) - 1) // 2
    side = len(counts) - zero - 1
    z = float(norm.isf(BIN_FALSE_POSITIVE / (side * len(WINDOWS))))
    m = float(np.convolve(counts[zero + 1 :], np.ones(4), mode="valid").max())
    p = float(norm.cdf((m - z * 2 * SIGMA) / (2 * SIGMA)))
    results = [histogram_bounds(costs, "numeric", False, 1 / SIGMA**2, Randomness(s)) for s in range(200)]
    kept = sum(hi >= 1024.0 for _, hi, _ in results)
    assert kept >= binom.ppf(0.001, 200, p), (kept, p)
    assert all(rep["zero_held"] for *_, rep in results)


def test_a_column_of_zeros_stays_at_zero():
    """Only zeros: a run past zero stands out on noise alone with probability at most BIN_FALSE_POSITIVE a side
    (a union bound over the runs), so at most the binomial's 99.9% quantile of 400 draws leave [0, 0]."""
    zeros = np.zeros(1200)
    moved = sum(histogram_bounds(zeros, "numeric", False, 1 / SIGMA**2, Randomness(s))[:2] != (0.0, 0.0)
                for s in range(1000, 1400))  # fmt: skip
    assert moved <= binom.ppf(0.999, 400, 2 * BIN_FALSE_POSITIVE), moved


def test_the_bounds_and_the_zero_flag_read_the_rows_only_through_the_bin_counts():
    """The privacy argument: what the bounds histogram releases (the bounds and whether the zeros are held) is a
    function of the noisy bin counts alone.  Two columns with the same counts per bin -- exact zeros against values
    under 2^-10, costs moved within their power-of-two bins -- give the same release under the same noise; and a
    neighbouring column (one cost of 0 turned into 5,000) changes two counts by one each: L2 distance sqrt(2),
    the sensitivity the histogram's σ is set for."""
    costs = _costs(2000)
    other = costs.copy()
    other[costs == 0] = 2.0 ** (POWER_RANGE[0] - 1)
    rng = np.random.default_rng(0)
    pos = costs > 0
    low = 2.0 ** np.floor(np.log2(costs[pos]))
    other[pos] = low + rng.random(int(pos.sum())) * low * 0.999  # same power of two, another value
    assert np.array_equal(bin_index(costs, "numeric", False), bin_index(other, "numeric", False))
    for s in range(30):
        a = histogram_bounds(costs, "numeric", False, 1 / SIGMA**2, Randomness(s))
        b = histogram_bounds(other, "numeric", False, 1 / SIGMA**2, Randomness(s))
        assert a[:2] == b[:2] and a[2]["zero_held"] == b[2]["zero_held"]
    neighbour = costs.copy()
    neighbour[np.flatnonzero(costs == 0)[0]] = 5000.0
    size = len(bound_bins("numeric", False)[0])
    diff = np.bincount(bin_index(costs, "numeric", False), minlength=size) - np.bincount(
        bin_index(neighbour, "numeric", False), minlength=size
    )
    assert math.sqrt(float((diff**2).sum())) == pytest.approx(math.sqrt(2))


def test_zero_gets_a_bin_of_its_own_that_decodes_to_zero():
    """0 in [-2^lo, 2^lo): the values the bounds histogram counted as zeros, and only those, decode to 0; other
    released points keep their bins, and 0 is not added where the bounds exclude it, it was released already, or a
    released point's bin would overlap it."""
    tiny = 2.0 ** POWER_RANGE[0]
    edges, points = _real_point_edges(0.0, 1024.0, 10, (), True)
    assert points == (0.0,) and edges[:3] == (0.0, tiny, 102.4) and edges[-1] == 1024.0
    attr = Attribute("cost", "numeric", edges=edges, points=points)
    codes, _ = attr.encode(pd.Series([0.0, tiny / 2, 0.01, 500.0]))
    assert codes.tolist()[:3] == [0, 0, 1]
    assert attr.decode(np.array([0, 0, 0]), "values", np.random.default_rng(0)).tolist() == [0.0, 0.0, 0.0]
    assert attr.labels()[0] == "0"
    edges, points = _real_point_edges(-50.0, 50.0, 10, (17.5,), True)  # 0 inside, a point elsewhere: both
    assert points == (0.0, 17.5) and -tiny in edges and tiny in edges
    assert _real_point_edges(16.0, 64.0, 10, (), True) == ((), ())  # 0 outside the bounds
    assert _real_point_edges(0.0, 10.0, 10, (0.0,), True)[1] == (0.0,)  # released already: [0, 0.5)
    assert _real_point_edges(0.0, 10.0, 10, (0.001,), True)[1] == (0.001,)  # [0.0005, 0.0015) would overlap


def test_a_small_clinic_table_gets_its_zero_costs_and_counts_back():
    """2,000 rows at ε = 1, roles confirmed, nothing else declared: the costs keep a range past 1,000 and their
    zeros (0 a point, about 60% of the released costs exactly 0: the one-way noise and the fit's error are a few
    percent of the rows), and a visit count that is 0 for 55% of the patients over 0-40 gets a bin of its own
    (before: 0-3 drawn uniformly)."""
    from dpcore.release import release_table

    rng = np.random.default_rng(3)
    n = 2000
    df = pd.DataFrame({
        "cost": _costs(n, 3),
        "visits": np.where(rng.random(n) < 0.55, 0, rng.integers(1, 41, n)),
        "sex": rng.choice(["F", "M"], n),
    })  # fmt: skip
    roles = {"cost": "real", "visits": "integer", "sex": "categorical"}
    prep = prepare_table(df, epsilon=1.0, delta=1 / n**2, noise=Randomness(1), ledger=None, roles=roles)
    cost, visits = prep.domain["cost"], prep.domain["visits"]
    assert 0.0 in cost.points and cost.edges[-1] >= 1024.0, (cost.points, cost.edges)
    assert visits.edges[:2] == (0.0, 0.5), visits.edges  # the bin of 0 alone
    rel, _ = release_table(df, "auto", 1.0, seed=3, ledger=None, roles=roles)
    rows = rel.decoded_rows()
    assert float((rows["cost"] == 0.0).mean()) == pytest.approx(float((df["cost"] == 0).mean()), abs=0.06)
    assert float((rows["visits"] == 0).mean()) == pytest.approx(0.55, abs=0.06)


def test_a_counts_zeros_beside_a_thin_one_are_reached():
    """A count of 768 rows like Pima's pregnancies (14% zeros, 18% ones, the rest 2-17) at σ = 27.3: [1, 1] holds
    ~135 rows, under the threshold (~117 + noise) about a quarter of the time, and is then joined as the bulk's thin
    edge; the zeros next to it were not reached by that one step, and the lower bound came back 1 (every zero
    clipped to 1) in 14% of draws on Pima's own column.  Now the bin around zero joins when it reads ADJACENT_Z·σ,
    as a thin edge does: it holds ~111 rows (4σ), so the lower bound is 0 but in ~1% of draws.  400 draws: at most
    binom.ppf(0.999, 400, 0.02) = 18 come back with lower bound 1 (the old rule: 26 on this table)."""
    rng = np.random.default_rng(11)
    p = np.array([0.145, 0.176, 0.134, 0.098, 0.088, 0.075, 0.065, 0.059, 0.049, 0.036, 0.031, 0.014, 0.012, 0.013,
                  0.003, 0.001, 0.0005, 0.0005])  # fmt: skip
    x = rng.choice(np.arange(18), size=768, p=p / p.sum()).astype(float)
    ones = sum(histogram_bounds(x, "numeric", True, 1 / 27.3**2, Randomness(s))[0] == 1.0 for s in range(400))
    assert ones <= binom.ppf(0.999, 400, 0.02), ones
