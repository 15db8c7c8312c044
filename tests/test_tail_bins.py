"""A thin tail past a number's located range: the power of two beyond the range's end away from zero, whose noisy
count reaches TAIL_Z·σ but not the ADJACENT_Z·σ that joins it to the range, gets one bin of its own instead of its
rows being clipped into the end bin (CRP above 16 mg/L on 4.8% of 2,500 rows came back as 16).  The reading of the
noisy counts, the edges, and a release end to end (fixed seeds; tolerances from the noise)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.discovery import ADJACENT_Z, TAIL_Z, _tail_bin, bound_bins, bounds_from_noisy
from dpcore.evaluate import evaluate
from dpcore.tabular import _far_number_edges

LOWER, UPPER = bound_bins("numeric", False)
ZERO = (len(LOWER) - 1) // 2
SIGMA = 50.0


def _noisy(counts: dict[float, float]) -> np.ndarray:
    noisy = np.zeros(len(LOWER))
    for value, rows in counts.items():
        noisy[int(np.flatnonzero((LOWER <= value) & (value < UPPER))[0])] = rows
    return noisy


def _at(value: float) -> int:
    return int(np.flatnonzero((LOWER <= value) & (value < UPPER))[0])


BULK = {0.7: 400, 1.5: 600, 3: 500, 6: 400, 12: 300}  # [0.5, 16): every bin over the threshold (~4.3σ)


def test_a_tail_reaching_tail_z_sigma_past_the_end_away_from_zero_is_read_and_not_under_it():
    tail = _noisy({**BULK, 20: TAIL_Z * SIGMA + 1})
    assert _tail_bin(tail, SIGMA, _at(0.7), _at(12), ZERO) == _at(20)
    assert _tail_bin(_noisy({**BULK, 20: TAIL_Z * SIGMA - 1}), SIGMA, _at(0.7), _at(12), ZERO) is None
    negative = _noisy({-0.7: 400, -1.5: 600, -3: 500, -6: TAIL_Z * SIGMA + 1})  # below a negative range: not read
    assert _tail_bin(negative, SIGMA, _at(-3), _at(-0.7), ZERO) is None
    lo, hi, report = bounds_from_noisy(tail, SIGMA, "numeric", False, tail=3_000)  # σ = 1.7% of the rows
    assert (lo, hi) == (0.5, 32.0) and report["bulk"] == (0.5, 16.0) and report["tail"] == [(16.0, 32.0)]
    assert bounds_from_noisy(tail, SIGMA, "numeric", False)[:2] == (0.5, 16.0)  # the first look reads no tail
    small = bounds_from_noisy(tail, SIGMA, "numeric", False, tail=1_000)  # σ = 5% of the rows: a false tail is
    assert small[:2] == (0.5, 16.0) and "tail" not in small[2]  # not fitted empty again there, so none is read
    joined = _noisy({**BULK, 20: ADJACENT_Z * SIGMA + 1})  # thick enough to join: the range's own, as before
    lo, hi, report = bounds_from_noisy(joined, SIGMA, "numeric", False, tail=3_000)
    assert hi >= 32.0 and report.get("bulk", (0, hi))[1] == hi or report["tail"][0][0] == 32.0
    coded = _noisy({**BULK, 20: TAIL_Z * SIGMA + 1, 999: 2_000})  # a far code found: no tail beside it
    assert "tail" not in bounds_from_noisy(coded, SIGMA, "numeric", False, tail=3_000)[2]


def test_the_tail_takes_one_of_the_columns_bins_and_the_rest_stay_over_the_range():
    edges = _far_number_edges(0.5, 32.0, (0.5, 16.0), [(16.0, 32.0)], 10, False, None, None, False)
    assert edges is not None and len(edges) == 11 and edges[-2:] == (16.0, 32.0)
    assert np.allclose(np.diff(edges[:-1]), 15.5 / 9)  # nine equal bins over [0.5, 16]
    whole = _far_number_edges(0.0, 127.0, (0.0, 63.0), [(64.0, 127.0)], 10, True, None, None, False)
    assert whole is not None and len(whole) == 11 and whole[-2:] == (64.0, 127.0)  # the last bin closed at 127
    below = _far_number_edges(-32.0, -0.5, (-16.0, -0.5), [(-32.0, -16.0)], 10, False, None, None, False)
    assert below is not None and below[:2] == (-32.0, -16.0) and len(below) == 11


def test_a_release_keeps_a_thin_tail_instead_of_clipping_it():
    """2,500 rows of a lab panel: CRP 95% between 0.6 and 16, 4% in [16, 32), 1% in [32, 64).  At ε = 1 [16, 32)
    joins the range or is itself read as a tail (its 100 rows under ADJACENT_Z·σ of the bounds' noise, over TAIL_Z·σ),
    or [32, 64)'s 25 rows are -- the column keeps the tail as a bin of its own (nine bins below it), and the release
    holds values past the range, where those rows were clipped to its bound.  Six fixed draws of the discovery;
    the release of one that found the tail."""
    from dpcore.api import Synthesizer
    from dpcore.privacy.samplers import Randomness
    from dpcore.tabular import prepare_table

    rng = np.random.default_rng(7)
    n = 2500
    body = np.exp(rng.uniform(np.log(0.6), np.log(15.9), int(n * 0.95)))
    tail = rng.uniform(16.5, 31.5, int(n * 0.04))
    far = rng.uniform(33, 60, n - len(body) - len(tail))
    df = pd.DataFrame({"crp": np.round(rng.permutation(np.concatenate([body, tail, far])), 1)})
    df["ward"] = rng.choice(["a", "b", "c"], n)
    for j in range(10):  # a lab panel: with this many columns no bounds refinement runs at ε = 1
        df[f"test{j}"] = np.round(rng.normal(50 + 10 * j, 8, n), 1)
    from dpcore.release import _prepare_mechanism, auto_params, base_mechanism, joint_conversion, resolve_budget
    from dpcore.tabular import schema_plan

    budget, _, _ = resolve_budget(1.0, None, n)  # what a default release at ε = 1 gives its schema
    mechanism, _ = _prepare_mechanism(base_mechanism("auto"), auto_params({}), None, None)
    joint = joint_conversion(mechanism, budget, False)
    share = schema_plan(df.columns, n, epsilon=1.0, delta=budget.delta, schema=None, roles=None, joint=joint).share
    kept = []
    for seed in range(6):
        p = prepare_table(
            df, epsilon=1.0, delta=budget.delta, noise=Randomness(seed), schema_share=share, joint=joint,
            fitted_share=True,
        )  # fmt: skip
        attr, how = p.domain["crp"], p.discovery_report["bounds"]["crp"]
        if how.get("tail"):
            assert "refined" not in how  # a tail is read only where no refinement follows
            (lo, hi), top = how["tail"][0], how["bulk"][1]
            assert (lo, hi) in ((16.0, 32.0), (32.0, 64.0)) and (top, attr.upper) == (lo, hi)
            assert attr.edges[-2:] == (lo, hi)
            assert len(attr.edges) == 11  # nine bins over the range, one for the tail
            kept.append(seed)
            assert any("got one bin of their own instead of being clipped" in w and f"crp ({lo:g} to {hi:g})" in w
                       for w in p.warnings)  # fmt: skip
    assert kept  # the tail is read and kept in some draws
    rel = Synthesizer(epsilon=1.0, seed=kept[0], workspace=None).fit(df)
    row = next(c for c in evaluate(df, rel.sample(), ml=False, n_triples=0)["summaries"]["columns"])
    top = rel.release.workload.domain["crp"].upper
    if top > 16.0:  # the release's own discovery found a tail too: the rows past 16 come back, not clipped
        assert row["synthetic"]["max"] > 16 and (df["crp"] > top).mean() <= 0.011  # 1% above 32 at most


def test_the_tails_bin_is_read_as_possibly_empty_by_the_fit():
    """The tail's bin is the top power of two by itself: the end chain the fit empties where the release's own
    measurement finds it under 2σ (a false tail, read on noise, comes back empty, as clipped rows did)."""
    from dpcore.domain import Attribute
    from dpcore.mechanisms.decouple import outer_chains

    dp = (("kind", "dp"), ("lower", "dp"), ("upper", "dp"))
    edges = _far_number_edges(0.5, 32.0, (0.5, 16.0), [(16.0, 32.0)], 10, False, None, None, False)
    real = Attribute("crp", "numeric", edges=edges, source="dp", provenance=dp)
    assert outer_chains(real)[0] == (9,)
    whole_edges = _far_number_edges(0.0, 127.0, (0.0, 63.0), [(64.0, 127.0)], 10, True, None, None, False)
    whole = Attribute("visits", "numeric", edges=whole_edges, integer=True, source="dp", provenance=dp)
    assert outer_chains(whole)[0] == (9,)
    plain = Attribute("x", "numeric", edges=tuple(np.linspace(0.5, 32.0, 11)), source="dp", provenance=dp)
    assert 9 in outer_chains(plain)[0] and 0 not in outer_chains(plain)[0]  # as before: bins wholly above 16
