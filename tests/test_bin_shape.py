"""Where a value lies in its bin: the linear density across the released bins around it (post-processing of the
released rows), hand-computed slopes, the inverse CDF's closed form, and rows that stay in their bins."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.domain import Attribute, _shaped


@pytest.mark.parametrize("s", [-2.0, -1.0, -0.25, 0.0, 0.5, 2.0])
def test_the_draws_follow_the_linear_density_exactly(s):
    r = (np.arange(100_000) + 0.5) / 100_000  # the uniform's quantiles: the transform gives the density's
    u = _shaped(r, np.full(r.shape, s))
    assert np.all((u >= 0) & (u < 1)) and np.all(np.diff(u) >= 0)
    assert u + s * (u * u - u) / 2 == pytest.approx(r, abs=1e-12)  # F(u) = r, F(u) = u + s (u² - u) / 2
    assert u.mean() == pytest.approx(0.5 + s / 12, abs=1e-6)  # E[u] under 1 + s (u - 1/2)
    assert _shaped(r, None) is r


def _counts_attribute(edges, counts, **kw):
    a = Attribute("x", "numeric", edges=tuple(float(e) for e in edges), source="dp", **kw)
    codes = np.repeat(np.arange(len(counts)), counts)
    return a, codes


def test_slopes_are_the_density_between_the_neighbours_middles_relative_to_the_bins_own():
    # Densities 3, 2, 1 rows a unit over [0, 10), [10, 20), [20, 30): a gradient of -0.1 a unit everywhere.
    a, codes = _counts_attribute([0, 10, 20, 30], [30, 20, 10])
    assert a._bin_slopes(codes) == pytest.approx([-0.1 * 10 / 3, -0.1 * 10 / 2, -0.1 * 10 / 1])
    flat, codes = _counts_attribute([0, 10, 20, 30], [20, 20, 20])
    assert flat._bin_slopes(codes) == pytest.approx([0, 0, 0])
    steep, codes = _counts_attribute([0, 1, 2, 3], [100, 5, 0])  # a bin on a cliff: -10, held at -2 (density ≥ 0)
    assert steep._bin_slopes(codes)[1] == -2.0
    empty, codes = _counts_attribute([0, 10, 20, 30], [30, 0, 10])  # an empty bin leans nothing, is a neighbour
    assert empty._bin_slopes(codes) == pytest.approx([(0 - 3) / 10 * 10 / 3, 0, (1 - 0) / 10 * 10 / 1])


def test_a_point_bin_neither_leans_nor_is_a_neighbour():
    a = Attribute("x", "numeric", edges=(0.0, 0.5, 10.0, 20.0), integer=True, points=(0.0,), source="dp")
    codes = np.repeat(np.arange(3), [500, 40, 20])
    s = a._bin_slopes(codes)
    gradient = (2 - 40 / 9.5) / (15 - 5.25)  # rows a unit: 40 over [0.5, 10), 20 over [10, 20); middles 5.25, 15
    assert s[0] == 0 and s[1] == pytest.approx(gradient * 9.5 / (40 / 9.5)) and s[2] == pytest.approx(gradient * 10 / 2)


def test_a_heavy_tails_rows_lean_to_the_lower_edge_and_stay_in_their_bins():
    """Log-spaced bins over amounts whose density falls (rows per bin 400, 300, 200, 100 over bins doubling in
    width): every decoded value re-encodes to its bin, the widest bin's values lie mostly in its lower half, and
    the decoded mean lies below the uniform decode's."""
    a, codes = _counts_attribute([8, 16, 32, 64, 128], [400, 300, 200, 100])
    rng = np.random.default_rng(0)
    vals = a.decode(codes, "values", rng, count_noise=0.0).to_numpy(dtype=float)
    again, _ = a.encode(pd.Series(vals))
    assert np.array_equal(again, codes)
    top = vals[codes == 3]
    assert np.mean(top < 96) > 0.5 + 3 * 0.5 / np.sqrt(top.size)  # the lower half holds more (3σ of a coin)
    uniform = a.decode(codes, "uniform", np.random.default_rng(0)).to_numpy(dtype=float)
    assert vals.mean() < uniform.mean()
    assert np.array_equal(a.encode(pd.Series(uniform))[0], codes)


