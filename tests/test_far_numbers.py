"""A code written for "no value" on many rows, far beyond a column's numbers (999 beside scores of 0-99, 99 beside
a 1-5 scale, -999 beside positive scores): the bounds held both, and the bins spread over the whole range -- ten
log-spaced over [16, 1023] left the scores four bins, and equal bins over [-1023, 127] left them two.  The bounds'
noisy histogram now reports the held bins beyond an empty power of two apart from the bulk, and the column's bins
go over the bulk with one bin for each gap and far bin.  The grouping of held bins; the edges; releases end to end
(fixed seeds; tolerances from the release's noise)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpcore.cli import main
from dpcore.discovery import _far_numbers, _held_kept, bin_threshold, bound_bins
from dpcore.tabular import _far_number_edges, far_codes

LOWER, UPPER = bound_bins("numeric", True)
ZERO = (len(LOWER) - 1) // 2
SIGMA = 20.0


def _bin(value: float) -> int:
    return int(np.flatnonzero((LOWER <= value) & (value <= UPPER))[0])


def _far(counts: dict[float, float]) -> dict:
    """The report of noiseless bin counts ({a value in the bin: rows}) as bounds_from_noisy reads them."""
    noisy = np.zeros(len(LOWER))
    for value, rows in counts.items():
        noisy[_bin(value)] = rows
    held = np.flatnonzero(noisy >= bin_threshold(SIGMA, len(noisy)))
    report: dict = {}
    _far_numbers(noisy, SIGMA, _held_kept(noisy, SIGMA, held, LOWER, UPPER, "numeric"), LOWER, UPPER, report)
    return report


def test_held_bins_beyond_an_empty_power_of_two_are_reported_apart_from_the_bulk():
    scores = {20: 600, 40: 1_500, 80: 1_400}  # [16, 31], [32, 63], [64, 127]
    report = _far({**scores, 999: 400})
    assert report["bulk"] == (16.0, 127.0) and report["far"] == [(512.0, 1023.0)]
    assert _far({**scores, 999: 2_500})["bulk"] == (16.0, 127.0)  # the code on most rows is still the far bin
    assert _far({**scores, -999: 400})["far"] == [(-1023.0, -512.0)]  # the other sign, beyond in magnitude
    assert _far({1: 500, 2: 900, 5: 700, 99: 300})["far"] == [(64.0, 127.0)]  # 99 beside a 1-5 scale
    # the other sign at the numbers' magnitude: a code (-99 beside 16-127; -9 and -8 beside a 1-5 scale)
    assert _far({**scores, -99: 400}) == {"bulk": (16.0, 127.0), "far": [(-127.0, -64.0)]}
    assert _far({1: 500, 2: 900, 5: 700, -9: 300, -1: 300})["far"] == [(-15.0, -8.0)]  # -1 is no further out
    # no far bin: a code next to the numbers (9 beside 1-5), the zeros of a zero-inflated amount (nearer zero than
    # the bulk), a count whose [1, 1] is thin but there, both halves of a column centred on zero, overdrafts spread
    # over powers of two below zero beside balances
    assert "far" not in _far({1: 500, 2: 900, 5: 700, 9: 300})
    assert "far" not in _far({0: 3_000, 2_000: 400, 4_000: 500, 6_000: 300})
    assert "far" not in _far({0: 1_800, 1: 2.0 * SIGMA, 2: 1_700, 5: 1_500})
    assert "far" not in _far({-40: 900, -20: 500, -10: 300, -5: 200, 5: 200, 10: 300, 20: 500, 40: 900})
    balances = {0: 3_000, 100: 2_000, 200: 3_000, 500: 4_000, 1_000: 3_000, 1_500: 2_000, 3_000: 1_500}
    assert "far" not in _far({**balances, -100: 200, -200: 300, -500: 400, -1_000: 300})
    weak = {**scores, 999: bin_threshold(SIGMA, len(LOWER)) + 1}  # beyond 2^3 of the bulk: the strict threshold
    assert "far" not in _far(weak)


def test_the_bins_go_over_the_bulk_with_one_for_each_gap_and_far_bin():
    edges = _far_number_edges(16.0, 1023.0, (16.0, 127.0), [(512.0, 1023.0)], 10, True, None, None, False)
    assert edges is not None and edges[-3:] == (128.0, 512.0, 1023.0)  # the bulk, the gap, the far bin
    assert len(edges) - 3 >= 5 and all(np.diff(edges[:-2]) <= 20)  # at least half the bins, over the bulk
    low = _far_number_edges(-1023.0, 127.0, (16.0, 127.0), [(-1023.0, -512.0)], 10, True, None, None, False)
    assert low is not None and low[:4] == (-1023.0, -511.0, 0.0, 16.0)  # the sign kept apart in the gap
    real = _far_number_edges(0.5, 1024.0, (0.5, 128.0), [(512.0, 1024.0)], 10, False, None, None, False)
    assert real is not None and real[-3:] == (128.0, 512.0, 1024.0) and real[0] == 0.5
    wide = _far_number_edges(64.0, 1.6e7, (64.0, 262143.0), [(8388608.0, 1.6e7)], 10, True, 64.0, None, False)
    assert wide is not None and wide[1] / wide[0] > 1.5  # a bulk over 2^12 is still binned in log
    assert _far_number_edges(16.0, 127.0, (16.0, 127.0), [(512.0, 1023.0)], 10, True, None, None, False) is None
    few = _far_number_edges(0.0, 1023.0, (0.0, 127.0), [(512.0, 1023.0)], 2, True, None, 16.0, False)
    assert few is not None and 128.0 in few  # too few bins for a reach: the bulk still ends where the gap begins


def _scores(n: int, seed: int, code: int, share: float) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = np.clip(np.round(rng.normal(45, 14, n)), 18, 90).astype(int)
    score = np.clip(np.round(30 + 0.5 * age + rng.normal(0, 12, n)), 0, 99).astype(int)
    score[rng.random(n) < share] = code
    return pd.DataFrame({"age": age, "sex": rng.choice(["F", "M"], n), "score": score})


@pytest.mark.parametrize("code", [999, -999, -99])
def test_a_release_keeps_the_scores_in_their_bins_and_the_code_as_written(tmp_path, code):
    """4,000 rows at ε = 1, nothing declared, the code on 10% of the scores: the release gives about 10% of its rows
    the code and spreads the others as the real scores are (on ten-point bins; before: TVD 0.17 for 999, 0.40 for
    -999, the scores in two to five bins).  Tolerances: a one-way cell's noise at this budget is a few tens of
    rows (σ ≈ 50 on 4,000): 4 points of the 10%, and 0.10 of TVD where the real scores' sampling and the fit
    measured 0.04-0.06."""
    df = _scores(4_000, seed=0, code=code, share=0.10)
    path = tmp_path / "scores.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    argv = ["release", "--data", str(path), "--epsilon", "1", "--seed", "1", "--out", str(out)]
    assert main([*argv, "--workspace", str(tmp_path / "ws")]) == 0
    released = pd.to_numeric(pd.read_csv(out)["score"], errors="coerce").dropna()
    assert abs((released == code).mean() - 0.10) < 0.04
    real, back = df["score"][df["score"] != code], released[released != code]
    assert (back.between(0, 127)).mean() > 0.97  # nothing drawn in the gap between the scores and the code
    bins = np.arange(0, 140, 10)
    tvd = 0.5 * np.abs(np.histogram(real, bins)[0] / len(real) - np.histogram(back, bins)[0] / len(back)).sum()
    assert tvd < 0.10


def test_a_far_bin_gets_its_all_nines_code_as_a_point_unless_a_released_value_is_there():
    assert far_codes([(512.0, 1023.0)], 16.0, 1023.0, ()) == (999.0,)
    assert far_codes([(-127.0, -64.0), (8388608.0, 16777215.0)], -127.0, 1.6e7, ()) == (-99.0, 9999999.0)
    assert far_codes([(512.0, 1023.0)], 16.0, 1023.0, (777.0,)) == ()  # a released value holds the bin
    assert far_codes([(128.0, 255.0), (1024.0, 2047.0)], 0.0, 2047.0, ()) == ()  # no all-nines number there
    assert far_codes([(512.0, 1023.0)], 16.0, 900.0, ()) == ()  # outside the bounds


def test_a_code_not_released_as_a_frequent_value_comes_back_as_written(tmp_path, capsys):
    """Scores of 0-99 with 999 on 10% of 4,000 rows beside three categories, ε = 1, seed 1: the far bin holds no
    released frequent value there (the roles' noise kept 999 under the points' threshold), so 999 gets a point by
    the public rule and about 10% of the released scores are 999 (before: drawn over 512-1023).  The user is told
    the code was added, not read from the data."""
    rng = np.random.default_rng(0)
    df = _scores(4_000, seed=0, code=999, share=0.10)[["age", "score"]]
    for j in range(3):
        df[f"g{j}"] = rng.choice(list("abc"), len(df))
    path = tmp_path / "scores.csv"
    df.to_csv(path, index=False)
    out, card = tmp_path / "out.csv", tmp_path / "card.json"
    argv = ["release", "--data", str(path), "--epsilon", "1", "--seed", "1", "--out", str(out), "--card", str(card)]
    assert main([*argv, "--workspace", str(tmp_path / "ws")]) == 0
    err = capsys.readouterr().err
    assert "got bins of their own" in err and "score: 999" in err and "not read from the data" in err
    details = json.loads(card.read_text())["data"]["schema_discovery"]["details"]
    assert details["codes"] == {"score": [999.0]} and details["bounds"]["score"]["far"] == [[512.0, 1023.0]]
    back = pd.to_numeric(pd.read_csv(out)["score"], errors="coerce").dropna()
    assert abs((back == 999).mean() - 0.10) < 0.04 and back[back != 999].between(0, 127).mean() > 0.97