def test_whole_numbers_and_dates_lean_too_and_stay_in_their_bins():
    w, codes = _counts_attribute([0, 10, 20, 30], [300, 200, 100], integer=True)
    vals = w.decode(codes, "values", np.random.default_rng(1), count_noise=0.0).to_numpy(dtype=float)
    assert np.array_equal(w.encode(pd.Series(vals))[0], codes)
    assert np.mean(vals[codes == 1]) < 14.5  # uniform over 10..19 has mean 14.5; the slope is -0.5
    d = Attribute("d", "datetime", lower="2020-01-01", upper="2020-12-31", bins=3, source="dp")
    codes = np.repeat(np.arange(3), [600, 300, 100])
    text = d.decode(codes, "values", np.random.default_rng(2), count_noise=0.0)
    assert np.array_equal(d.encode(text)[0], codes)


def test_noisy_counts_shrink_the_slope_and_without_a_noise_figure_values_are_uniform():
    """sd(s) from the two counts a slope is read from: the slope -0.5 of 20 / 10 rows a unit is shrunk by
    1 - (sd/s)², to nothing where the noise could make it; a mechanism that gives no σ leaves the draws uniform."""
    a, codes = _counts_attribute([0, 10, 20, 30], [300, 200, 100])
    n = len(codes)
    for sigma in (0.0, 5.0, 20.0, 60.0):
        sd = sigma * np.hypot(1 / 10, 1 / 10) / 20 * 10 / 20  # the middle bin: neighbours 20 units apart
        expected = -0.5 * max(0.0, 1 - (sd / 0.5) ** 2)
        assert a._bin_slopes(codes, sigma / n)[1] == pytest.approx(expected)
    assert a._bin_slopes(codes, 150.0 / n)[1] == 0  # sd 0.53 > |s| = 0.5: noise could make it all
    rng_draws = np.random.default_rng(3).random(n)
    uniform = a.decode(codes, "values", np.random.default_rng(3)).to_numpy(dtype=float)
    lo = np.array([0.0, 10.0, 20.0])[codes]
    assert uniform == pytest.approx(lo + 10 * rng_draws, abs=0.1)  # no σ: uniform, as before (to 0.1)


def test_a_narrow_neighbour_gives_no_slope():
    """A far date's own first and last day beside the year between them (1900-01-01 written for "no date"): the
    day bins' densities are the code's, so the year's rows do not lean toward them."""
    a = Attribute("x", "numeric", edges=(0.0, 1.0, 365.0, 366.0, 1000.0), source="dp")
    codes = np.repeat(np.arange(4), [40, 300, 2, 500])
    assert a._bin_slopes(codes)[1] == 0


def test_the_default_release_lets_values_lean_by_its_one_way_sigma(tmp_path):
    """The default mechanism measures every one-way marginal and says with what σ: the release passes σ / n to the
    decoding; the values it writes re-encode to the released rows' bins."""
    from dpcore.api import Synthesizer

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"amount": np.round(rng.lognormal(4, 1, 3000), 2), "group": rng.choice(list("abc"), 3000)})
    synth = Synthesizer(epsilon=3.0, seed=1, workspace=tmp_path / "ws").fit(df)
    rel = synth.release
    sigma = rel.public["sigma_one_way_counts"]
    assert rel.count_noise == pytest.approx(np.asarray(sigma) / rel.n)
    table = rel.decoded_rows()
    codes, _ = rel.workload.domain["amount"].encode(table["amount"])
    assert np.array_equal(codes, rel.rows[:, rel.workload.domain.index("amount")])
